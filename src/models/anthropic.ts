import { ZzError } from '../errors.js';
import { postJson, type HttpCallOptions } from './http-call.js';
import { endpointBase } from './redact.js';
import { isRecord, parseArguments, tokenCount } from './json.js';
import type { ChatMessage, ToolCall, Transport, WireRequest } from './types.js';

// Anthropic's Messages API. `ANTHROPIC_BASE_URL` is the host as the official SDK takes it
// (`https://api.anthropic.com`); a trailing `/v1` is accepted too. Structured output is a
// forced tool call: the schema becomes the one tool's input_schema and `tool_choice` names it,
// which every Claude model supports and which returns the answer as data, not prose.

const ANSWER_TOOL = 'zz_answer';

export function anthropicTransport(
  model: string,
  env: NodeJS.ProcessEnv,
  http: Omit<HttpCallOptions, 'label' | 'signal'>,
  maxTokens: number,
): Transport {
  const base = endpointBase(
    'ANTHROPIC_BASE_URL',
    env.ANTHROPIC_BASE_URL,
    'https://api.anthropic.com',
  );
  const key = env.ANTHROPIC_API_KEY;
  if (!key && base === 'https://api.anthropic.com') {
    throw new ZzError('precondition_failed', 'ANTHROPIC_API_KEY is not set');
  }
  const url = base.endsWith('/v1') ? `${base}/messages` : `${base}/v1/messages`;
  const label = `anthropic:${model} at ${base}`;
  const headers: Record<string, string> = { 'anthropic-version': '2023-06-01' };
  if (key) headers['x-api-key'] = key;
  return async (req: WireRequest) => {
    const body: Record<string, unknown> = {
      model,
      max_tokens: maxTokens,
      system: req.system,
      messages: toWire(req.messages),
    };
    const tools = (req.tools ?? []).map((t) => ({
      name: t.name,
      description: t.description,
      input_schema: t.input_schema,
    }));
    if (req.responseSchema) {
      tools.push({
        name: ANSWER_TOOL,
        description: `Give your answer (${req.responseSchema.name}) by calling this tool.`,
        input_schema: req.responseSchema.schema,
      });
      body.tool_choice = { type: 'tool', name: ANSWER_TOOL };
    }
    if (tools.length) body.tools = tools;
    const raw = await postJson(url, headers, body, {
      ...http,
      label,
      signal: req.signal,
      secrets: [key],
    });
    return fromWire(raw, label, req.responseSchema !== undefined);
  };
}

type Block =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'tool_result'; tool_use_id: string; content: string };

/** Anthropic wants alternating turns: consecutive tool results become one user turn. */
function toWire(messages: ChatMessage[]): { role: 'user' | 'assistant'; content: Block[] }[] {
  const out: { role: 'user' | 'assistant'; content: Block[] }[] = [];
  const push = (role: 'user' | 'assistant', blocks: Block[]) => {
    const last = out[out.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    if (m.role === 'tool') {
      push('user', [{ type: 'tool_result', tool_use_id: m.tool_call_id, content: m.content }]);
    } else if (m.role === 'assistant') {
      const blocks: Block[] = m.content ? [{ type: 'text', text: m.content }] : [];
      for (const c of m.tool_calls ?? []) {
        blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: c.arguments });
      }
      push('assistant', blocks.length ? blocks : [{ type: 'text', text: '(no text)' }]);
    } else {
      push('user', [{ type: 'text', text: m.content }]);
    }
  }
  return out;
}

interface WireAnswer {
  content?: ({ type: string; text?: string; id?: string; name?: string; input?: unknown } | null)[];
  stop_reason?: string;
  usage?: { input_tokens?: number; output_tokens?: number };
}

function fromWire(raw: unknown, label: string, structured: boolean) {
  const a = (isRecord(raw) ? raw : {}) as WireAnswer;
  if (!Array.isArray(a.content)) {
    throw new ZzError('unavailable', `${label} answered without a content array`);
  }
  let content = '';
  const tool_calls: ToolCall[] = [];
  let object: unknown;
  for (const b of a.content) {
    if (b?.type === 'text' && typeof b.text === 'string') content += b.text;
    if (b?.type !== 'tool_use') continue;
    if (structured && b.name === ANSWER_TOOL) {
      object = b.input;
      continue;
    }
    // A missing input is {} here as in OpenAI's adapter; anything else not an object, too
    // big or too deep is refused (parseArguments).
    tool_calls.push({
      id: typeof b.id === 'string' && b.id ? b.id : `toolu_${tool_calls.length}`,
      name: typeof b.name === 'string' ? b.name : '',
      ...parseArguments(b.input),
    });
  }
  return {
    content,
    tool_calls,
    ...(object !== undefined ? { object } : {}),
    usage: {
      input_tokens: tokenCount(a.usage?.input_tokens),
      output_tokens: tokenCount(a.usage?.output_tokens),
    },
  };
}
