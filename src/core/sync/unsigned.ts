import { readCommit, verifyCommitBody } from '../../git/index.js';
import { sliceOf, type Seq } from '../paging.js';
import type { ZzRepo } from '../zz-repo.js';
import { isActorKey } from '../config-state.js';
import { parseZzCommit } from './validate.js';

// Unsigned ops flagged (DESIGN §7): in a repository that does not require signatures, an op
// that came from another replica and whose commit is not signed by a key of its actor is still
// folded, but every read that lists it (lane_get history, lane_events) marks it `unsigned`, so
// people can see what they are trusting. Ops this clone wrote are not marked (their replica id
// is this clone's); ops that name no replica are (nobody can say where they came from).

/** Per commit: who signed it (an OpenSSH key line) and each op's actor and replica. */
interface CommitFacts {
  signer: string | null;
  ops: Map<number, { actor: string; replica: string | undefined }>;
}

// Commits never change: their facts are cached by object id, per repository (bounded, oldest
// dropped first). The cache is read synchronously on the hot path: lane_get lists thousands of
// history entries, and an await per entry cost more than the rest of the read.
const MAX_CACHED = 20_000;
const factsByRepo = new Map<string, Map<string, CommitFacts | null>>();
let cached = 0;

function cacheOf(gitdir: string): Map<string, CommitFacts | null> {
  let m = factsByRepo.get(gitdir);
  if (!m) factsByRepo.set(gitdir, (m = new Map()));
  return m;
}

async function loadFacts(repo: ZzRepo, oid: string): Promise<void> {
  const g = repo.git!;
  const c = await readCommit(g.catFile, oid);
  let out: CommitFacts | null = null;
  if (c) {
    const parsed = parseZzCommit({ oid, parents: c.parents, message: c.message });
    out = {
      signer: verifyCommitBody(c.raw),
      ops: new Map(parsed.ops.map((o) => [o.lamport, { actor: o.actor, replica: o.replica }])),
    };
  }
  if (cached >= MAX_CACHED) {
    // Drop the oldest repository's oldest entry (insertion order).
    for (const m of factsByRepo.values()) {
      const first = m.keys().next();
      if (!first.done) {
        m.delete(first.value);
        cached--;
        break;
      }
    }
  }
  const m = cacheOf(g.gitdir);
  if (!m.has(oid)) cached++;
  m.set(oid, out);
}

type Entry = { revision: string | null; actor: string; lamport: number; unsigned?: true };

/**
 * Returns `entries` with `unsigned: true` on each op from another replica whose commit is not
 * signed by a key of its actor (keys as refs/zz/config holds them now). Entries are copied,
 * never changed in place (history entries are cached). Repositories that require signatures
 * never hold such ops (they are quarantined on import), and memory repos have no commits.
 */
export async function markUnsigned<E extends Entry>(
  repo: ZzRepo,
  entries: readonly E[],
  foreign?: ReadonlySet<string>,
): Promise<E[]> {
  if (!repo.git || entries.length === 0) return entries.slice();
  const facts = cacheOf(repo.git.gitdir);
  // Commits not seen yet, read side by side (the cat-file reader pipelines them). With
  // `foreign` (foreignRevisions of the log), commits holding only this clone's ops are never
  // read: a restarted daemon's first lane_get of a 5,000-Ask Lane read and parsed every commit.
  const missing = new Set<string>();
  for (const e of entries)
    if (e.revision !== null && !facts.has(e.revision) && (!foreign || foreign.has(e.revision)))
      missing.add(e.revision);
  if (missing.size > 0) await Promise.all([...missing].map((oid) => loadFacts(repo, oid)));
  const config = (await repo.config.read()).state;
  const local = repo.store.replica;
  const out = entries.slice();
  for (let i = 0; i < out.length; i++) {
    const e = out[i]!;
    if (e.revision === null || (foreign && !foreign.has(e.revision))) continue;
    const f = facts.get(e.revision);
    const op = f?.ops.get(e.lamport);
    if (!f || !op || op.actor !== e.actor) continue; // a derived entry or a notice
    if (op.replica !== undefined && op.replica === local) continue;
    if (isActorKey(config, op.actor, f.signer)) continue;
    out[i] = { ...e, unsigned: true };
  }
  return out;
}

// Marked pages by the history array they were cut from (a Lane state's history view is cached
// and never changes) and the config state they were judged against: a warm lane_get of a large
// Lane answers its page without walking every entry again.
const pageMemo = new WeakMap<Seq<object>, Map<string, { config: object; out: unknown[] }>>();

/**
 * The revisions of `log` holding an op this clone did not write (another replica's, or one that
 * names none): the only commits markUnsigned must read. Ops record their replica, so this is
 * the log's own answer to what markUnsigned would find in the commits.
 */
export function foreignRevisions(
  log: Seq<{ revision: string; replica?: string | undefined }>,
  local: string | undefined,
): Set<string> {
  const out = new Set<string>();
  // By position, not for-of: an OpLog's iterator made a result object per op, per new log.
  for (let i = 0; i < log.length; i++) {
    const op = log.at(i)!;
    if (op.replica === undefined || op.replica !== local) out.add(op.revision);
  }
  return out;
}

/** markUnsigned of `full.slice(start, end)`, remembered while `full` and the config stay. */
export async function markUnsignedPage<E extends Entry>(
  repo: ZzRepo,
  full: Seq<E>,
  start: number,
  end: number,
  /** foreignRevisions of the log `full` was derived from. */
  foreign?: ReadonlySet<string>,
): Promise<E[]> {
  const config = (await repo.config.read()).state;
  let memo = pageMemo.get(full);
  if (!memo) pageMemo.set(full, (memo = new Map()));
  const key = `${start}:${end}`;
  const hit = memo.get(key);
  if (hit && hit.config === config) return hit.out.slice() as E[];
  const out = await markUnsigned(repo, sliceOf(full, start, end), foreign);
  if (memo.size >= 16) memo.clear();
  memo.set(key, { config, out });
  return out.slice();
}
