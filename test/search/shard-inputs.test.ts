import { describe, expect, it, onTestFinished } from 'vitest';
import { syntheticRungs } from '../../bench/search-corpus.js';
import { LadderSearch, type IndexRung } from '../../src/search/index.js';
import { tempDir } from '../helpers/temp-dirs.js';

// What a shard is keyed on besides its ladder oid (`inputs`, opaque to the search layer: the
// Ladder fold's role key, core/ladder/role-key.ts), and a rebuild that never leaves a repo
// without entries. The real-repository cases are in search-roles.test.ts.

const oid = (n: number): string => n.toString(16).padStart(40, '0');
const RUNGS: IndexRung[] = syntheticRungs(1, 50);
const WORD = RUNGS[0]!.title.split(/\W+/)[0]!;

function open(dir: string): LadderSearch {
  const s = new LadderSearch({ cacheDir: dir, persistDelayMs: 0 });
  onTestFinished(() => s.close());
  return s;
}

const count = (s: LadderSearch) =>
  s.search({ query: WORD, repo: 'acme/api', limit: 50 }).hits.length;

describe('shard inputs', () => {
  it('are persisted with the shard and checked before it is loaded', async () => {
    const dir = tempDir('zz-shard-inputs-');
    const a = open(dir);
    await a.setRepo('acme/api', oid(1), () => ({ rungs: RUNGS, inputs: 'k1' }));
    expect(a.inputsOf('acme/api')).toBe('k1');
    await a.flush();

    const seen: Array<string | null> = [];
    const b = open(dir);
    const kept = await b.setRepo('acme/api', oid(1), [], {
      check: async (held) => {
        seen.push(held);
        return held === 'k1' ? 'k1+' : null;
      },
    });
    expect(seen).toEqual(['k1']);
    expect(kept).toMatchObject({ source: 'cache', docs: RUNGS.length });
    // The check's answer is what the shard is keyed with from now on.
    expect(b.inputsOf('acme/api')).toBe('k1+');

    const c = open(dir);
    const rebuilt = await c.setRepo(
      'acme/api',
      oid(1),
      () => ({ rungs: RUNGS.slice(0, 3), inputs: 'k2' }),
      { check: async () => null },
    );
    expect(rebuilt).toMatchObject({ source: 'built', reason: 'inputs_changed', docs: 3 });
    expect(c.inputsOf('acme/api')).toBe('k2');
    // A held shard whose inputs no longer hold is rebuilt too (not answered from memory).
    const again = await c.setRepo('acme/api', oid(1), () => ({ rungs: RUNGS, inputs: 'k3' }), {
      check: async () => null,
    });
    expect(again).toMatchObject({ source: 'built', docs: RUNGS.length });
    // A diff carries the inputs it was computed under; setInputs re-keys in memory.
    await c.applyDiff('acme/api', oid(2), { remove: [RUNGS[0]!.path], inputs: 'k4' });
    expect(c.inputsOf('acme/api')).toBe('k4');
    expect(c.setInputs('acme/api', oid(1), 'stale')).toBe(false);
    expect(c.setInputs('acme/api', oid(2), 'k5')).toBe(true);
    expect(c.inputsOf('acme/api')).toBe('k5');
  });

  it('a rebuild keeps the old entries searchable until the new shard replaces them', async () => {
    const s = open(tempDir('zz-shard-rebuild-'));
    await s.setRepo('acme/api', oid(1), RUNGS);
    const before = count(s);
    expect(before).toBeGreaterThan(0);
    let during = -1;
    const r = await s.setRepo(
      'acme/api',
      oid(1),
      async () => {
        during = count(s);
        return RUNGS.slice(1);
      },
      { rebuild: true },
    );
    expect(r).toMatchObject({ source: 'built', docs: RUNGS.length - 1 });
    expect(during).toBe(before);
  });
});
