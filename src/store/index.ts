// Entities on refs/zz/*: the Store contract (git and memory), op-log commit messages, and
// Entity<S> (cached fold, group commit, CAS retry, idempotency). Knows no lane or ask rules:
// those arrive as an EntityCodec from core.
export * from './entity.js';
export * from './git-store.js';
export * from './memory-store.js';
export * from './op-log.js';
export * from './op-ids.js';
export * from './op-message.js';
export * from './store.js';
export * from './publication-order.js';
export * from './tree-drift.js';
