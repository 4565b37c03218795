import { z } from 'zod';
import { CONFLICT_REASON, SERVER_ACTOR } from '../core/follow-ups.js';
import { isZzError, ZzError } from '../errors.js';
import { clipUtf8, LIMITS } from '../schema/limits.js';
import { redactCutEnd, redactCutStart, redactSecrets } from '../schema/redact.js';
import type { ChatMessage, Model } from '../models/index.js';
import {
  changesetRef,
  diffFiles,
  diffText,
  headCommit,
  MAX_CONTEXT_FILE,
  readFileAt,
} from './reads.js';
import type { PostBudget } from './limits.js';
import type { AskView, CallTool, FileChange, Sandbox, TestRun } from './types.js';

// The code-driven flows of DESIGN §9. Code gathers the context, the model writes only content
// (structured output checked by zod), and code makes every call: the change travels as data,
// never as a model's tool-call arguments.

export interface FlowContext {
  ask: AskView;
  call: CallTool;
  model: Model;
  /** The repository worked on (owner/name), when known: its Ladder alone is searched. */
  repo?: string;
  signal: AbortSignal;
  sandbox?: Sandbox;
  testRounds: number;
  /** Secret values (API keys in the environment) taken out of every text stored, with shapes. */
  secrets?: readonly string[];
  /** The Asks and Lanes this run may still post (limits.ts), shared by every Ask it works. */
  posts?: PostBudget;
  step(step: string, detail?: string): void;
}

export interface FlowResult {
  outcome: string;
  changeset_id: string | null;
  follow_ups: { ask_id: string; kind: string }[];
}

export const changeShape = z.object({
  message: z.string().min(1).max(20_000).describe('Commit message: one line, then details'),
  files: z
    .array(
      z.object({
        path: z.string().min(1).max(4096),
        content: z.string().nullable().describe('The full new content; null deletes the file'),
      }),
    )
    .max(500),
});
export type ChangeShape = z.infer<typeof changeShape>;

export const reviewShape = z.object({
  decision: z.enum(['grant', 'deny']),
  reasons: z.array(z.string().max(4000)).max(50),
});

const CONTEXT_BUDGET = 400 * 1024;
const MAX_CONTEXT_FILES = 12;

/**
 * A text zz work stores (an answer's result, a commit message, what the model posts): every
 * Lane's history syncs to every member and remote, and the model may have read a token (a test
 * command's output, a file). Secrets out (schema/redact.ts), then bounded, then the cut's backstop.
 */
export function storedText(text: string, maxBytes: number, secrets?: readonly string[]): string {
  const s = secrets ?? [];
  const clean = redactSecrets(text, s);
  const cut = clipUtf8(clean, maxBytes);
  return cut === clean ? clean : redactCutEnd(cut, s);
}

