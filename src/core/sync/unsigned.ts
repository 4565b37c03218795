import { readCommit, verifyCommitBody } from '../../git/index.js';
import type { ZzRepo } from '../zz-repo.js';
import { isActorKey } from './authenticity.js';
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

// Commits never change: their facts are cached by object id (bounded, oldest dropped first).
const MAX_CACHED = 20_000;
const facts = new Map<string, CommitFacts | null>();

async function commitFacts(repo: ZzRepo, oid: string): Promise<CommitFacts | null> {
  const g = repo.git;
  if (!g) return null;
  const key = `${g.gitdir}\0${oid}`;
  if (facts.has(key)) return facts.get(key)!;
  const c = await readCommit(g.catFile, oid);
  let out: CommitFacts | null = null;
  if (c) {
    const parsed = parseZzCommit({ oid, parents: c.parents, message: c.message });
    out = {
      signer: verifyCommitBody(c.raw),
      ops: new Map(parsed.ops.map((o) => [o.lamport, { actor: o.actor, replica: o.replica }])),
    };
  }
  if (facts.size >= MAX_CACHED) facts.delete(facts.keys().next().value!);
  facts.set(key, out);
  return out;
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
): Promise<E[]> {
  if (!repo.git || entries.length === 0) return entries.slice();
  const config = (await repo.config.read()).state;
  const local = repo.store.replica;
  const out = entries.slice();
  for (let i = 0; i < out.length; i++) {
    const e = out[i]!;
    if (e.revision === null) continue;
    const f = await commitFacts(repo, e.revision);
    const op = f?.ops.get(e.lamport);
    if (!f || !op || op.actor !== e.actor) continue; // a derived entry or a notice
    if (op.replica !== undefined && op.replica === local) continue;
    if (isActorKey(config, op.actor, f.signer)) continue;
    out[i] = { ...e, unsigned: true };
  }
  return out;
}
