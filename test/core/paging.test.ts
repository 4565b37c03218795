import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonBytes } from '../../src/core/paging.js';
import { PAGE } from '../../src/schema/limits.js';
import { ALICE, BOB, call, memoryRepo } from '../helpers/core-fixture.js';
import { testSeed } from '../helpers/seeded.js';
import { jsonValues } from './json-values.js';

// Pages are cut by the JSON size of what they hold. jsonBytes sums it without building the
// JSON; it must answer exactly what JSON.stringify's UTF-8 bytes are, for every value a
// document, an op or a history entry can hold, and for the odd ones too.

const bytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v) ?? '', 'utf8');

class Point {
  constructor(
    readonly x: number,
    readonly y: number,
  ) {}
}

describe('jsonBytes', () => {
  it('is the UTF-8 length of JSON.stringify on generated JSON values', () => {
    const seed = testSeed('jsonBytes');
    const value = jsonValues();
    fc.assert(
      fc.property(value, (v) => {
        if (v === undefined) return;
        expect(jsonBytes(v)).toBe(bytes(v));
      }),
      { seed, numRuns: 3000 },
    );
  });

  it('measures values with a JSON form of their own as JSON does', () => {
    const cases: unknown[] = [
      { at: new Date(0), p: new Point(1, 2), m: new Map([[1, 2]]) },
      [undefined, () => 1, Symbol('s'), 1],
      { a: undefined, f: () => 1, s: Symbol('s'), b: 2 },
      { toJSON: () => ({ replaced: true }) },
      Object.assign(Object.create(null) as object, { x: 1, '1': 'one' }),
      { 2: 'b', 1: 'a', z: [{}], y: [] },
    ];
    for (const v of cases) expect(jsonBytes(v)).toBe(bytes(v));
  });
});

describe('lane_get pages of a Lane that changes', () => {
  it('cut at the byte budget where sizing the current documents afresh would, after each write', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'l', title: 'L' });
    // ~61 KB Asks: about 68 fit in a page of PAGE.maxBytes.
    const ids: string[] = [];
    for (let i = 0; i < 75; i++) {
      const r = await call(repo, ALICE, 'ask_post', {
        lane_id: 'l',
        kind: 'work',
        title: `t${i}`,
        body: 'b'.repeat(60_000),
      });
      ids.push(r.ask.ask_id);
    }
    const expected = async (): Promise<number> => {
      const docs = [...(await repo.lane('l').read()).state.asks.values()];
      let sum = 0;
      for (let i = 0; i < docs.length; i++) {
        sum += bytes(docs[i]);
        if (sum > PAGE.maxBytes && i > 0) return i;
      }
      return docs.length;
    };
    const got = async () => (await call(repo, BOB, 'lane_get', { lane_id: 'l' })).asks.length;
    const first = await got();
    expect(first).toBe(await expected());
    expect(first).toBeLessThan(75);
    // Answers with a long result grow Asks inside the page: it holds fewer of them each time.
    for (const [n, id] of [ids[3]!, ids[40]!].entries()) {
      await call(repo, BOB, 'ask_claim', { lane_id: 'l', ask_id: id });
      await call(repo, BOB, 'ask_answer', {
        lane_id: 'l',
        ask_id: id,
        outcome: 'complete',
        result: 'r'.repeat(200_000),
      });
      const now = await got();
      expect(now).toBe(await expected());
      expect(now).toBeLessThan(first - 2 * n);
    }
  });
});
