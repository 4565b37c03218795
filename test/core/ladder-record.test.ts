import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { recordChecker } from '../../src/core/ladder/build-record.js';
import type { RungRecord } from '../../src/core/ladder/ladder-state.js';
import { RUNG_KINDS, rungDoc, type RungGenerator } from '../../src/schema/rung.js';
import { testSeed } from '../helpers/seeded.js';

// A Ladder build checks the records it makes with build-record.ts instead of zod (rungDoc), for
// speed. It must refuse exactly what rungDoc refuses: random records, each field valid or
// broken in a way rungDoc cares about, are judged by both.

const hex = (n: number) => 'a1b2c3d4e5f6'.repeat(11).slice(0, n);
const NONE = Symbol('absent');
/** Mostly a valid value, sometimes a broken one, so that whole records pass often enough. */
const pick = (valid: unknown[], broken: unknown[]) =>
  fc.oneof(
    { arbitrary: fc.constantFrom(...valid), weight: 12 },
    { arbitrary: fc.constantFrom(...broken), weight: 1 },
  );

const record = fc.record({
  path: pick(
    ['src/a.ts', 'dir', '_repo', '_releases/v1.0', '_issues/12', '_changesets/abc'],
    [
      '',
      '_releases/',
      'a//b',
      '../x',
      'a/.git/config',
      'a/b.lock',
      '-x',
      '/abs',
      'a\\b',
      'x\u0001y',
      'a\u202eb',
      `ok/${'y'.repeat(300)}`,
    ],
  ),
  kind: pick([...RUNG_KINDS], ['bogus']),
  title: pick(['T', 'x'.repeat(300), 'é'.repeat(300)], ['', 'x'.repeat(301)]),
  summary: pick(
    ['s', 'x'.repeat(4096), 'é'.repeat(2048), '€'.repeat(1365)],
    ['', 'x'.repeat(4097), 'é'.repeat(2049), '€'.repeat(1366)],
  ),
  detail: pick([NONE, '', 'd', 'x'.repeat(256 * 1024)], ['€'.repeat(87382), 5]),
  symbols: pick(
    [NONE, [], ['a', 'b'], ['x'.repeat(200)], Array(200).fill('s')],
    [[''], ['x'.repeat(201)], Array(201).fill('s'), [7]],
  ),
  anchor: pick(
    [NONE, { commit: hex(40), oid: hex(40) }, { commit: hex(64), oid: hex(64) }],
    [
      { commit: hex(40), oid: 'zz' },
      { commit: hex(41), oid: hex(40) },
      { commit: hex(40), oid: hex(40), extra: 1 },
      { commit: hex(40) },
      'anchor',
    ],
  ),
  inputs_hash: pick([hex(40), hex(128)], [hex(39), hex(129), `G${hex(40)}`]),
  generator: pick(
    [
      NONE,
      { method: 'extractive', version: 'extract-3' },
      { method: 'model', model: 'm', version: 'v' },
    ],
    [
      { method: 'bogus', version: 'v' },
      { method: 'human', version: '' },
      { method: 'model', model: '', version: 'v' },
      { method: 'human', version: 'v', extra: 1 },
    ],
  ),
  stray: pick([NONE], [1]),
});

const builds = fc.record({
  generator: pick(
    [{ method: 'extractive', version: 'extract-3' }],
    [{ method: 'extractive', version: '' }],
  ) as fc.Arbitrary<RungGenerator>,
  actor: pick(
    ['bob@example.com', 'bob@example.com[agent-1]'],
    ['not an actor'],
  ) as fc.Arbitrary<string>,
  writtenAt: pick(['2026-12-01T08:00:00.000Z'], ['yesterday']) as fc.Arbitrary<string>,
});

describe('build-record: the rung schema’s verdict without zod', () => {
  it('agrees with rungDoc on random records', () => {
    const seed = testSeed('ladder-record');
    let accepted = 0;
    fc.assert(
      fc.property(record, builds, (r, b) => {
        const rec = Object.fromEntries(
          Object.entries(r).filter(([, v]) => v !== NONE),
        ) as unknown as RungRecord;
        const want = rungDoc.safeParse({
          ...rec,
          generator: rec.generator ?? b.generator,
          author: b.actor,
          written_at: b.writtenAt,
        }).success;
        if (want) accepted++;
        expect(recordChecker(b)(rec), JSON.stringify(rec).slice(0, 300)).toBe(want);
      }),
      { numRuns: 5000, seed },
    );
    // Both verdicts were met, or the comparison proves little.
    expect(accepted).toBeGreaterThan(200);
  });
});
