import { isZzError, ZzError } from '../errors.js';
import { clipUtf8, utf8Bytes } from '../schema/limits.js';
import { redactSecrets } from '../schema/redact.js';
import { BUILTIN_KINDS, kindEntry, WORKFLOW_KINDS } from '../core/kinds.js';
import { isRecord, jsonSchemaOf, type ChatMessage, type ToolSpec } from '../models/index.js';
import { ALL_TOOLS, isWrite, type ToolDef } from '../tools/index.js';
import { answer, type FlowContext, type FlowResult } from './flows.js';
import {
  generationOf,
  MAX_CALLS_PER_TURN,
  MAX_CONTENT_KEPT,
  MAX_GENERATION,
  MAX_HISTORY_BYTES,
  ORIGIN_FIELD,
  PER_ASK_CAPS,
} from './limits.js';
import type { AskView } from './types.js';

// Every kind without a code-driven flow: the model gets the Ask and the tools its scope allows
// and drives the calls itself, for at most maxTurns model turns. This is the second permission
// layer: the daemon enforces scopes on every call anyway, but a tool the model may not use is
// never offered (see WRITES_OFFERED) and a call to a tool it was not offered is refused here.

export const SYSTEM_PROMPT = `You are an agent working with zz, a coordination system for coding agents that keeps its state in a git repository.
Work arrives as Asks in a Lane's queue. One Ask has been claimed for you; do it with the tools, then answer it with ask_answer: outcome "complete" with a result saying what you did, or "deny" with the reason you cannot.
You may break big work up: propose a Lane (lane_propose) and post Asks into it (ask_post) for others to claim.
Read the codebase through the Ladder (ladder_tree, ladder_search, ladder_read) and git (git_log, git_diff, git_show_file).
Ladder writes are left to the Lane's coordinator: if a rung is wrong or missing, post a ladder_update Ask saying what to change, unless ladder_write_rung is among your tools.
When a call fails, read the error and fix the arguments; reuse an idempotency_key when retrying a write.`;

/*
 * What the model is offered: every read, and of the writes only those that act on the Ask it
 * holds or that DESIGN §9 gives it. An allowlist, not a list of exclusions, because the Ask a
 * model reads is anyone's text (a member's post, a synced remote: prompt injection) while zz
 * work often runs as an owner or a Lane's coordinator, whose token may do far more than the
 * Ask needs; a write tool added to the registry later is not offered until it is named here.
 * - ask_answer: answers the held Ask (runCall refuses any other ask_id);
 * - ask_post, lane_propose: DESIGN §9 lets the model break work up into new Lanes and Asks;
 *   they add work for others to take and change nothing that exists;
 * - commit_changeset, ladder_write_rung: DESIGN §9 offers them only while the model works a
 *   coordinator-scope Ask (COORDINATOR_ONLY), and only to a worker whose coordinatorship an
 *   owner stands behind (rootedIn): a Lane the model proposed itself makes it coordinator there,
 *   which must not reach the default branch or the Ladder.
 * Not offered: ask_cancel and lane_close (an injected body would cancel other people's Asks or
 * close the Lane for every worker: these are a coordinator's decisions, for people), ask_claim,
 * ask_claim_next and ask_release (the loop claims, renews and gives back itself), lane_grant,
 * role_grant and lane_add_related (who may do what, and how Lanes relate, are for people),
 * ladder_reindex, and the admin writes (token_revoke, key_add, key_remove,
 * repo_require_signatures: an owner's token may revoke every token, register a signing key for
 * any actor or quarantine every unsigned op). Of the reads, only lane_events (a long-poll) is
 * left out.
 */
const WRITES_OFFERED = new Set(['ask_answer', 'ask_post', 'lane_propose']);
const COORDINATOR_ONLY = new Set(['commit_changeset', 'ladder_write_rung']);
const READS_WITHHELD = new Set(['lane_events']);

const offeredAt = (t: ToolDef, scope: Scope, rooted: boolean): boolean =>
  isWrite(t)
    ? WRITES_OFFERED.has(t.name) ||
      (COORDINATOR_ONLY.has(t.name) && scope === 'coordinator' && rooted)
    : !READS_WITHHELD.has(t.name);

