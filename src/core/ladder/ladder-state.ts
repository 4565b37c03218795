import {
  rungFilePath,
  rungKindProblem,
  rungPathFromFile,
  rungPathProblem,
  RUNG_FILE_SUFFIX,
  type Rung,
  type RungGenerator,
  type RungKind,
} from '../../schema/rung.js';
import {
  parseLadderOp,
  type LadderBuildArgs,
  type LadderOp,
  type LadderWriteArgs,
  type RungRecord,
} from '../../schema/ladder-ops.js';
import { OpLog, type EntityCodec, type OpRecord } from '../../store/index.js';
import { recordChecker } from './build-record.js';
import { ladderRefusal, type LadderRejection, type LadderRoles } from './ladder-guards.js';

// refs/zz/ladder as an entity: one `<rung path>.rung.json` per rung (DESIGN §2), state = every
// rung by path. Two ops write it: `ladder_write_rung` (a coordinator's rungs, citing the Lane
// and Ask being worked) and `ladder_build` (a whole `zz ladder build`: upserts and removals in
// one op, so one commit). A rung's author and written_at are the op's actor and time, so the op
// carries only what it decided and replay (or a merge) rebuilds the exact same files. Rungs
// merge per path: the later write wins; history keeps every write. Every op is re-checked
// first (ladder-guards.ts): who may write, and how many rungs.

/**
 * Every rung by path, with the ops the guarded fold refused (in fold order; at most one entry
 * per op, so bounded by the log) and the roles it judged them by (null: unknown, trusted).
 * A Map, so readers of rungs need not know the rest.
 */
export class LadderState extends Map<string, Rung> {
  rejected: OpLog<LadderRejection> = new OpLog();
  constructor(
    readonly roles: LadderRoles | null = null,
    rungs?: Iterable<readonly [string, Rung]>,
  ) {
    super(rungs);
  }
}

export type { LadderBuildArgs, LadderWriteArgs, RungRecord };

function isRungFile(file: string): boolean {
  try {
    rungPathFromFile(file);
    return true;
  } catch {
    return false;
  }
}

/** A rung's ladder file cannot sit below a folder whose name is itself a rung file's name. */
export function rungFileClash(path: string): boolean {
  const parts = path.split('/');
  for (let i = 0; i < parts.length - 1; i++) if (parts[i]!.endsWith(RUNG_FILE_SUFFIX)) return true;
  return false;
}

/** Why a rung of `kind` may not be stored at `path`, or null. */
export function rungPlacementProblem(path: string, kind: RungKind): string | null {
  const p = rungPathProblem(path);
  if (p !== null) return `rung path ${p}`;
  const k = rungKindProblem(path, kind);
  if (k !== null) return k;
  if (rungFileClash(path)) return `rung path has a folder named "*${RUNG_FILE_SUFFIX}" above it`;
  return null;
}

function materialize(r: RungRecord, op: LadderOp, fallback?: RungGenerator): Rung {
  const generator = (r.generator ?? fallback)!;
  // A fixed field order keeps the files stable and diffs readable.
  const rung: Rung = {
    path: r.path,
    kind: r.kind,
    title: r.title,
    summary: r.summary,
    ...(r.detail === undefined ? {} : { detail: r.detail }),
    ...(r.symbols === undefined ? {} : { symbols: r.symbols }),
    ...(r.anchor === undefined ? {} : { anchor: r.anchor }),
    inputs_hash: r.inputs_hash,
    generator,
    author: op.actor,
    written_at: op.time,
  };
  return rung;
}

/** Rung paths an op wrote (upserted or removed), in op order; none for any other op. */
export function pathsOfOp(raw: OpRecord): { upserted: string[]; removed: string[] } {
  const parsed = parseLadderOp(raw);
  if (!parsed.ok) return { upserted: [], removed: [] };
  const op = parsed.op;
  switch (op.op) {
    case 'ladder_write_rung':
      return { upserted: op.args.rungs.map((r) => r.path), removed: [] };
    case 'ladder_build':
      return { upserted: op.args.upsert.map((r) => r.path), removed: op.args.remove };
  }
}

export function applyLadderOp(s: LadderState, op: LadderOp): string[] {
  const refused = ladderRefusal(s, s.roles, op);
  if (refused) {
    s.rejected = s.rejected.concat([{ op_id: op.id, op: op.op, actor: op.actor, ...refused }]);
    return [];
  }
  const changed: string[] = [];
  const fallback = op.op === 'ladder_build' ? op.args.generator : null;
  // A rung the local tools would refuse (misplaced, past the rung schema's bounds, from a
  // buggy or hostile writer) is skipped, never thrown: the op's shape was checked by its
  // schema, placement and size are rules of this zz. The op's other rungs still apply (an
  // older zz's build with one rung this zz places differently keeps the rest of the Ladder).
  const fits = recordChecker({ generator: fallback, actor: op.actor, writtenAt: op.time }, true);
  let skipped: { path: string; count: number } | null = null;
  const put = (r: RungRecord) => {
    if (!fits(r) || rungFileClash(r.path)) {
      skipped = { path: skipped?.path ?? r.path, count: (skipped?.count ?? 0) + 1 };
      return;
    }
    const rung = materialize(r, op, fallback ?? undefined);
    s.set(rung.path, rung);
    changed.push(rungFilePath(rung.path));
  };
  switch (op.op) {
    case 'ladder_write_rung':
      for (const r of op.args.rungs) put(r);
      break;
    case 'ladder_build':
      for (const p of op.args.remove) {
        if (rungPathProblem(p) !== null || !s.has(p)) continue;
        s.delete(p);
        changed.push(rungFilePath(p));
      }
      for (const r of op.args.upsert) put(r);
      break;
  }
  if (skipped) {
    const r: LadderRejection = { op_id: op.id, op: op.op, actor: op.actor, reason: 'rung_invalid' };
    s.rejected = s.rejected.concat([{ ...r, ...(skipped as { path: string; count: number }) }]);
  }
  return changed;
}

export const ladderCodec: EntityCodec<LadderState, LadderOp> = {
  empty: () => new LadderState(),
  // `rejected` is shared: apply replaces it by a longer OpLog (concat appends in O(1) where it
  // can, store/op-log.ts), never changes the one a snapshot holds.
  clone: (s) => Object.assign(new LadderState(s.roles, s), { rejected: s.rejected }),
  parse: parseLadderOp,
  apply: applyLadderOp,
  refusals: (s) => s.rejected,
  file(state, file) {
    // A file that is no rung's (an extra one another machine's tree holds) is none of the fold's.
    if (!isRungFile(file)) return null;
    const rung = state.get(rungPathFromFile(file));
    return rung ? JSON.stringify(rung, null, 2) + '\n' : null;
  },
  // Our commits rewrite whatever the tree they go on holds that the fold does not (entity.ts).
  files: (state) => [...state.keys()].map(rungFilePath),
};
