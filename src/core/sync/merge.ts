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