/** Test output published in an answer: its last TEST_TAIL characters, redacted. */
export const TEST_TAIL = 2000;
export function testTail(output: string, secrets?: readonly string[]): string {
  const clean = redactSecrets(output, secrets ?? []);
  if (clean.length <= TEST_TAIL) return clean;
  // The word the cut fell inside goes: it may be a token's end, its prefix (its shape) gone.
  const tail = clean.slice(-TEST_TAIL).replace(/^[^\s"',;:=]*/, '');
  return `[…]${redactCutStart(tail, secrets ?? [])}`;
}

export async function answer(
  ctx: FlowContext,
  outcome: 'complete' | 'deny' | 'grant',
  extra: { result?: string; changeset?: { base: string; message: string; files: FileChange[] } },
): Promise<FlowResult> {
  ctx.step('answer', outcome);
  const r = await ctx.call('ask_answer', {
    lane_id: ctx.ask.lane_id,
    ask_id: ctx.ask.ask_id,
    outcome,
    ...(extra.result !== undefined
      ? { result: storedText(extra.result, LIMITS.result, ctx.secrets) }
      : {}),
    ...(extra.changeset
      ? {
          changeset: {
            ...extra.changeset,
            message: storedText(extra.changeset.message, LIMITS.commitMessage, ctx.secrets),
          },
        }
      : {}),
  });
  const followUps = (r.follow_ups as AskView[] | undefined) ?? [];
  return {
    outcome,
    changeset_id: (r.changeset_id as string | null | undefined) ?? null,
    follow_ups: followUps.map((a) => ({ ask_id: a.ask_id, kind: a.kind })),
  };
}

function askText(ask: AskView): string {
  const payload = Object.keys(ask.payload).length
    ? `\n\nPayload: ${JSON.stringify(ask.payload).slice(0, 8000)}`
    : '';
  return `Ask ${ask.ask_id} (${ask.kind}) in lane ${ask.lane_id}: ${ask.title}\n\n${ask.body}${payload}`;
}

// ---------------------------------------------------------------------------------------------
// work

/** Paths the Ask names literally (`src/a.ts`, `README.md`), as models and people write them. */
function mentionedPaths(text: string): string[] {
  const found = text.match(/(?:[\w.-]+\/)*[\w-]+\.[A-Za-z0-9]{1,8}\b/g) ?? [];
  return [...new Set(found.filter((p) => !/^\d+\.\d+$/.test(p)))];
}

/** The head to base the change on, and what the Ladder says, read side by side. */
async function workContext(ctx: FlowContext): Promise<{ base: string; context: string }> {
  const { call, ask } = ctx;
  const parts: string[] = [];
  const query = `${ask.title} ${ask.body}`.slice(0, 400);
  const [base, repoRung, hits] = await Promise.all([
    headCommit(call),
    call('ladder_read', { path: '_repo' }).catch(() => null),
    // Only this repository's rungs: the daemon's index spans every repository it serves.
    call('ladder_search', { query, limit: 8, ...(ctx.repo ? { repo: ctx.repo } : {}) })
      .then((r) => (r.hits as { path: string; kind: string; summary: string }[]) ?? [])
      .catch(() => []),
  ]);
  const rung = repoRung?.rung as { summary?: string } | undefined;
  if (rung?.summary) parts.push(`Repository summary (Ladder):\n${rung.summary}`);
  if (hits.length) {
    parts.push(
      'Relevant Ladder rungs:\n' +
        hits.map((h) => `- ${h.path} (${h.kind}): ${h.summary.slice(0, 600)}`).join('\n'),
    );
  }
  const candidates = [
    ...mentionedPaths(`${ask.title}\n${ask.body}`),
    ...hits.filter((h) => h.kind === 'file').map((h) => h.path),
  ];
  let budget = CONTEXT_BUDGET;
  const shown = new Set<string>();
  for (const path of candidates) {
    if (shown.size >= MAX_CONTEXT_FILES || shown.has(path)) continue;
    const f = await readFileAt(call, path, base).catch(() => null);
    if (!f || f.encoding !== 'utf8' || f.content.length > budget) continue;
    budget -= f.content.length;
    shown.add(path);
    parts.push(`File ${path} at ${base.slice(0, 12)}:\n<<<FILE\n${f.content}\nFILE>>>`);
  }
  return { base, context: parts.join('\n\n') };
}

const WORK_SYSTEM = `You are a careful software engineer working one Ask from a zz Lane (a queue of work in a git repository).
You change code by returning JSON only: {"message": "<commit message>", "files": [{"path": "<repo-relative path>", "content": "<the complete new file content>"}]}.
Give the complete content of every file you change or create (never a diff or an excerpt); "content": null deletes a file.
Change only what the Ask needs. If the Ask needs no code change, return "files": [] and say what you found in "message".`;

export async function workFlow(ctx: FlowContext): Promise<FlowResult> {
  ctx.step('context');
  const { base, context } = await workContext(ctx);
  const messages: ChatMessage[] = [
    { role: 'user', content: `${askText(ctx.ask)}\n\n${context}`.trim() },
  ];
  for (let refused = 0; ; refused++) {
    const { change, failed, rounds } = await writeAndTest(ctx, base, messages);
    if (failed) {
      return answer(ctx, 'deny', {
        result:
          `Tests still fail after ${rounds} round${rounds > 1 ? 's' : ''} ` +
          `(${failed.timed_out ? 'timed out' : `exit ${failed.exit_code}`}); the end of the output:\n` +
          testTail(failed.output, ctx.secrets),
      });
    }
    if (change.files.length === 0) return answer(ctx, 'complete', { result: change.message });
    try {
      return await answer(ctx, 'complete', {
        result: change.message,
        changeset: { base, message: change.message, files: change.files },
      });
    } catch (e) {
      // The changeset policy (a path under .git/, through a symlink, a deletion of nothing, a
      // change of nothing, too large) is the model's to fix, like invalid output: it sees the
      // refusal once, then the Ask goes back with the reason.
      if (refused > 0 || !isZzError(e) || !CHANGE_REFUSED.has(e.code)) throw e;
      messages.push(
        { role: 'assistant', content: JSON.stringify(change) },
        {
          role: 'user',
          content:
            `zz refused this change: ${e.message}\n\n` +
            'Fix the change. Answer again with the complete set of files to change (all of them).',
        },
      );
    }
  }
}

const CHANGE_REFUSED = new Set(['invalid_argument', 'unsafe_content', 'payload_too_large']);

/** The model's change, tested and fed back for up to testRounds rounds with a sandbox. */
async function writeAndTest(
  ctx: FlowContext,
  base: string,
  messages: ChatMessage[],
): Promise<{ change: ChangeShape; failed: TestRun | null; rounds: number }> {
  const rounds = ctx.sandbox ? Math.max(1, ctx.testRounds) : 1;
  let change: ChangeShape | null = null;
  let lastTest: TestRun | null = null;
  for (let round = 1; round <= rounds; round++) {
    ctx.step('model', round > 1 ? `round ${round}` : undefined);
    const r = await ctx.model.object({
      system: WORK_SYSTEM,
      messages,
      schema: changeShape,
      name: 'change',
      signal: ctx.signal,
    });
    change = normaliseChange(r.object);
    lastTest = null;
    if (change.files.length === 0 || !ctx.sandbox) break;
    ctx.step('test', `round ${round}`);
    lastTest = await ctx.sandbox.test(base, change.message, change.files, ctx.signal);
    if (lastTest.ok) break;
    messages.push(
      { role: 'assistant', content: JSON.stringify(change) },
      {
        role: 'user',
        content:
          `The tests failed (${lastTest.timed_out ? 'timed out' : `exit ${lastTest.exit_code}`}). Output:\n${redactSecrets(lastTest.output, ctx.secrets ?? [])}\n\n` +
          'Fix the change. Answer again with the complete set of files to change (all of them, not only the ones you fix now).',
      },
    );
  }
  if (!change) throw new ZzError('internal', 'the model gave no change');
  return { change, failed: lastTest && !lastTest.ok ? lastTest : null, rounds };
}

/** Paths once each (the last one wins), without a leading ./ that git would not accept. */
function normaliseChange(c: ChangeShape): ChangeShape {
  const files = new Map<string, FileChange>();
  for (const f of c.files) {
    const path = f.path.replace(/^(\.\/)+/, '');
    files.set(path, { path, content: f.content });
  }
  return { message: c.message, files: [...files.values()] };
}

// ---------------------------------------------------------------------------------------------
// changeset_review

const REVIEW_SYSTEM = `You review a proposed code change (a changeset) for a zz Lane.
Answer JSON only: {"decision": "grant" | "deny", "reasons": ["..."]}.
Grant when the change does what its Ask asks, is correct and is safe to land; deny otherwise, with reasons the author can act on.`;

export async function reviewFlow(ctx: FlowContext): Promise<FlowResult> {
  const csId = ctx.ask.payload.changeset_id;
  if (typeof csId !== 'string') {
    return answer(ctx, 'deny', { result: 'This review cites no changeset_id; nothing to review.' });
  }
  ctx.step('diff', csId);
  const { files, truncated } = await diffFiles(ctx.call, changesetRef(csId));
  const diff = diffText(files);
  ctx.step('model');
  const r = await ctx.model.object({
    system: REVIEW_SYSTEM,
    messages: [
      {
        role: 'user',
        content: `${askText(ctx.ask)}\n\nThe diff of changeset ${csId}${truncated ? ' (truncated)' : ''}:\n${diff}`,
      },
    ],
    schema: reviewShape,
    name: 'review',
    signal: ctx.signal,
  });
  const reasons = r.object.reasons.map((x) => `- ${x}`).join('\n');
  return answer(ctx, r.object.decision, { result: reasons || r.object.decision });
}

// ---------------------------------------------------------------------------------------------
// submit_changeset

export async function submitFlow(ctx: FlowContext): Promise<FlowResult> {
  const csId = ctx.ask.payload.changeset_id;
  if (typeof csId !== 'string') {
    return answer(ctx, 'deny', { result: 'This Ask cites no changeset_id; nothing to submit.' });
  }
  // Landed by code, on a cue anyone could have posted by hand: only the server's follow-up of
  // a granted review of this very changeset is acted on (commit_changeset also refuses an
  // unreviewed changeset; this says why at once and spends no commit attempt).
  const why = await notFromGrant(ctx, csId);
  if (why) {
    return answer(ctx, 'deny', {
      result: `Not submitted: ${why}. A coordinator may land it by hand once a maintainer grants its review.`,
    });
  }
  ctx.step('commit', csId);
  try {
    const r = await ctx.call('commit_changeset', {
      lane_id: ctx.ask.lane_id,
      ask_id: ctx.ask.ask_id,
      changeset_id: csId,
    });
    // commit_changeset answers the Ask it cites when we hold it.
    const answered = (r.ask as AskView | undefined)?.state === 'answered';
    if (!answered) {
      return answer(ctx, 'complete', {
        result: `committed ${String(r.commit)} to ${String(r.branch)}`,
      });
    }
    ctx.step('answer', `complete: ${String(r.commit).slice(0, 12)} on ${String(r.branch)}`);
    return { outcome: 'complete', changeset_id: csId, follow_ups: [] };
  } catch (e) {
    if (!(isZzError(e) && e.code === 'merge_conflict')) throw e;
    const details = (e.details ?? {}) as { resolve_conflict_ask_id?: string };
    const res = await answer(ctx, 'deny', {
      result: `${e.message}`.slice(0, 4000),
    });
    const rc = details.resolve_conflict_ask_id;
    return rc ? { ...res, follow_ups: [{ ask_id: rc, kind: 'resolve_conflict' }] } : res;
  }
}

/** Why this submit_changeset is not the server's follow-up of a granted review of csId, or null. */
async function notFromGrant(ctx: FlowContext, csId: string): Promise<string | null> {
  const { ask } = ctx;
  if (ask.posted_by !== SERVER_ACTOR || ask.origin?.reason !== 'review granted') {
    return `ask ${ask.ask_id} was posted by ${ask.posted_by ?? 'someone'}, not by zz after a granted review`;
  }
  const r = await ctx.call('ask_get', { lane_id: ask.lane_id, ask_id: ask.origin.ask_id });
  const review = r.ask as AskView | undefined;
  if (
    review?.kind !== 'changeset_review' ||
    review.answer?.outcome !== 'grant' ||
    review.payload.changeset_id !== csId
  ) {
    return `its origin ${ask.origin.ask_id} is not a granted review of ${csId}`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// resolve_conflict

/**
 * Why this resolve_conflict is not the server's, or null. The server posts one only when
 * landing a changeset by id conflicted, which it allows only for a reviewed changeset
 * (changesets.ts), and writes the payload's changeset_id and base itself.
 */
function notFromConflict(ask: AskView): string | null {
  if (ask.posted_by !== SERVER_ACTOR || ask.origin?.reason !== CONFLICT_REASON) {
    return `ask ${ask.ask_id} was posted by ${ask.posted_by ?? 'someone'}, not by zz after a conflicting landing`;
  }
  return null;
}

const RESOLVE_SYSTEM = `You resolve a merge conflict for a zz Lane. For each file you get three versions:
BASE (the common ancestor), OURS (the branch now) and THEIRS (the change being landed).
Return JSON only: {"message": "<commit message>", "files": [{"path": "...", "content": "<the complete merged content>"}]}, one entry for every file listed, keeping the intent of both sides.`;

/** The commit a changeset's ref names now (its oid, parents and message). */
async function changesetCommitOf(
  ctx: FlowContext,
  ref: string,
): Promise<{ oid: string; parents: string[]; message: string }> {
  const r = await ctx.call('git_log', { ref, limit: 1, direction: 'newest' });
  const c = (r.commits as { oid: string; parents: string[]; message: string }[])[0];
  if (!c) throw new ZzError('not_found', `${ref} names no commit`);
  return c;
}

export async function resolveFlow(ctx: FlowContext): Promise<FlowResult> {
  const p = ctx.ask.payload;
  const csId = typeof p.changeset_id === 'string' ? p.changeset_id : null;
  const base = typeof p.base === 'string' ? p.base : null;
  if (!csId || !base) {
    return answer(ctx, 'deny', {
      result: 'This Ask cites no changeset_id and base; nothing to merge.',
    });
  }
  // Its theirs-only files land by the direct form, which needs no review: only the server's
  // own resolve_conflict (posted when landing a reviewed changeset conflicted) is acted on.
  const why = notFromConflict(ctx.ask);
  if (why) {
    return answer(ctx, 'deny', {
      result: `Not merged: ${why}. A coordinator may merge it by hand once a maintainer grants its review.`,
    });
  }
  ctx.step('context', csId);
  // The merge is of the changeset against its own base, read here, never the Ask's word: a
  // base of another's choosing makes the diff (and the files landed) a change nobody reviewed.
  const cs = await changesetCommitOf(ctx, changesetRef(csId));
  if (cs.parents.length !== 1 || cs.parents[0] !== base) {
    return answer(ctx, 'deny', {
      result: `Not merged: this Ask merges ${csId} from base ${base}, but the changeset's commit ${cs.oid} is based on ${cs.parents.join(', ') || 'nothing'}.`,
    });
  }
  // Every read is of that commit, not of the ref, which may move meanwhile (commit_changeset
  // refuses to land a changeset whose ref no longer names the commit it was proposed as).
  const theirsCommit = cs.oid;
  // Merge against the branch as it is now, not as it was when the conflict was found.
  const head = await headCommit(ctx.call);
  const theirs = await diffFiles(ctx.call, theirsCommit, base, 8 * 1024 * 1024);
  const ours = await diffFiles(ctx.call, head, base, 8 * 1024 * 1024);
  if (theirs.truncated || ours.truncated) {
    throw new ZzError('payload_too_large', 'the diffs to merge are too large to resolve here');
  }
  const oursPaths = new Set(ours.files.map((f) => f.path));
  const both = theirs.files.filter((f) => oursPaths.has(f.path));
  const theirsOnly = theirs.files.filter((f) => !oursPaths.has(f.path));

  // Files only the changeset touched land as the changeset has them.
  const files: (FileChange & { encoding?: 'base64' })[] = [];
  for (const f of theirsOnly) {
    const t = await readFileAt(ctx.call, f.path, theirsCommit, 8 * 1024 * 1024);
    files.push(
      t === null
        ? { path: f.path, content: null }
        : {
            path: f.path,
            content: t.content,
            ...(t.encoding === 'base64' ? { encoding: 'base64' as const } : {}),
          },
    );
  }
  let message = `Merge ${csId} onto ${head.slice(0, 12)}`;
  if (both.length) {
    const sections: string[] = [];
    for (const f of both) {
      const [b, o, t] = await Promise.all(
        [base, head, theirsCommit].map((c) => readFileAt(ctx.call, f.path, c, MAX_CONTEXT_FILE)),
      );
      if ([b, o, t].some((x) => x && x.encoding !== 'utf8')) {
        throw new ZzError('conflict', `${f.path} is binary; a person must merge it`);
      }
      const show = (label: string, x: typeof b) =>
        `${label}:\n${!x ? '(file does not exist)' : `<<<FILE\n${x.content}\nFILE>>>`}`;
      sections.push(`File ${f.path}\n${show('BASE', b)}\n${show('OURS', o)}\n${show('THEIRS', t)}`);
    }
    ctx.step('model', `${both.length} file${both.length > 1 ? 's' : ''}`);
    const r = await ctx.model.object({
      system: RESOLVE_SYSTEM,
      // Only what zz derives goes in front of the model (the changeset's reviewed message and
      // the files): an Ask's title and body are anyone's text, whatever posted_by claims.
      messages: [
        {
          role: 'user',
          content: `Merge changeset ${csId} onto ${head}. Its commit message:\n<<<MESSAGE\n${cs.message}\nMESSAGE>>>\n\n${sections.join('\n\n')}`,
        },
      ],
      schema: changeShape,
      name: 'merge',
      signal: ctx.signal,
    });
    const merged = normaliseChange(r.object);
    const wanted = new Set(both.map((f) => f.path));
    const missing = [...wanted].filter((x) => !merged.files.some((f) => f.path === x));
    const extra = merged.files.filter((f) => !wanted.has(f.path)).map((f) => f.path);
    if (missing.length || extra.length) {
      throw new ZzError(
        'invalid_argument',
        `the merge answer must cover exactly the conflicted files (missing: ${missing.join(', ') || 'none'}; unexpected: ${extra.join(', ') || 'none'})`,
      );
    }
    files.push(...merged.files);
    message = merged.message;
  }
  if (files.length === 0) {
    return answer(ctx, 'complete', { result: `changeset ${csId} changes nothing on ${head}` });
  }
  ctx.step(
    'commit',
    `${files.length} file${files.length > 1 ? 's' : ''} onto ${head.slice(0, 12)}`,
  );
  const r = await ctx.call('commit_changeset', {
    lane_id: ctx.ask.lane_id,
    ask_id: ctx.ask.ask_id,
    message,
    files,
    expected_head: head,
  });
  if ((r.ask as AskView | undefined)?.state !== 'answered') {
    return answer(ctx, 'complete', {
      result: `committed ${String(r.commit)} to ${String(r.branch)}`,
    });
  }
  return { outcome: 'complete', changeset_id: csId, follow_ups: [] };
}
