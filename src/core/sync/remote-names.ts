import { layoutProblem } from './validate.js';

// Names a remote holds under refs/zz/, judged before anything of them lands here or is pushed
// there. git keeps refs as files, so `lanes/junk` and `lanes/junk/x` cannot both exist in one
// repository, and anyone who can push to the remote can make it hold either. zz's own layout
// (validate.ts layoutProblem) is free of such conflicts — no Lane id holds a `/` — so only names
// outside it can conflict with ours: those are reported and never kept (fetch skips them,
// git-ports.ts), and a push of ours that one of them blocks is left out, said so, or the atomic
// push would fail every round for every ref.

/**
 * How many names outside zz's layout a round lists, each with why (report.ts `quarantined`,
 * `kept: false`); the rest are counted (`outside_layout`). Anyone who can push can make such
 * names: 3,000 of them were 3,000 lines of every round's report, every minute in a daemon's log.
 */
export const OUTSIDE_LAYOUT_SHOWN = 10;

/**
 * The first OUTSIDE_LAYOUT_SHOWN names of `names` outside zz's layout (in its order: git
 * lists refs sorted, so each round shows the same), each with why; how many there are in all;
 * and `names` without them.
 */
export function namesOutsideLayout(names: ReadonlyMap<string, string>): {
  shown: Array<{ ref: string; commit: string; reason: string }>;
  count: number;
  inside: Map<string, string>;
} {
  const shown: Array<{ ref: string; commit: string; reason: string }> = [];
  const inside = new Map<string, string>();
  let count = 0;
  for (const [ref, commit] of names) {
    const reason = layoutProblem(ref);
    if (reason === null) inside.set(ref, commit);
    else if (++count <= OUTSIDE_LAYOUT_SHOWN) shown.push({ ref, commit, reason });
  }
  return { shown, count, inside };
}

/**
 * A name of `names` that git could not hold beside `ref`: one of its leading paths
 * (`refs/zz/lanes` for `refs/zz/lanes/web`) or a name under it (`refs/zz/lanes/web/x`).
 */
export function nameTakenBy(ref: string, names: ReadonlyMap<string, string>): string | null {
  for (let i = ref.indexOf('/'); i > 0; i = ref.indexOf('/', i + 1)) {
    if (names.has(ref.slice(0, i))) return ref.slice(0, i);
  }
  const under = ref + '/';
  for (const name of names.keys()) if (name.startsWith(under)) return name;
  return null;
}
