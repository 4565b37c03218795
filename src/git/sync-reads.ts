import type { CatFile } from './cat-file.js';
import { parseCommit } from './objects.js';

// Reads of commits that `zz sync` makes through the long-lived cat-file instead of a git spawn
// (each spawn costs 10-40 ms on the 2-vCPU VM; a cat-file read ~0.1 ms).

/**
 * Whether `ancestor` is among the first `limit` commits of `descendant`'s history (itself
 * included), walked breadth first through `parentsOf` (one call per generation); null when
 * the walk stopped undecided (past `limit`, or a commit it could not read).
 */
export async function reachesWithinBy(
  parentsOf: (oids: readonly string[]) => Promise<Array<readonly string[] | null>>,
  descendant: string,
  ancestor: string,
  limit: number,
): Promise<boolean | null> {
  if (descendant === ancestor) return true;
  const seen = new Set([descendant]);
  let frontier = [descendant];
  while (frontier.length > 0) {
    if (seen.size > limit) return null;
    const next: string[] = [];
    for (const parents of await parentsOf(frontier)) {
      if (parents === null) return null;
      for (const p of parents) {
        if (p === ancestor) return true;
        if (!seen.has(p)) {
          seen.add(p);
          next.push(p);
        }
      }
    }
    frontier = next;
  }
  return false;
}

/** reachesWithinBy over the repository's commits, one batched cat-file read per generation. */
export function reachesWithin(
  catFile: CatFile,
  descendant: string,
  ancestor: string,
  limit: number,
): Promise<boolean | null> {
  return reachesWithinBy(
    async (oids) =>
      (await Promise.all(catFile.readMany(oids))).map((o) =>
        o?.type === 'commit' ? parseCommit(o.data).parents : null,
      ),
    descendant,
    ancestor,
    limit,
  );
}

/** The raw objects (headers and message) of the commits among `oids`, by oid. */
export async function rawCommits(
  catFile: CatFile,
  oids: readonly string[],
): Promise<Map<string, Buffer>> {
  const objs = await Promise.all(catFile.readMany(oids));
  const out = new Map<string, Buffer>();
  objs.forEach((o, i) => {
    if (o?.type === 'commit') out.set(oids[i]!, o.data);
  });
  return out;
}
