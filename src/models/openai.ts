import { ZzError } from '../errors.js';
import { postJson, quote, type HttpCallOptions } from './http-call.js';
import { endpointBase } from './redact.js';
import { isRecord, parseArguments, strictCompatible, tokenCount } from './json.js';
import type { ChatMessage, ToolCall, Transport, WireRequest } from './types.js';

// OpenAI-compatible chat completions: OpenAI itself, Ollama (`http://localhost:11434/v1`),
// vLLM, llama.cpp's server. `OPENAI_BASE_URL` includes the `/v1` part, as the official SDK
// expects; the API key is optional because local servers do not need one. Structured output
// goes through `response_format: json_schema`, strict when the schema allows it (OpenAI's
// strict mode wants every property required and no additional properties).

export function openaiTransport(
  model: string,
  env: NodeJS.ProcessEnv,
  http: Omit<HttpCallOptions, 'label' | 'signal'>,
  maxTokens: number | undefined,
): Transport {
  const base = endpointBase('OPENAI_BASE_URL', env.OPENAI_BASE_URL, 'https://api.openai.com/v1');
  const key = env.OPENAI_API_KEY;
  if (!key && base === 'https://api.openai.com/v1') {
    throw new ZzError(
      'precondition_failed',
      'OPENAI_API_KEY is not set (for a local server such as Ollama, set OPENAI_BASE_URL, e.g. http://localhost:11434/v1)',
    );
  }
  const url = `${base}/chat/completions`;
  const label = `openai:${model} at ${base}`;
  const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  return async (req: WireRequest) => {
    const body: Record<string, unknown> = {
      model,
      messages: [{ role: 'system', content: req.system }, ...req.messages.map(toWire)],
    };
    if (maxTokens) body.max_tokens = maxTokens;
    if (req.tools?.length) {
      body.tools = req.tools.map((t) => ({
        type: 'function',
        function: { name: t.name, description: t.description, parameters: t.input_schema },
      }));
    }
    if (req.responseSchema) {
      body.response_format = {
        type: 'json_schema',
        json_schema: {
          name: req.responseSchema.name,
          schema: req.responseSchema.schema,
          strict: strictCompatible(req.responseSchema.schema),
        },
      };
    }
    const raw = await postJson(url, headers, body, {
      ...http,
      label,
      signal: req.signal,
      secrets: [key],
    });
    return fromWire(raw, label, [key]);
  };
}

function toWire(m: ChatMessage): Record<string, unknown> {
  if (m.role === 'tool') return { role: 'tool', tool_call_id: m.tool_call_id, content: m.content };
  if (m.role === 'assistant' && m.tool_calls?.length) {
    return {
      role: 'assistant',
      content: m.content || null,
      tool_calls: m.tool_calls.map((c) => ({
        id: c.id,
        type: 'function',
        function: { name: c.name, arguments: JSON.stringify(c.arguments) },
      })),
    };
  }
  return { role: m.role, content: m.content };
}

// The answer is untrusted JSON: every field is checked before use, so a malformed one is a
// clear `unavailable` naming the field, never a TypeError reported as a bug in zz.
function fromWire(raw: unknown, label: string, secrets: readonly (string | undefined)[]) {
  const bad = (what: string) => new ZzError('unavailable', `${label} answered ${what}`);
  const choices = isRecord(raw) ? raw.choices : undefined;
  const msg = Array.isArray(choices) && isRecord(choices[0]) ? choices[0].message : undefined;
  if (!isRecord(msg)) throw bad('without choices[0].message');
  // A refusal is model text like an error body (it becomes an ask_release's reason, stored and
  // synced): redacted of the key and cut like one.
  if (typeof msg.refusal === 'string' && msg.refusal) {
    throw new ZzError('unavailable', `${label} refused: ${quote(msg.refusal, 1000, secrets)}`);
  }
  if (msg.content != null && typeof msg.content !== 'string') {
    throw bad('with a message content that is not a string');
  }
  if (msg.tool_calls != null && !Array.isArray(msg.tool_calls)) {
    throw bad('with tool_calls that are not an array');
  }
  const tool_calls: ToolCall[] = ((msg.tool_calls ?? []) as unknown[]).map((c, i) => {
    const call = isRecord(c) ? c : {};
    const fn = isRecord(call.function) ? call.function : {};
    return {
      id: typeof call.id === 'string' && call.id ? call.id : `call_${i}`,
      name: typeof fn.name === 'string' ? fn.name : '',
      ...parseArguments(fn.arguments),
    };
  });
  const usage = isRecord(raw) && isRecord(raw.usage) ? raw.usage : {};
  return {
    content: msg.content ?? '',
    tool_calls,
    usage: {
      input_tokens: tokenCount(usage.prompt_tokens),
      output_tokens: tokenCount(usage.completion_tokens),
    },
  };
}
