import type { Store } from './store.js';

// Where an entity's tree has drifted from its fold (DESIGN §7: the state is the fold of the
// log, never the ref's tree). Another machine's commit may carry files its refused ops wrote,
// or extra ones beside a permitted op; a codec with files() (the Ladder) has every such file
// rewritten by the next local commit (entity.ts) or sync merge (core/sync/merge.ts).

/** The part of an EntityCodec (entity.ts) that says which files a state materialises. */
export interface FileCodec<S> {
  file(state: S, path: string): string | null;
  files?(state: S): Iterable<string>;
}

/**
 * The files where `revision`'s tree differs from `state` (codec.files; none without it): one
 * read of the whole tree, once per tip this process did not write.
 */
export async function treeDriftOf<S>(
  store: Store,
  codec: FileCodec<S>,
  revision: string,
  state: S,
): Promise<string[]> {
  if (!codec.files) return [];
  return driftedFiles(codec, state, await store.readAll(revision));
}

/** The files where `tree` (path → text) differs from what `state` materialises (codec.files). */
export function driftedFiles<S>(
  codec: FileCodec<S>,
  state: S,
  tree: ReadonlyMap<string, string>,
): string[] {
  const drift: string[] = [];
  for (const [path, text] of tree) if (codec.file(state, path) !== text) drift.push(path);
  for (const path of codec.files?.(state) ?? []) if (!tree.has(path)) drift.push(path);
  return drift;
}
