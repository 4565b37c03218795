// Use cases: lanes, asks, workflow follow-ups, events, roles, repo setup. Callers pass a ZzRepo
// and the authenticated Caller; core enforces every rule. It knows nothing of HTTP, MCP or CLI,
// and builds no git command line (git/ does).
export * from './access.js';
export * from './person-slots.js';
export * from './admin.js';
export * from './health.js';
export * from './ask-list.js';
export * from './ask-claimable.js';
export * from './asks.js';
export * from './closing.js';
export * from './changesets.js';
export * from './changesets-policy.js';
export * from './changesets-sandbox.js';
export * from './config-state.js';
export * from './events.js';
export * from './git-reads.js';
export * from './json-text.js';
export * from './kinds.js';
export * from './lane-state.js';
export * from './lanes.js';
export * from './paging.js';
export * from './ladder/index.js';
export * from './views.js';
export * from './zz-repo.js';
export * from './setup.js';
export * from './token-store.js';
export * from './repo-access.js';
export * from './token-admin.js';
export * from './identity.js';
