import { randomBytes } from 'node:crypto';
import type { AskDoc } from '../schema/lane.js';
import type { AskPostSpec, LaneState } from './lane-state.js';
import { SERVER_ACTOR } from './zz-repo.js';

// The workflow the server drives between Asks (DESIGN §1): a completed `work` with a changeset
// asks for review; a granted review asks for submission; a denied review sends the work back.
// Follow-ups are ask_post ops decided with the answer that causes them and land in its commit.

export { WORKFLOW_KINDS } from './kinds.js';

export const newAskId = (): string => 'ask-' + randomBytes(5).toString('hex');

/** What an answer says, as the workflow needs it. */
export interface AnswerFacts {
  outcome: 'complete' | 'deny' | 'grant';
  result?: string;
  changeset?: { message: string };
}

function followUp(
  s: LaneState,
  origin: AskDoc,
  kind: string,
  title: string,
  body: string,
  payload: Record<string, unknown>,
  reason: string,
): AskPostSpec {
  const askId = newAskId();
  return {
    op: 'ask_post',
    summary: `ask_post ${askId} (${kind}) follows ${origin.ask_id}`,
    args: {
      lane_id: s.lane!.lane_id,
      kind,
      title,
      body,
      priority: origin.priority,
      depends_on: [],
      payload,
      posted_by: SERVER_ACTOR,
      origin: { ask_id: origin.ask_id, reason },
    },
    out: { ask_id: askId },
  };
}

export function followUpsFor(
  s: LaneState,
  ask: AskDoc,
  args: AnswerFacts,
  changesetId: string | null,
): AskPostSpec[] {
  if (ask.kind === 'work' && args.outcome === 'complete' && changesetId) {
    return [
      followUp(
        s,
        ask,
        'changeset_review',
        `Review: ${ask.title}`,
        args.changeset?.message ?? '',
        { changeset_id: changesetId, work_ask_id: ask.ask_id },
        'work completed with a changeset',
      ),
    ];
  }
  if (ask.kind === 'changeset_review') {
    // A review posted by hand may cite no changeset: then the follow-ups cite none either
    // (an `undefined` here would differ between the in-memory state and the stored JSON).
    const csId = typeof ask.payload.changeset_id === 'string' ? ask.payload.changeset_id : null;
    const workId = typeof ask.payload.work_ask_id === 'string' ? ask.payload.work_ask_id : null;
    const work = workId ? s.asks.get(workId) : undefined;
    if (args.outcome === 'grant') {
      return [
        followUp(
          s,
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
        followUp(
          s,
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
  }
  return [];
}
