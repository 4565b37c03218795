import type MiniSearch from 'minisearch';
import { buildIndex, MINI_OPTIONS } from '../../src/search/shard-store.js';
import type { ShardDoc } from '../../src/search/shard-file.js';

// A seeded corpus of rung-like documents for the direct tests of the search parts.

const WORDS =
  'parse config retry timeout json request response handler stream buffer cache index shard router token query cursor ladder rung summary symbol commit branch merge fetch push remote'.split(
    ' ',
  );
const KINDS = ['file', 'directory', 'release', 'changeset'];

/** mulberry32: small, seeded, good enough to vary a corpus. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function corpus(seed: number, n: number): ShardDoc[] {
  const r = rng(seed);
  const pick = () => WORDS[Math.floor(r() * WORDS.length)]!;
  const docs: ShardDoc[] = [];
  for (let i = 0; i < n; i++) {
    const words = Array.from({ length: 3 + Math.floor(r() * 12) }, pick);
    const a = pick();
    const b = pick();
    docs.push({
      path: `src/${a}/${b}-${i}.ts`,
      kind: KINDS[Math.floor(r() * KINDS.length)]!,
      title: `${a} ${b}`,
      summary: words.join(' ') + '.',
      symbols: [`${a}${b[0]!.toUpperCase()}${b.slice(1)}`, pick()],
    });
  }
  return docs;
}

export function index(docs: ShardDoc[]): MiniSearch<ShardDoc> {
  return buildIndex(docs);
}

export { MINI_OPTIONS };
