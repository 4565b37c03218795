import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sealedJsonText, sealJson } from '../../src/core/json-text.js';
import { testSeed } from '../helpers/seeded.js';
import { jsonValues } from './json-values.js';

// Answers are written by sealedJsonText, which reuses the JSON text of sealed parts (views the read
// caches share). It must write exactly what JSON.stringify does, sealed parts or not.

class Point {
  constructor(
    readonly x: number,
    readonly y: number,
  ) {}
}

/** Seals some objects and arrays of `v`, chosen by `pick`, leaves first. */
function sealSome(v: unknown, pick: () => boolean): void {
  if (v === null || typeof v !== 'object') return;
  for (const x of Object.values(v)) sealSome(x, pick);
  if (pick()) sealJson(v);
}

describe('sealedJsonText', () => {
  it('is JSON.stringify on generated JSON values, with parts sealed at random, twice over', () => {
    const seed = testSeed('sealedJsonText');
    const value = jsonValues({ sparse: true });
    fc.assert(
      fc.property(value, fc.array(fc.boolean(), { minLength: 1, maxLength: 16 }), (v, bits) => {
        if (v === undefined) return; // not an answer: JSON.stringify has no text for it
        let i = 0;
        sealSome(v, () => bits[i++ % bits.length]!);
        // The second time round, sealed parts come from the kept text.
        expect(sealedJsonText(v)).toBe(JSON.stringify(v));
        expect(sealedJsonText(v)).toBe(JSON.stringify(v));
      }),
      { seed, numRuns: 3000 },
    );
  });

  it('leaves values with a JSON form of their own to JSON.stringify', () => {
    const cases: unknown[] = [
      { at: new Date(0), p: new Point(1, 2), m: new Map([[1, 2]]) },
      [undefined, () => 1, Symbol('s'), 1],
      { a: undefined, f: () => 1, s: Symbol('s'), b: 2 },
      { inner: { toJSON: () => ({ replaced: true }) } },
      Object.assign(Object.create(null) as object, { x: 1, '1': 'one' }),
      { 2: 'b', 1: 'a', z: [{}], y: [] },
    ];
    for (const v of cases) expect(sealedJsonText(v)).toBe(JSON.stringify(v));
    expect(() => sealedJsonText({ n: 1n })).toThrow(TypeError);
  });

  it('writes a sealed part once: its text is kept (sealing promises it never changes)', () => {
    const view = sealJson({ ask_id: 'ask-1', state: 'open' });
    const page = { asks: [view], next: null };
    expect(sealedJsonText(page)).toBe('{"asks":[{"ask_id":"ask-1","state":"open"}],"next":null}');
    view.state = 'answered'; // breaks the promise, to see the kept text
    expect(sealedJsonText(page)).toBe('{"asks":[{"ask_id":"ask-1","state":"open"}],"next":null}');
    const unsealed = { ask_id: 'ask-2', state: 'open' };
    expect(sealedJsonText([unsealed])).toBe('[{"ask_id":"ask-2","state":"open"}]');
    unsealed.state = 'answered';
    expect(sealedJsonText([unsealed])).toBe('[{"ask_id":"ask-2","state":"answered"}]');
  });
});
