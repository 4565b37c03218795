// zod schemas: the single source of truth for stored documents (config, lanes, asks, rungs),
// ids and names, and the shapes tools return. A leaf: it imports nothing of zz but errors.
export * from './config.js';
export * from './ids.js';
export * from './lane.js';
export * from './rung.js';
export * from './views.js';
