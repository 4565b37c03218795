import { layoutProblem } from './validate.js';

// Names a remote holds under refs/zz/, judged before anything of them lands here or is pushed
// there. git keeps refs as files, so `lanes/junk` and `lanes/junk/x` cannot both exist in one
// repository, and anyone who can push to the remote can make it hold either. zz's own layout
// (validate.ts layoutProblem) is free of such conflicts — no Lane id holds a `/` — so only names
// outside it can conflict with ours: those are reported and never kept (fetch skips them,
// git-ports.ts), and a push of ours that one of them blocks is left out, said so, or the atomic
// push would fail every round for every ref.

/** The names of `names` outside zz's layout, each with why. */
export function namesOutsideLayout(
  names: ReadonlyMap<string, string>,
): Array<{ ref: string; commit: string; reason: string }> {
  const out: Array<{ ref: string; commit: string; reason: string }> = [];
  for (const [ref, commit] of names) {
    const reason = layoutProblem(ref);
    if (reason !== null) out.push({ ref, commit, reason });
  }
  return out;
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
