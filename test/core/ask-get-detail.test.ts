import { afterEach, describe, expect, it } from 'vitest';
import { AGENT, ALICE, BOB, call, gitRepo, rejects } from '../helpers/core-fixture.js';

// ask_get with include_dependents / include_history: what one Ask's page needs (what it blocks,
// its own history) in one bounded answer, paged by offset, the same entries lane_get would give.

let done: (() => void) | null = null;
afterEach(() => done?.());

async function setup() {
  const { repo, cleanup } = await gitRepo();
  done = cleanup;
  await call(repo, ALICE, 'lane_propose', { lane_id: 'l', title: 'L' });
  const post = async (title: string, depends_on?: string[]) =>
    (
      await call(repo, ALICE, 'ask_post', {
        lane_id: 'l',
        kind: 'work',
        title,
        ...(depends_on ? { depends_on } : {}),
      })
    ).ask.ask_id as string;
  const hub = await post('hub');
  const other = await post('other');
  const deps: string[] = [];
  for (let i = 0; i < 7; i++) {
    deps.push(await post(`dep ${i}`, i % 2 ? [hub, other] : [hub]));
    if (i === 3) await post('unrelated', [other]);
  }
  for (let i = 0; i < 4; i++) {
    await call(repo, AGENT, 'ask_claim', { lane_id: 'l', ask_id: hub });
    await call(repo, AGENT, 'ask_release', { lane_id: 'l', ask_id: hub });
    await call(repo, AGENT, 'ask_claim', { lane_id: 'l', ask_id: other });
    await call(repo, AGENT, 'ask_release', { lane_id: 'l', ask_id: other });
  }
  return { repo, hub, deps };
}

describe('ask_get with what it blocks and its history', () => {
  it('answers a page of each, in order, and the rest by offset', async () => {
    const { repo, hub, deps } = await setup();
    const bare = await call(repo, BOB, 'ask_get', { lane_id: 'l', ask_id: hub });
    expect(Object.keys(bare).sort()).toEqual(['ask', 'revision']);

    const first = await call(repo, BOB, 'ask_get', {
      lane_id: 'l',
      ask_id: hub,
      include_dependents: true,
      include_history: true,
      limit: 5,
    });
    expect(first.ask).toEqual(bare.ask);
    expect(first.dependents!.map((a) => a.ask_id)).toEqual(deps.slice(0, 5));
    expect(first.next_dependents_offset).toBe(5);
    expect(first.history).toHaveLength(5);
    expect(first.next_history_offset).toBe(5);

    // The rest of each list, one at a time.
    const more = await call(repo, BOB, 'ask_get', {
      lane_id: 'l',
      ask_id: hub,
      include_dependents: true,
      dependents_offset: 5,
    });
    expect(more.dependents!.map((a) => a.ask_id)).toEqual(deps.slice(5));
    expect(more.next_dependents_offset).toBeNull();
    expect(more.history).toBeUndefined();

    // Its history is exactly the Lane's history entries about it (without lane_id too).
    const lane = await call(repo, BOB, 'lane_get', { lane_id: 'l', history_limit: 1000 });
    const about = lane.history.filter((h) => h.ask_id === hub);
    expect(about.map((h) => h.op)).toEqual([
      'ask_post',
      ...Array(4).fill(['ask_claim', 'ask_release']).flat(),
    ]);
    const all = await call(repo, BOB, 'ask_get', {
      ask_id: hub,
      include_history: true,
      history_offset: 0,
      limit: 1000,
    });
    expect(all.history).toEqual(about);
    expect(all.next_history_offset).toBeNull();
    const rest = await call(repo, BOB, 'ask_get', {
      lane_id: 'l',
      ask_id: hub,
      include_history: true,
      history_offset: 5,
    });
    expect([...first.history!, ...rest.history!]).toEqual(about);
    // An Ask nothing depends on.
    const leaf = await call(repo, BOB, 'ask_get', {
      lane_id: 'l',
      ask_id: deps[0]!,
      include_dependents: true,
    });
    expect(leaf.dependents).toEqual([]);
    expect(leaf.next_dependents_offset).toBeNull();
  });

  it('refuses an offset without its list, and a limit out of bounds', async () => {
    const { repo, hub } = await setup();
    await rejects(
      call(repo, BOB, 'ask_get', { lane_id: 'l', ask_id: hub, history_offset: 2 }),
      'invalid_argument',
      /history_offset needs include_history/,
    );
    await rejects(
      call(repo, BOB, 'ask_get', { lane_id: 'l', ask_id: hub, dependents_offset: 2 }),
      'invalid_argument',
      /dependents_offset needs include_dependents/,
    );
    for (const limit of [0, 1001]) {
      await rejects(
        call(repo, BOB, 'ask_get', { lane_id: 'l', ask_id: hub, include_history: true, limit }),
        'invalid_argument',
      );
    }
  });
});
