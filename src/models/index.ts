// Model adapters: `openai:<model>` (any OpenAI-compatible endpoint), `anthropic:<model>`,
// `exec:<command>`, behind one interface with retries, timeouts, usage and validated
// structured output. Knows nothing of lanes, asks, the daemon or the CLI.
export * from './types.js';
export { createModel, parseModelSpec, MODEL_PROVIDERS } from './create-model.js';
export { defaultModelSpec } from './default-model.js';
export { splitCommand } from './argv.js';
export { envSecrets } from './redact.js';
export { readBodyBounded, retryAfterMs } from './http-call.js';
export { isRecord, jsonSchemaOf } from './json.js';
