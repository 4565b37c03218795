import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  askAnswer,
  askClaim,
  askPost,
  laneGet,
  lanePropose,
  ZzRepo,
} from '../../src/core/index.js';
import { ZzError } from '../../src/errors.js';
import { LIMITS } from '../../src/schema/limits.js';
import { gitRepo, OWNER } from '../helpers/core-fixture.js';

// A local write whose op the Lane's guarded fold refuses fails, and writes nothing (DESIGN §7:
// the daemon's checks and the fold's guards must agree; when they do not, the write must not
// stand in the log as refused while its caller hears it succeeded). Here the two are made to
// disagree on purpose: the local cap check (lane-guards.ts hasRoom, as asks.ts imports it) is
// removed, while the fold keeps its own (a call inside lane-guards.ts, which the mock does not
// reach). The cap is lowered so a Lane fills in two Asks.
vi.mock('../../src/schema/limits.js', async (importOriginal) => {
  const m = await importOriginal<{ LIMITS: typeof LIMITS }>();
  return { ...m, LIMITS: { ...m.LIMITS, asksPerLane: 2 } };
});
vi.mock('../../src/core/lane-guards.js', async (importOriginal) => ({
  ...(await importOriginal<object>()),
  hasRoom: () => true,
}));

let done: (() => void) | null = null;
afterEach(() => {
  done?.();
  done = null;
});

const refs = (dir: string) =>
  execFileSync('git', ['for-each-ref', '--format=%(refname) %(objectname)'], {
    cwd: dir,
    encoding: 'utf8',
  });

/** The Lane as a process that never read it folds it from git. */
async function cold(dir: string) {
  const repo = await ZzRepo.open(dir, { key: 'local/cold' });
  try {
    const lane = await laneGet(repo, OWNER, { lane_id: 'web' });
    return {
      asks: lane.asks.map((a) => [a.title, a.state]),
      refused: lane.history.filter((h) => h.rejected).length,
    };
  } finally {
    repo.close();
  }
}

describe('a local write the fold refuses', () => {
  it('fails with a clear error and moves no ref: a post past the cap, an answer whose follow-up does not fit', async () => {
    expect(LIMITS.asksPerLane).toBe(2);
    const { repo, dir, cleanup } = await gitRepo();
    done = cleanup;
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: dir, encoding: 'utf8' }).trim();
    await lanePropose(repo, OWNER, { lane_id: 'web', title: 'Web' });
    const w1 = (await askPost(repo, OWNER, { lane_id: 'web', kind: 'work', title: 'w1' })).ask;
    await askPost(repo, OWNER, { lane_id: 'web', kind: 'work', title: 'w2' });
    await askClaim(repo, OWNER, { lane_id: 'web', ask_id: w1.ask_id });
    const before = refs(dir);

    // A third Ask: the fold refuses it (lane_full). Before, the write committed it and then
    // read back an Ask that was never posted (a TypeError).
    const post = askPost(repo, OWNER, { lane_id: 'web', kind: 'work', title: 'w3' });
    await expect(post).rejects.toBeInstanceOf(ZzError);
    await expect(post).rejects.toMatchObject({
      code: 'conflict',
      details: { reason: 'lane_full' },
      message: expect.stringMatching(/ask_post was not written: .*refuses it \(lane_full\)/),
    });
    expect(refs(dir)).toBe(before);

    // A completed changeset asks for a review, a third Ask: the fold refuses the answer. Before,
    // the caller was told it was answered; no changeset ref may move either.
    const answer = askAnswer(repo, OWNER, {
      lane_id: 'web',
      ask_id: w1.ask_id,
      outcome: 'complete',
      changeset: { base: head, message: 'x', files: [{ path: 'x.txt', content: 'x\n' }] },
    });
    await expect(answer).rejects.toMatchObject({
      code: 'conflict',
      details: { reason: 'lane_full' },
    });
    expect(refs(dir)).toBe(before);

    // Writes beside a refused one, in the same group commit, are decided again and stand.
    const [refused, released] = await Promise.allSettled([
      askPost(repo, OWNER, { lane_id: 'web', kind: 'work', title: 'w4' }),
      askAnswer(repo, OWNER, {
        lane_id: 'web',
        ask_id: w1.ask_id,
        outcome: 'deny',
        result: 'not now',
      }),
    ]);
    expect(refused).toMatchObject({ status: 'rejected', reason: { code: 'conflict' } });
    expect(released.status).toBe('fulfilled');
    expect(await cold(dir)).toEqual({
      asks: [
        ['w1', 'answered'],
        ['w2', 'open'],
      ],
      refused: 0,
    });
  });
});
