import type { AskDoc } from '../schema/lane.js';
import { randomHex } from '../store/index.js';
import { deriveFollowUps, SERVER_ACTOR, type AnswerFacts } from './follow-ups.js';
import type { AskPostSpec, LaneState } from './lane-state.js';

// The workflow the server drives between Asks (DESIGN §1), as the daemon records it: the
// follow-ups of an answer (follow-ups.ts) are ask_post ops decided with the answer and landing
// in its commit, their ids in the answer's `out.follow_ups`. The fold derives the same Asks
// from the answer itself and only recognises these records (lane-state.ts).

export { WORKFLOW_KINDS } from './kinds.js';
export type { AnswerFacts } from './follow-ups.js';

export const newAskId = (): string => 'ask-' + randomHex(5);

export function followUpsFor(
  s: LaneState,
  ask: AskDoc,
  args: AnswerFacts,
  changesetId: string | null,
): AskPostSpec[] {
  return deriveFollowUps((id) => s.asks.get(id), ask, args, changesetId).map((d) => {
    const askId = newAskId();
    return {
      op: 'ask_post',
      summary: `ask_post ${askId} (${d.kind}) follows ${d.origin.ask_id}`,
      args: {
        lane_id: s.lane!.lane_id,
        kind: d.kind,
        title: d.title,
        body: d.body,
        priority: d.priority,
        depends_on: [],
        payload: d.payload,
        posted_by: SERVER_ACTOR,
        origin: d.origin,
      },
      out: { ask_id: askId },
    };
  });
}
