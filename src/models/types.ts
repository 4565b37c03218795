import type { z } from 'zod';

// The one model interface zz uses: `zz work` (chat with tools, structured output) and
// `zz ladder build --model` (prose). Messages follow the `exec:` protocol of DESIGN §9, so the
// exec adapter passes them through unchanged and the HTTP adapters translate them.

export interface ToolCall {
  id: string;
  name: string;
  /** Always an object; adapters parse the wire's JSON string and reject anything else. */
  arguments: Record<string, unknown>;
  /** Set when the model sent arguments that are not a JSON object (then `arguments` is {}). */
  parse_error?: string;
}

export type ChatMessage =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; tool_calls?: ToolCall[] }
  | { role: 'tool'; content: string; tool_call_id: string };

export interface ToolSpec {
  name: string;
  description: string;
  /** A JSON Schema object (what `z.toJSONSchema` or the tool registry gives). */
  input_schema: Record<string, unknown>;
}

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  /** Model calls made, retries not counted. */
  calls: number;
}

export interface ChatRequest {
  system: string;
  messages: ChatMessage[];
  tools?: ToolSpec[];
  signal?: AbortSignal;
}

export interface ChatResult {
  content: string;
  tool_calls: ToolCall[];
  usage: Usage;
}

export interface ObjectRequest<T> {
  system: string;
  messages: ChatMessage[];
  schema: z.ZodType<T>;
  /** A short name for the schema (OpenAI's json_schema.name, Anthropic's forced tool). */
  name?: string;
  signal?: AbortSignal;
}

export interface ObjectResult<T> {
  object: T;
  usage: Usage;
  /** True when the first answer failed validation and the repair round fixed it. */
  repaired: boolean;
}

export interface Model {
  /** The spec it was made from, e.g. `openai:llama3.1`. */
  readonly spec: string;
  chat(req: ChatRequest): Promise<ChatResult>;
  object<T>(req: ObjectRequest<T>): Promise<ObjectResult<T>>;
  /** Token usage summed over every call this model made. */
  usage(): Usage;
}

export interface ModelOptions {
  /** Environment to read OPENAI_* / ANTHROPIC_* from (default: process.env). */
  env?: NodeJS.ProcessEnv;
  /** Per call (per attempt) timeout; default 120 s, or ZZ_MODEL_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Retries after the first attempt on 408/429/5xx/network errors; default 4. */
  maxRetries?: number;
  /** First backoff delay; doubles each retry with full jitter; default 500 ms. */
  baseDelayMs?: number;
  /** Longest wait we accept, Retry-After included; longer → a clear failure. Default 60 s. */
  maxDelayMs?: number;
  /** Anthropic requires max_tokens; also sent to OpenAI-compatible endpoints. Default 4096. */
  maxTokens?: number;
  /** Working directory for `exec:` commands. */
  cwd?: string;
  /** Told about every retry (for a status line); never given secrets. */
  onRetry?: (info: { attempt: number; delayMs: number; reason: string }) => void;
}

/** What one adapter turns into a wire call. `responseSchema` asks for structured output. */
export interface WireRequest {
  model: string;
  system: string;
  messages: ChatMessage[];
  tools?: ToolSpec[];
  responseSchema?: { name: string; schema: Record<string, unknown> };
  signal?: AbortSignal;
}

export interface WireResult {
  content: string;
  tool_calls: ToolCall[];
  /** Set when the endpoint returned the structured answer as data (exec `object`, forced tool). */
  object?: unknown;
  usage: { input_tokens: number; output_tokens: number };
}

export type Transport = (req: WireRequest) => Promise<WireResult>;