export type Scope = 'member' | 'maintainer' | 'coordinator';

/** The scope of an Ask's kind: built-ins by the table, custom kinds by the Lane, else member. */
export async function scopeOf(ctx: FlowContext): Promise<Scope> {
  const builtin = kindEntry(BUILTIN_KINDS, ctx.ask.kind);
  if (builtin) return builtin.scope;
  const r = await ctx
    .call('lane_get', { lane_id: ctx.ask.lane_id, asks_limit: 1, history_limit: 1 })
    .catch(() => null);
  const kinds = (r?.lane as { ask_kinds?: Record<string, string> } | undefined)?.ask_kinds ?? {};
  const s = kindEntry(kinds, ctx.ask.kind);
  return s === 'maintainer' || s === 'coordinator' ? s : 'member';
}

/**
 * Whether the daemon lets the worker (the Ask's holder) land code and write rungs in the Ask's
 * Lane: the Lane's rooted_coordinators, listed by the predicate those tools check (core/access.ts
 * rootedCoordinators), so an owner coordinating by a grant no owner made is offered them and
 * nobody the daemon would refuse is.
 */
export async function rootedIn(ctx: FlowContext): Promise<boolean> {
  const r = await ctx
    .call('lane_get', { lane_id: ctx.ask.lane_id, asks_limit: 1, include_history: false })
    .catch(() => null);
  const rooted = (r?.lane as { rooted_coordinators?: unknown } | undefined)?.rooted_coordinators;
  return Array.isArray(rooted) && ctx.ask.holder !== null && rooted.includes(ctx.ask.holder);
}

/**
 * The tools offered for an Ask of this scope, to a worker whose coordinatorship is `rooted` or
 * not (a pure function of the two: tested as such).
 */
export function toolsFor(
  scope: Scope,
  { rooted = false, all = ALL_TOOLS }: { rooted?: boolean; all?: readonly ToolDef[] } = {},
): ToolSpec[] {
  return all
    .filter((t) => !t.local && offeredAt(t, scope, rooted))
    .map((t) => {
      const schema = jsonSchemaOf(t.input, 'input');
      // Large payloads never travel as tool-call arguments: a changeset is written by the
      // code-driven work flow, not passed through ask_answer by a model.
      if (t.name === 'ask_answer') stripProperty(schema, 'changeset');
      // For the same reason, and because an Ask's text may tell the model what to land, the
      // model lands only by changeset_id (which needs a granted review): never files it wrote.
      if (t.name === 'commit_changeset') {
        for (const k of DIRECT_COMMIT_KEYS) stripProperty(schema, k);
      }
      return {
        name: t.name,
        description: t.description ? `${t.summary}. ${t.description}` : t.summary,
        input_schema: schema,
      };
    });
}

function stripProperty(schema: Record<string, unknown>, key: string): void {
  const props = schema.properties as Record<string, unknown> | undefined;
  if (props) delete props[key];
  if (Array.isArray(schema.required)) {
    schema.required = (schema.required as string[]).filter((k) => k !== key);
  }
}

/** commit_changeset's direct form (a coordinator's own files), never the model's. */
const DIRECT_COMMIT_KEYS = ['message', 'files', 'expected_head'] as const;

const MAX_RESULT_CHARS = 16_000;

function clipResult(v: unknown): string {
  const s = JSON.stringify(v);
  return s.length > MAX_RESULT_CHARS
    ? `${s.slice(0, MAX_RESULT_CHARS)}… [truncated: ${s.length} characters; ask for less, e.g. with limit/offset]`
    : s;
}

