// The composition root (`zz serve`): opens the served repositories and their token stores,
// starts search and its ref watcher, and wires the HTTP app, MCP (and later sync and the
// dashboard) together. Front ends below it never import each other; this folder knows them all.
export { startDaemon, type Daemon, type DaemonOptions } from './daemon.js';
export { readDaemonInfo, type DaemonInfo } from './daemon-file.js';
export { defaultReposFile } from './served-repos.js';
