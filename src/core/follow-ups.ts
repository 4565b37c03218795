import type { AskDoc } from '../schema/lane.js';

// The workflow's follow-ups (DESIGN §1), as a pure function of an answer and the state it lands
// on: a completed `work` with a changeset asks for review; a granted review asks for submission;
// a denied review sends the work back. The daemon records them beside the answer (workflow.ts)
// and the Lane fold derives them again from every answer it honours (DESIGN §7: "follow-ups are
// re-derived, never trusted"), so no replica has two for one answer, or none.

/** The actor of what the server posts by itself. */
export const SERVER_ACTOR = 'zz@localhost';

/** The origin reason of the resolve_conflict the server posts when a landing by id conflicts. */
export const CONFLICT_REASON = 'merge conflict at commit time';

/** What an answer says, as the workflow needs it. */
export interface AnswerFacts {
  outcome: 'complete' | 'deny' | 'grant';
  result?: string | null;
  changeset?: { message: string } | null;
}

/** One follow-up, without its id (the daemon draws one; the fold takes the recorded one). */
export interface FollowUpDraft {
  kind: string;
  title: string;
  body: string;
  priority: number;
  payload: Record<string, unknown>;
  origin: { ask_id: string; reason: string };
}

/** The `origin.reason` of each answer follow-up: what marks an ask_post as one. */
export const FOLLOW_UP_REASONS: ReadonlySet<string> = new Set([
  'work completed with a changeset',
  'review granted',
  'review denied',
]);

/**
 * Whether a review of this changeset was granted in the Lane: a `changeset_review` Ask citing
 * it, answered `grant` (only the Lane's maintainers may answer one, DESIGN §3). What landing a
 * changeset by id needs (changesets.ts): without it a coordinator's token — or a model working
 * for one, told so by an Ask anyone posted — could land code nobody reviewed.
 */
export function reviewGranted(
  asks: Iterable<AskDoc>,
  changesetId: string,
  counts: (review: AskDoc) => boolean = () => true,
): boolean {
  for (const a of asks) {
    if (
      a.kind === 'changeset_review' &&
      a.answer?.outcome === 'grant' &&
      a.payload.changeset_id === changesetId &&
      counts(a)
    )
      return true;
  }
  return false;
}

function draft(
  origin: AskDoc,
  kind: string,
  title: string,
  body: string,
  payload: Record<string, unknown>,
  reason: string,
): FollowUpDraft {
  return {
    kind,
    title,
    body,
    priority: origin.priority,
    payload,
    origin: { ask_id: origin.ask_id, reason },
  };
}

/** `ask`: the Ask as it stood before the answer; `askOf` reads the other Asks of its Lane. */
export function deriveFollowUps(
  askOf: (id: string) => AskDoc | undefined,
  ask: AskDoc,
  args: AnswerFacts,
  changesetId: string | null,
): FollowUpDraft[] {
  if (ask.kind === 'work' && args.outcome === 'complete' && changesetId) {
    return [
      draft(
        ask,
        'changeset_review',
        `Review: ${ask.title}`,
        args.changeset?.message ?? '',
        { changeset_id: changesetId, work_ask_id: ask.ask_id },
        'work completed with a changeset',
      ),
    ];
  }
  if (ask.kind !== 'changeset_review') return [];
  // A review posted by hand may cite no changeset: then the follow-ups cite none either
  // (an `undefined` here would differ between the in-memory state and the stored JSON).
  const csId = typeof ask.payload.changeset_id === 'string' ? ask.payload.changeset_id : null;
  const workId = typeof ask.payload.work_ask_id === 'string' ? ask.payload.work_ask_id : null;
  const work = workId ? askOf(workId) : undefined;
  if (args.outcome === 'grant') {
    return [
      draft(
        ask,
        'submit_changeset',
        `Submit: ${work?.title ?? ask.title}`,
        args.result ?? '',
        {
          ...(csId ? { changeset_id: csId } : {}),
          review_ask_id: ask.ask_id,
          ...(workId ? { work_ask_id: workId } : {}),
        },
        'review granted',
      ),
    ];
  }
  if (args.outcome === 'deny') {
    const title = `Rework: ${work?.title ?? ask.title.replace(/^Review: /, '')}`;
    const body =
      `${work?.body ?? ''}\n\nReview of changeset ${csId ?? '(none)'} (denied):\n${args.result ?? ''}`.trim();
    return [
      draft(
        ask,
        'work',
        title,
        body,
        {
          review: args.result ?? '',
          ...(csId ? { previous_changeset_id: csId } : {}),
          review_ask_id: ask.ask_id,
          ...(workId ? { work_ask_id: workId } : {}),
        },
        'review denied',
      ),
    ];
  }
  return [];
}
