import { isZzError, ZzError } from '../errors.js';
import type { ChatMessage, Model, Usage } from '../models/index.js';

// The default budget is limits.ts DEFAULT_TOKENS_PER_ASK.

// The tokens one Ask may spend. Nothing else bounds them: a model's reply may be as long as the
// endpoint allows (max_tokens is not sent to openai: endpoints, some of which refuse it), and
// the open loop re-sends the whole conversation every turn, so an Ask whose text keeps the model
// busy costs up to maxTurns × 4 MiB of input. Counted from the usage the endpoint reports
// (input + output, summed over the Ask's calls, retries not counted twice); once past the
// budget, no further call is made and the Ask is given back with the reason. An endpoint that
// reports no usage (some local servers) would make the budget count nothing: such a call counts
// an estimate instead, a token per CHARS_PER_TOKEN characters of the prompt and the reply.

const CHARS_PER_TOKEN = 4;

/** A call's tokens guessed from its text, for an endpoint that reported none. */
function estimate(
  req: { system: string; messages: ChatMessage[]; tools?: unknown },
  reply: string,
): number {
  const prompt = req.system.length + JSON.stringify(req.messages).length;
  const tools = req.tools ? JSON.stringify(req.tools).length : 0;
  return Math.ceil((prompt + tools + reply.length) / CHARS_PER_TOKEN);
}

const reported = (u: Usage) => u.input_tokens + u.output_tokens > 0;

const spentSince = (model: Model, start: { input_tokens: number; output_tokens: number }) => {
  const u = model.usage();
  return u.input_tokens + u.output_tokens - start.input_tokens - start.output_tokens;
};

/**
 * `model` for one Ask: each call first checks what this Ask has spent (the worker works one Ask
 * at a time, so the model's running total moves for this Ask alone) and refuses past `max`.
 */
export function budgeted(model: Model, max: number): Model {
  const start = model.usage();
  let estimated = 0;
  const check = () => {
    const spent = spentSince(model, start) + estimated;
    if (spent >= max) {
      throw new ZzError(
        'payload_too_large',
        `this Ask spent ${spent} model tokens, past its budget of ${max} (--max-tokens-per-ask); it is given back`,
        { spent, budget: max },
      );
    }
  };
  return {
    spec: model.spec,
    usage: () => model.usage(),
    // Checked before each call, not after: a reply already paid for is used (it may answer).
    chat: async (req) => {
      check();
      const r = await model.chat(req);
      if (!reported(r.usage)) estimated += estimate(req, r.content + JSON.stringify(r.tool_calls));
      return r;
    },
    object: async (req) => {
      check();
      const r = await model.object(req);
      if (!reported(r.usage)) estimated += estimate(req, JSON.stringify(r.object));
      return r;
    },
  };
}

/**
 * Whether `e` is this budget's refusal: the worker then parks the Ask at once (a give-back and
 * a fresh claim would start a fresh budget, 8 times over, before the give-backs parked it).
 */
export function isOverBudget(e: unknown): boolean {
  if (!isZzError(e) || e.code !== 'payload_too_large') return false;
  const d = e.details as { budget?: unknown } | undefined;
  return typeof d?.budget === 'number';
}
