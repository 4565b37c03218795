import { ZzError } from '../../errors.js';
import {
  commitLamports,
  compareOps,
  driftedFiles,
  publicationOrder,
  type CommitRecord,
  type FileChanges,
  type OpRecord,
} from '../../store/index.js';
import type { Rejection, SyncCodec } from './codecs.js';

// The merge of one diverged entity (DESIGN §7): a commit with parents [remote tip, local tip]
// (after a rewritten remote [local tip, remote tip], the remote's ops applied after ours:
// engine.ts, history-checks.ts), no ops of its own, clock one above both; its state is the state at the remote tip with the
// local-only ops applied after it in (lamport, actor, replica, op id) order, through the same
// guarded fold every replica runs. The merge tree is the remote tree with the files those ops
// touched rewritten, and, for an entity whose codec lists its files (the Ladder), every file
// where that tree differs from the fold at the remote tip: another machine's tree is untrusted
// (a refused op's file, an extra one), and our merge must not carry it forward.

export interface MergePlan {
  changes: FileChanges;
  lamport: number;
  /** Local-only ops, in the order they were applied after the remote tip. */
  localOps: OpRecord[];
  /** Local-only ops the guarded fold refused (claims lost and the like). */
  rejected: Rejection[];
  /** Every op the merge's fold refuses, the base's included (report.ts newly_refused). */
  refusals: Iterable<Rejection>;
}

/**
 * `remoteHistory`: every commit reachable from the remote tip, parents first. `localOnly`:
 * the commits reachable from the local tip and not from the remote tip.
 */
export function planMerge<S>(
  sc: SyncCodec<S>,
  remoteTip: string,
  remoteHistory: readonly CommitRecord[],
  localTip: string,
  localOnly: readonly CommitRecord[],
  /** The first parent's tree (path → text), checked against the fold when codec.files is set. */
  baseFiles?: ReadonlyMap<string, string>,
): MergePlan {
  const { codec } = sc;
  const state = codec.empty();
  // Every op is folded as its entity's typed op (schema/*-ops.ts); one that does not parse was
  // quarantined by validation before a merge is planned, so reaching one here is a bug.
  const apply = (op: OpRecord): string[] => {
    const p = codec.parse(op);
    if (!p.ok) throw new ZzError('entity_corrupt', `cannot merge: ${p.error}`);
    return codec.apply(state, p.op);
  };
  for (const { op } of publicationOrder(remoteHistory, remoteTip)) apply(op);
  const touched = new Set<string>();
  if (baseFiles && codec.files)
    for (const p of driftedFiles(codec, state, baseFiles)) touched.add(p);
  // The fold only appends to its list of refusals: the local ops' are those past this length.
  const before = sc.rejections?.(state).length ?? 0;
  const localOps = localOnly.flatMap((c) => c.ops).sort(compareOps);
  for (const op of localOps) for (const p of apply(op)) touched.add(p);
  const changes: FileChanges = new Map();
  for (const p of [...touched].sort()) changes.set(p, codec.file(state, p));
  const lams = commitLamports([...remoteHistory, ...localOnly]);
  const lamport = Math.max(lams.get(remoteTip) ?? 0, lams.get(localTip) ?? 0) + 1;
  const refusals = sc.rejections?.(state) ?? [];
  const rejected = sc.rejections?.(state).slice(before) ?? [];
  return { changes, lamport, localOps, rejected, refusals };
}

/**
 * The first parent of a merge answering a rewritten remote (engine.ts): what this clone holds,
 * ours first. When the remote wrapped what was synced in a rival's merge and had gone on from
 * it first (`continued`, history-checks.ts wrapsRival: a claim published on top of what this
 * clone last synced), that continuation was published before the wrap: ours is merged onto it
 * as a sync merges (the continuation first, our local-only ops after), so the answer folds it
 * before our ops and the rival's. Folding every remote op after ours by Lamport put the rival's
 * op (Lamport 1) before the published claim. `history`: every commit either tip reaches.
 * `write` makes the merge commit [continued, mine] when neither holds the other.
 */
export async function answerBase<S>(
  sc: SyncCodec<S>,
  mine: string,
  continued: string | null,
  history: readonly CommitRecord[],
  write: (parents: [string, string], plan: MergePlan) => Promise<string>,
  /** The tree of a commit (path → text), for a codec with files (planMerge's baseFiles). */
  filesOf?: (commit: string) => Promise<Map<string, string>> | undefined,
): Promise<{ tip: string; commits: CommitRecord[]; plan: MergePlan | null }> {
  const byOid = new Map(history.map((c) => [c.revision, c]));
  const from = (tip: string): Set<string> => {
    const seen = new Set<string>();
    for (const stack = [tip]; stack.length > 0;) {
      const oid = stack.pop()!;
      if (seen.has(oid) || !byOid.has(oid)) continue;
      seen.add(oid);
      stack.push(...byOid.get(oid)!.parents);
    }
    return seen;
  };
  const fromMine = from(mine);
  const ofMine = history.filter((c) => fromMine.has(c.revision));
  if (continued === null || fromMine.has(continued))
    return { tip: mine, commits: ofMine, plan: null };
  const fromCont = from(continued);
  const ofCont = history.filter((c) => fromCont.has(c.revision));
  if (fromCont.has(mine)) return { tip: continued, commits: ofCont, plan: null };
  const mineOnly = ofMine.filter((c) => !fromCont.has(c.revision));
  const plan = planMerge(sc, continued, ofCont, mine, mineOnly, await filesOf?.(continued));
  const tip = await write([continued, mine], plan);
  const merge: CommitRecord = { revision: tip, parents: [continued, mine], ops: [] };
  return { tip, commits: [...ofCont, ...mineOnly, merge], plan };
}
