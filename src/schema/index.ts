// zod schemas: the single source of truth for stored documents (config, lanes, asks, rungs),
// the op unions of every entity, ids and names, bounds, and the shapes tools return. A leaf:
// it imports nothing of zz but errors.
export * from './changeset-ops.js';
export * from './config-ops.js';
export * from './config.js';
export * from './ids.js';
export * from './issue-text.js';
export * from './ladder-ops.js';
export * from './lane-ops.js';
export * from './lane-op-parse.js';
export * from './lane.js';
export * from './limits.js';
export * from './ops.js';
export * from './rung.js';
export * from './views.js';
