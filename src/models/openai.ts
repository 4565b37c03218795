import { ZzError } from '../errors.js';
import { postJson, type HttpCallOptions } from './http-call.js';
import { parseArguments, strictCompatible } from './json.js';
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
  const base = (env.OPENAI_BASE_URL || 'https://api.openai.com/v1').replace(/\/+$/, '');
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
    const raw = await postJson(url, headers, body, { ...http, label, signal: req.signal });
    return fromWire(raw, label);
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

interface WireAnswer {
  choices?: {
    message?: {
      content?: string | null;
      refusal?: string | null;
      tool_calls?: { id?: string; function?: { name?: string; arguments?: unknown } }[];
    };
  }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number };
}

function fromWire(raw: unknown, label: string) {
  const a = raw as WireAnswer;
  const msg = a.choices?.[0]?.message;
  if (!msg) throw new ZzError('unavailable', `${label} answered without choices[0].message`);
  if (msg.refusal) throw new ZzError('unavailable', `${label} refused: ${msg.refusal}`);
  const tool_calls: ToolCall[] = (msg.tool_calls ?? []).map((c, i) => ({
    id: c.id || `call_${i}`,
    name: c.function?.name ?? '',
    ...parseArguments(c.function?.arguments),
  }));
  return {
    content: msg.content ?? '',
    tool_calls,
    usage: {
      input_tokens: a.usage?.prompt_tokens ?? 0,
      output_tokens: a.usage?.completion_tokens ?? 0,
    },
  };
}
