import { sh } from '../helpers/temp-repo.js';
import { OWNER, type WebDaemon } from './harness.js';

// A small, realistic Lane for the browser tests and screenshots: Asks in every state, a
// dependency, a claim with a lease and an answer carrying a changeset.

export const AGENT = 'owner@example.com[claude]';

export interface Seeded {
  owner: string;
  agent: string;
  ids: Record<'board' | 'review' | 'docs' | 'bench' | 'fix', string>;
}

export async function seedLane(w: WebDaemon): Promise<Seeded> {
  const owner = await w.token(OWNER);
  const agent = await w.token(AGENT, 'claude');
  const post = async (title: string, extra: Record<string, unknown> = {}) =>
    (
      (await w.call(owner, 'ask_post', { lane_id: 'web', kind: 'work', title, ...extra })).ask as {
        ask_id: string;
      }
    ).ask_id;
  await w.call(owner, 'lane_propose', {
    lane_id: 'web',
    title: 'Web dashboard',
    description: 'The dashboard people use to watch their agents.',
    ask_kinds: { review: 'member' },
  });
  const fix = await post('Fix the lease countdown rounding', { priority: 0 });
  const board = await post('Lanes board with live updates', {
    priority: 1,
    body: 'Columns by state; a change appears within a second.',
    payload: { files: ['src/web/assets/board.js'], estimate: 'S' },
  });
  const review = await post('Review the board', { kind: 'review', depends_on: [board] });
  const docs = await post('Screenshots in the README', { priority: 3, depends_on: [board] });
  const bench = await post('Measure first paint of 5,000 Asks', { priority: 2 });
  await w.call(agent, 'ask_claim', { lane_id: 'web', ask_id: board });
  await w.call(owner, 'ask_claim', { lane_id: 'web', ask_id: bench, lease_seconds: 900 });
  await w.call(agent, 'ask_claim', { lane_id: 'web', ask_id: fix });
  const base = sh(w.dir, 'rev-parse', 'HEAD');
  await w.call(agent, 'ask_answer', {
    lane_id: 'web',
    ask_id: fix,
    outcome: 'complete',
    result: 'Rounded to whole seconds; added a test.',
    changeset: {
      base,
      message: 'Round the lease countdown to whole seconds',
      files: [
        { path: 'README.md', content: '# demo\n\nA demo repository, now with a dashboard.\n' },
        { path: 'src/lease.js', content: 'export const left = (ms) => Math.round(ms / 1000);\n' },
      ],
    },
  });
  return { owner, agent, ids: { board, review, docs, bench, fix } };
}
