// This machine's files: XDG and per-repository paths (the default port lives here), the one
// atomic file write, the one lock for local files, the one keyed queue and zod-validated JSON reads. A leaf: it knows
// node:fs, zod and ZzError, nothing of zz's entities or front ends.
export * from './atomic-write.js';
export * from './background.js';
export * from './child-env.js';
export * from './file-lock.js';
export * from './json-file.js';
export * from './keyed-queue.js';
export * from './paths.js';
export * from './replica-id.js';
