// `zz work`: the agent loop. Claims Asks from a daemon, works them with a model (code-driven
// flows for work/review/submit/conflict, an open tool loop for other kinds), answers, repeats.
// Talks to the daemon only through tool calls; knows nothing of yargs or terminals.
export * from './types.js';
export { runWorker, type WorkSummary } from './worker.js';
export { localSandbox } from './sandbox.js';
export { toolsFor, SYSTEM_PROMPT } from './open-loop.js';