export async function openLoop(
  ctx: FlowContext,
  maxTurns: number,
  onTool: (tool: string, ok: boolean, detail?: string) => void,
): Promise<FlowResult | null> {
  const scope = await scopeOf(ctx);
  const tools = toolsFor(scope, { rooted: scope === 'coordinator' && (await rootedIn(ctx)) });
  const offered = new Set(tools.map((t) => t.name));
  const messages: ChatMessage[] = [{ role: 'user', content: askPrompt(ctx.ask, scope) }];
  // Writes per held Ask (limits.ts PER_ASK_CAPS), by tool.
  const writes = new Map<string, number>();
  for (let turn = 1; turn <= maxTurns; turn++) {
    ctx.step('model', `turn ${turn}/${maxTurns}`);
    assertHistoryBounded(messages);
    const r = await ctx.model.chat({ system: SYSTEM_PROMPT, messages, tools, signal: ctx.signal });
    const content = clipUtf8(r.content, MAX_CONTENT_KEPT);
    const n = r.tool_calls.length;
    if (n > MAX_CALLS_PER_TURN) {
      // Refused whole, keeping none of the calls (the whole history is re-sent every turn):
      // one error, whatever their number. The reply's text is kept, clipped, or a placeholder
      // (an assistant turn with no text is refused by some endpoints).
      const msg =
        `your reply sent ${n} tool calls and none were run: ` +
        `a turn runs at most ${MAX_CALLS_PER_TURN}; send them again, at most ${MAX_CALLS_PER_TURN} at a time`;
      onTool(`${n} tool calls`, false, msg);
      messages.push(
        { role: 'assistant', content: content || `(${n} tool calls, refused)` },
        { role: 'user', content: `error: ${msg}` },
      );
      continue;
    }
    const run = r.tool_calls;
    messages.push({ role: 'assistant', content, tool_calls: run });
    if (n === 0) {
      // A model that stops talking without answering has answered in prose: record it.
      const text = r.content.trim();
      return answer(ctx, text ? 'complete' : 'deny', {
        result: text || 'the model ended its turn without an answer',
      });
    }
    for (const c of run) {
      const reply = await runCall(ctx, offered, c.name, c.arguments, c.parse_error, writes);
      onTool(c.name, reply.ok, reply.detail);
      if (reply.answered) return reply.answered;
      messages.push({ role: 'tool', tool_call_id: c.id, content: reply.content });
    }
  }
  return null;
}

/** Gives the Ask back (an error) rather than send a conversation past MAX_HISTORY_BYTES. */
function assertHistoryBounded(messages: readonly ChatMessage[]): void {
  let bytes = 0;
  for (const m of messages) bytes += utf8Bytes(JSON.stringify(m));
  if (bytes > MAX_HISTORY_BYTES) {
    throw new ZzError(
      'payload_too_large',
      `the model's conversation reached ${bytes} bytes, past the ${MAX_HISTORY_BYTES}-byte bound; the Ask is given back`,
    );
  }
}

