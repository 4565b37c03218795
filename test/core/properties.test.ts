import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { FakeClock, gitRepo, memoryRepo } from '../helpers/core-fixture.js';
import { MEMORY_BASE } from './properties/model.js';
import { actionArb } from './properties/actions.js';
import { setup, runAll } from './properties/runner.js';

// Random sequences of tool calls by random actors, run through runTool exactly as the
// transports call it, against a small model of the rules (DESIGN §1, §3) kept here. After every
// step the repository must agree with the model: who holds what, what is claimable, which calls
// were allowed, what history records, and that the stored tree is the fold of the op log.
// The model, the actions and the runner: properties/.

// One seed per run, printed so a failure can be replayed: ZZ_SEED=<seed> npx vitest run …
const SEED = process.env.ZZ_SEED ? Number(process.env.ZZ_SEED) : Date.now() % 2 ** 31;
console.log(`properties: seed ${SEED} (replay with ZZ_SEED=${SEED})`);

describe('properties of random tool-call sequences', () => {
  it('on a memory repo', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(actionArb, { minLength: 1, maxLength: 50, size: 'max' }),
        async (actions) => {
          const { repo, clock } = await memoryRepo();
          const r = await setup(repo, clock, MEMORY_BASE);
          await runAll(r, actions, () => true);
        },
      ),
      { numRuns: 80, seed: SEED },
    );
  });

  it('on a git repo', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(actionArb, { minLength: 1, maxLength: 30, size: 'max' }),
        async (actions) => {
          const clock = new FakeClock();
          const { repo, dir, cleanup } = await gitRepo(clock);
          try {
            const head = execFileSync('git', ['rev-parse', 'HEAD'], {
              cwd: dir,
              encoding: 'utf8',
            }).trim();
            const r = await setup(repo, clock, head);
            await runAll(r, actions, (i) => i % 5 === 4);
          } finally {
            cleanup();
          }
        },
      ),
      { numRuns: 5, seed: SEED },
    );
  });
});
