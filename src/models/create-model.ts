import type { z } from 'zod';
import { ZzError } from '../errors.js';
import { anthropicTransport } from './anthropic.js';
import { execTransport } from './exec.js';
import { extractJson, jsonSchemaOf } from './json.js';
import { quote } from './http-call.js';
import { openaiTransport } from './openai.js';
import type {
  ChatMessage,
  ChatRequest,
  Model,
  ModelOptions,
  ObjectRequest,
  Transport,
  Usage,
} from './types.js';

// `createModel('openai:llama3.1' | 'anthropic:claude-…' | 'exec:./agent.sh')`. The adapters
// only speak their wire; everything that must behave the same whatever the model — usage
// summing, structured output validated with zod and one repair round — lives here once.

export const MODEL_PROVIDERS = ['openai', 'anthropic', 'exec'] as const;

export function parseModelSpec(spec: string): {
  provider: (typeof MODEL_PROVIDERS)[number];
  name: string;
} {
  const i = spec.indexOf(':');
  const provider = i > 0 ? spec.slice(0, i) : '';
  const name = i > 0 ? spec.slice(i + 1).trim() : '';
  if (!(MODEL_PROVIDERS as readonly string[]).includes(provider) || !name) {
    throw new ZzError(
      'invalid_argument',
      `model "${spec.slice(0, 100)}" is not one of openai:<model>, anthropic:<model>, exec:<command>`,
    );
  }
  return { provider: provider as (typeof MODEL_PROVIDERS)[number], name };
}

export function createModel(spec: string, opts: ModelOptions = {}): Model {
  const { provider, name } = parseModelSpec(spec);
  const env = opts.env ?? process.env;
  const envTimeout = Number(env.ZZ_MODEL_TIMEOUT_MS);
  const timeoutMs = opts.timeoutMs ?? (envTimeout > 0 ? envTimeout : 120_000);
  const http = {
    timeoutMs,
    maxRetries: opts.maxRetries ?? 4,
    baseDelayMs: opts.baseDelayMs ?? 500,
    maxDelayMs: opts.maxDelayMs ?? 60_000,
    ...(opts.onRetry ? { onRetry: opts.onRetry } : {}),
  };
  const transport: Transport =
    provider === 'openai'
      ? openaiTransport(name, env, http, opts.maxTokens)
      : provider === 'anthropic'
        ? anthropicTransport(name, env, http, opts.maxTokens ?? 4096)
        : execTransport(name, { env, timeoutMs, ...(opts.cwd ? { cwd: opts.cwd } : {}) });
  return new SummingModel(spec, name, transport);
}

const zeroUsage = (): Usage => ({ input_tokens: 0, output_tokens: 0, calls: 0 });

class SummingModel implements Model {
  private total = zeroUsage();

  constructor(
    readonly spec: string,
    private readonly wireModel: string,
    private readonly transport: Transport,
  ) {}

  usage(): Usage {
    return { ...this.total };
  }

  private async call(req: Parameters<Transport>[0], acc: Usage) {
    const r = await this.transport(req);
    for (const u of [this.total, acc]) {
      u.input_tokens += r.usage.input_tokens;
      u.output_tokens += r.usage.output_tokens;
      u.calls += 1;
    }
    return r;
  }

  async chat(req: ChatRequest) {
    const usage = zeroUsage();
    const r = await this.call({ model: this.wireModel, ...req }, usage);
    return { content: r.content, tool_calls: r.tool_calls, usage };
  }

  async object<T>(req: ObjectRequest<T>) {
    const usage = zeroUsage();
    const name = req.name ?? 'answer';
    const responseSchema = { name, schema: jsonSchemaOf(req.schema as z.ZodType) };
    let messages: ChatMessage[] = req.messages;
    let problem = '';
    for (const round of [0, 1]) {
      const r = await this.call(
        { model: this.wireModel, system: req.system, messages, responseSchema, signal: req.signal },
        usage,
      );
      const { value, raw, error } = check(req.schema, r.object, r.content);
      if (error === undefined) return { object: value as T, usage, repaired: round === 1 };
      problem = error;
      // The repair round: show the model its own answer and exactly what was wrong with it.
      messages = [
        ...req.messages,
        { role: 'assistant', content: raw },
        {
          role: 'user',
          content:
            `Your answer does not match the required JSON schema: ${error}\n` +
            `Answer again with only a JSON object that matches this schema:\n` +
            JSON.stringify(responseSchema.schema),
        },
      ];
    }
    throw new ZzError(
      'unavailable',
      `${this.spec} gave invalid structured output (${name}) twice, the second time: ${problem}`,
      { reason: 'invalid_output' },
    );
  }
}

function check<T>(
  schema: z.ZodType<T>,
  object: unknown,
  content: string,
): { value?: T; raw: string; error?: string } {
  let candidate = object;
  const raw = object !== undefined ? JSON.stringify(object) : content;
  if (candidate === undefined) {
    try {
      candidate = extractJson(content);
    } catch (e) {
      return { raw, error: `${(e as Error).message}: ${quote(content, 200) || '(empty)'}` };
    }
  }
  const parsed = schema.safeParse(candidate);
  if (parsed.success) return { value: parsed.data, raw };
  const issues = parsed.error.issues
    .slice(0, 5)
    .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
    .join('; ');
  return { raw, error: issues };
}
