import type MiniSearch from 'minisearch';
import { buildIndex, MINI_OPTIONS } from '../../src/search/shard-store.js';
import type { ShardDoc } from '../../src/search/shard-file.js';
import { prng } from '../helpers/seeded.js';

// A seeded corpus of rung-like documents for the direct tests of the search parts.

const WORDS =
  'parse config retry timeout json request response handler stream buffer cache index shard router token query cursor ladder rung summary symbol commit branch merge fetch push remote'.split(
    ' ',
  );
const KINDS = ['file', 'directory', 'release', 'changeset'];

/** The tests' one seeded PRNG (mulberry32), here to vary a corpus. */
export const rng = prng;

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
