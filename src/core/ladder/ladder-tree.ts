import { z } from 'zod';
import { ZzError } from '../../errors.js';
import { cursorCodec } from '../../schema/cursor.js';
import { PAGE } from '../../schema/limits.js';
import {
  MAX_RUNG_PATH_BYTES,
  validateRungPath,
  type Rung,
  type RungAnchor,
  type RungKind,
} from '../../schema/rung.js';
import { pageEnd, type Seq } from '../paging.js';
import type { ZzRepo } from '../zz-repo.js';
import { headIndex, isStale, readLadder } from './ladder.js';
import type { LadderState } from './ladder-state.js';

// ladder_tree (DESIGN §3, §4): the whole Ladder in one call when its JSON fits PAGE.maxBytes
// (4 MiB, the one page budget of every paged read: zz's own Ladder, built extractively, takes
// 447 bytes a rung on average (603 rungs, 263 KiB; 2026-12-02), so some 9,000 rungs, a
// repository of about 8,000 files, still answer in one call), else a page and a next_cursor. The cursor is the last path shown, not a position: rungs written or
// removed between pages neither skip nor repeat one that is still there. Paths are unique in
// a Ladder, so the path alone is a total order (no tiebreak needed).
//
// Tree order: by path with '/' before every other character, so a folder's rungs come right
// after it ('src', 'src/a.ts', …, then 'src-old'): `under` is then one range of the sorted
// list, found by binary search. Rung paths hold no control characters (rungPathProblem), so
// '\0' can stand for '/' in the sort key.

export type TreeRung = {
  path: string;
  kind: RungKind;
  title: string;
  summary: string;
  anchor: RungAnchor | null;
  stale: boolean;
};

export interface LadderTreeArgs {
  /** Only the rung at this path and those below it. */
  under?: string;
  /** At most this many rungs (default: as many as fit the byte budget). */
  limit?: number;
  /** next_cursor of the previous page. */
  cursor?: string;
}

export interface LadderTreePage {
  rungs: TreeRung[];
  revision: string | null;
  /** Null when this page ends the listing. */
  next_cursor: string | null;
  /** How many rungs the listing (under `under`) holds, over all pages. */
  total: number;
}

const treeKey = (path: string): string => path.replaceAll('/', '\0');

/**
 * Longest cursor ladder_tree issues: two paths of MAX_RUNG_PATH_BYTES (each at most twice that
 * as JSON, every `"` escaped) in base64url JSON.
 */
export const LADDER_TREE_CURSOR_MAX = Math.ceil(((4 * MAX_RUNG_PATH_BYTES + 64) * 4) / 3);

// [last path shown, the listing's `under`]: a cursor is only good for the listing it came from.
const treeCursor = cursorCodec(
  'ladder_tree',
  z.tuple([z.string().max(MAX_RUNG_PATH_BYTES), z.string().max(MAX_RUNG_PATH_BYTES).nullable()]),
  { maxLength: LADDER_TREE_CURSOR_MAX },
);

interface Sorted {
  keys: string[];
  rungs: Rung[];
}

// Sorted once per Ladder state (a snapshot's state never changes after it is read): paging
// through one revision sorts it once.
const sortedOf = new WeakMap<LadderState, Sorted>();

function sorted(state: LadderState): Sorted {
  let s = sortedOf.get(state);
  if (!s) {
    const pairs = [...state.values()].map((r) => [treeKey(r.path), r] as const);
    pairs.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
    s = { keys: pairs.map((p) => p[0]), rungs: pairs.map((p) => p[1]) };
    sortedOf.set(state, s);
  }
  return s;
}

/** The index of the first key >= `key` (or > `key` when `after`). */
function bound(keys: readonly string[], key: string, after: boolean): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const k = keys[mid]!;
    if (k < key || (after && k === key)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const treeRung = (r: Rung, stale: boolean): TreeRung => ({
  path: r.path,
  kind: r.kind,
  title: r.title,
  summary: r.summary,
  anchor: r.anchor ?? null,
  stale,
});

/**
 * One page of the Ladder in tree order: every rung when they fit `maxBytes` of JSON (and
 * `limit`), else the first that do and a next_cursor. `maxBytes` is PAGE.maxBytes but for tests
 * of the cut itself.
 */
export async function ladderTree(
  repo: ZzRepo,
  args: LadderTreeArgs = {},
  maxBytes: number = PAGE.maxBytes,
): Promise<LadderTreePage> {
  const under = args.under === undefined ? null : validateRungPath(args.under);
  const after = args.cursor === undefined ? null : treeCursor.decode(args.cursor, 'cursor');
  if (after && after[1] !== under) {
    throw new ZzError(
      'invalid_argument',
      `cursor is from a listing ${after[1] === null ? 'of the whole Ladder' : 'under another path'}; pass the same under as the first page`,
      { field: 'cursor' },
    );
  }
  const snap = await readLadder(repo);
  const { keys, rungs } = sorted(snap.state);
  const lo = under === null ? 0 : bound(keys, treeKey(under), false);
  const hi = under === null ? keys.length : bound(keys, treeKey(under) + '\x01', false);
  const start = after ? Math.max(lo, bound(keys, treeKey(after[0]), true)) : lo;
  // Sized as the page will answer them, stale as false (its longest form): only this page's
  // rungs are sized, and only theirs have stale worked out (a release rung's is a git read).
  const view: Seq<TreeRung> = {
    length: hi - start,
    at: (i) => (i < hi - start ? treeRung(rungs[start + i]!, false) : undefined),
  };
  const end = start + pageEnd(view, 0, args.limit, maxBytes);
  const index = await headIndex(repo);
  const page = rungs.slice(start, end);
  const stale = await Promise.all(page.map((r) => isStale(repo, index, r)));
  return {
    rungs: page.map((r, i) => treeRung(r, stale[i]!)),
    revision: snap.revision,
    next_cursor: end < hi ? treeCursor.encode([rungs[end - 1]!.path, under]) : null,
    total: hi - lo,
  };
}
