// The only layer that touches git: discovery, atomic object writes, ref compare-and-swap under
// git's lock protocol, a persistent cat-file reader and a shell-free native git runner.
// It knows nothing of lanes, asks, rungs or HTTP.
export * from './cat-file.js';
export * from './discover.js';
export * from './git-config.js';
export * from './native-git.js';
export { killRunningGit } from './git-groups.js';
export * from './maintenance.js';
export * from './objects.js';
export * from './queries.js';
export * from './reachability.js';
export * from './tree-walk.js';
export * from './ref-names.js';
export * from './ref-store.js';
export * from './repository.js';
export * from './remotes.js';
export * from './zz-transport.js';
export * from './ssh-signature.js';
export * from './sync-reads.js';
