import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { commitOps, formatOpMessage, type OpRecord } from '../../src/store/index.js';
import { ALICE, call, gitRepo } from '../helpers/core-fixture.js';
import { testSeed } from '../helpers/seeded.js';

// Parsed ops keep one copy of what they repeat (actors, replica ids, a commit's time, empty
// payloads and lists): the values are exactly what the message records, only shared.

const envelope = fc.record({
  id: fc.stringMatching(/^[0-9a-f]{10}$/),
  actor: fc.constantFrom('a@example.com', 'b@example.com'),
  lamport: fc.nat(),
  time: fc.constantFrom('2026-12-01T10:00:00.000Z', '2026-12-01T10:00:01.000Z'),
  replica: fc.option(fc.constantFrom('0123456789abcdef', 'fedcba9876543210'), { nil: undefined }),
  op: fc.constantFrom('ask_post', 'ask_claim', 'x'),
  args: fc.dictionary(
    fc.constantFrom('posted_by', 'payload', 'depends_on', 'title', 'n', 'nested'),
    fc.oneof(
      fc.constantFrom('a@example.com', 'b@example.com', '', {}, [], null),
      fc.string(),
      fc.integer(),
      fc.constant({ k: {} }),
      fc.constant([[]]),
    ),
  ),
  out: fc.option(fc.dictionary(fc.constantFrom('ask_id', 'holder'), fc.string()), {
    nil: undefined,
  }),
});

describe('ops parsed from a commit message', () => {
  it('hold exactly the values the message records', () => {
    const seed = testSeed('op values');
    fc.assert(
      fc.property(fc.array(envelope, { maxLength: 6 }), (drafts) => {
        const ops = drafts.map((d) => JSON.parse(JSON.stringify(d)) as OpRecord);
        const message = formatOpMessage('test', ops);
        const got = commitOps(message).ops;
        expect(JSON.stringify(got)).toBe(JSON.stringify(ops));
        expect(got).toEqual(ops);
      }),
      { seed, numRuns: 500 },
    );
  });

  it('share one frozen empty payload and dependency list across commits', async () => {
    const { repo, cleanup } = await gitRepo();
    try {
      await call(repo, ALICE, 'lane_propose', { lane_id: 'feat', title: 'Feature' });
      for (let i = 0; i < 3; i++) {
        await call(repo, ALICE, 'ask_post', {
          lane_id: 'feat',
          kind: 'work',
          title: `t${i}`,
          payload: {},
          depends_on: [],
        });
      }
      const posts = (await repo.store.history('refs/zz/lanes/feat'))
        .flatMap((c) => c.ops)
        .filter((o) => o.op === 'ask_post');
      expect(posts).toHaveLength(3);
      const [a, b, c] = posts as [OpRecord, OpRecord, OpRecord];
      expect(a.args.payload).toEqual({});
      expect(b.args.payload).toBe(a.args.payload);
      expect(c.args.depends_on).toBe(a.args.depends_on);
      expect(Object.isFrozen(a.args.payload)).toBe(true);
      expect(Object.isFrozen(a.args.depends_on)).toBe(true);
    } finally {
      cleanup();
    }
  });
});
