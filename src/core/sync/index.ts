// `zz sync`: fetch, validate, merge diverged entities in publication order, one local
// transaction, an atomic leased push, retry on lost races (DESIGN §7).
export * from './authenticity.js';
export * from './codecs.js';
export * from './engine.js';
export * from './report.js';
export * from '../../schema/quarantine-shown.js';
export * from './held-back.js';
export * from './git-ports.js';
export * from './merge.js';
export * from './ports.js';
export * from './validate.js';
export * from './run.js';
export * from './auto-sync.js';
export * from './unsigned.js';
export * from './refusals.js';
export * from './related-check.js';
export * from './project-identity.js';
export * from './push-gate.js';
export * from './drop-held.js';