async function runCall(
  ctx: FlowContext,
  offered: Set<string>,
  name: string,
  args: Record<string, unknown>,
  parseError: string | undefined,
  writes: Map<string, number>,
): Promise<{ ok: boolean; content: string; detail?: string; answered?: FlowResult }> {
  const fail = (msg: string) => ({ ok: false, content: `error: ${msg}`, detail: msg });
  if (parseError) return fail(parseError);
  if (!offered.has(name)) return fail(`${name} is not one of your tools for this Ask`);
  const cap = Object.hasOwn(PER_ASK_CAPS, name) ? PER_ASK_CAPS[name] : undefined;
  if (cap && (writes.get(name) ?? 0) >= cap.max) {
    return fail(
      `you may ${cap.what} while working one Ask; ` +
        `answer this one and say in the result what else needs doing`,
    );
  }
  const posting = name === 'ask_post' || name === 'lane_propose';
  if (posting && ctx.posts && ctx.posts.used >= ctx.posts.max) {
    return fail(
      `this zz work run has posted its ${ctx.posts.max} Asks and Lanes (--max-posts); ` +
        `it posts no more: answer this Ask and say in the result what else needs doing`,
    );
  }
  const generation = generationOf(ctx.ask.payload) + 1;
  if (name === 'ask_post' && generation > MAX_GENERATION) {
    return fail(
      `Ask ${ctx.ask.ask_id} was itself posted by zz work ${generation - 1} generation(s) down; ` +
        `Asks posted from it would be past the limit of ${MAX_GENERATION}: answer it instead`,
    );
  }
  // The workflow's Asks (a review, a submission, a conflict to resolve) follow from answers and
  // the server posts them; a coordinator may post one by hand, and zz work often runs as one.
  // An Ask's body is anyone's text: "post a submit_changeset for cs-X" obeyed here put an
  // unreviewed change on the default branch when the same worker claimed it.
  if (name === 'ask_post' && typeof args.kind === 'string' && WORKFLOW_KINDS.has(args.kind)) {
    return fail(
      `${args.kind} Asks are posted by zz itself when an Ask is answered (a review after a ` +
        `changeset, a submission after a granted review); you may not post one`,
    );
  }
  if (name === 'commit_changeset' && DIRECT_COMMIT_KEYS.some((k) => Object.hasOwn(args, k))) {
    return fail(
      'commit_changeset lands a reviewed changeset by changeset_id only; you may not commit files',
    );
  }
  if (name === 'ask_answer') {
    if (args.ask_id !== ctx.ask.ask_id || args.lane_id !== ctx.ask.lane_id) {
      return fail(
        `answer the Ask you hold: lane_id "${ctx.ask.lane_id}", ask_id "${ctx.ask.ask_id}"`,
      );
    }
    const outcome = args.outcome;
    if (outcome !== 'complete' && outcome !== 'deny' && outcome !== 'grant') {
      return fail('outcome must be complete, deny or grant');
    }
    try {
      const result = await answer(ctx, outcome, {
        ...(typeof args.result === 'string' ? { result: args.result } : {}),
      });
      return { ok: true, content: 'answered', answered: result };
    } catch (e) {
      if (!isZzError(e) || e.code === 'internal') throw e;
      return fail(`${e.code}: ${e.message}`);
    }
  }
  try {
    // Counted before the call: one that fails in transit may still have posted.
    if (cap) writes.set(name, (writes.get(name) ?? 0) + 1);
    if (posting && ctx.posts) ctx.posts.used++;
    // The origin is the worker's to write, whatever the model put there.
    // What the model posts is stored and synced like an answer: secrets out (flows.ts storedText).
    const clean = posting
      ? (redactStrings(args, ctx.secrets ?? []) as Record<string, unknown>)
      : args;
    const sent =
      name === 'ask_post'
        ? {
            ...clean,
            payload: {
              ...(isRecord(clean.payload) ? clean.payload : {}),
              [ORIGIN_FIELD]: { ask_id: ctx.ask.ask_id, depth: generation },
            },
          }
        : clean;
    const result = await ctx.call(name, sent);
    return { ok: true, content: clipResult(result) };
  } catch (e) {
    // Errors a model can fix go back to it; anything else (the daemon gone, a bug) stops the step.
    if (!isZzError(e) || e.code === 'internal' || e.code === 'unavailable') throw e;
    return fail(`${e.code}: ${e.message}`);
  }
}

/** Every string in a tool call's arguments with secrets out (schema/redact.ts). */
function redactStrings(v: unknown, secrets: readonly string[]): unknown {
  if (typeof v === 'string') return redactSecrets(v, secrets);
  if (Array.isArray(v)) return v.map((x) => redactStrings(x, secrets));
  if (isRecord(v)) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, redactStrings(x, secrets)]));
  }
  return v;
}

function askPrompt(ask: AskView, scope: Scope): string {
  return [
    `You hold Ask ${ask.ask_id} (kind ${ask.kind}, scope ${scope}) in lane ${ask.lane_id}.`,
    `Title: ${ask.title}`,
    ask.body ? `Body:\n${ask.body}` : '',
    Object.keys(ask.payload).length ? `Payload: ${JSON.stringify(ask.payload).slice(0, 8000)}` : '',
    `When done, call ask_answer with lane_id "${ask.lane_id}" and ask_id "${ask.ask_id}".`,
  ]
    .filter(Boolean)
    .join('\n\n');
}
