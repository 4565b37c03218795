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
import type { EntityCodec, OpRecord } from '../../store/index.js';

// refs/zz/ladder as an entity: one `<rung path>.rung.json` per rung (DESIGN §2), state = every
// rung by path. Two ops write it: `ladder_write_rung` (a coordinator's rungs, citing the Lane
// and Ask being worked) and `ladder_build` (a whole `zz ladder build`: upserts and removals in
// one op, so one commit). A rung's author and written_at are the op's actor and time, so the op
// carries only what it decided and replay (or a merge) rebuilds the exact same files. Rungs
// merge per path: the later write wins; history keeps every write.

export type LadderState = Map<string, Rung>;

export type { LadderBuildArgs, LadderWriteArgs, RungRecord };

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

function materialize(r: RungRecord, op: LadderOp, fallback?: RungGenerator): Rung | null {
  // A misplaced rung (e.g. in a merged op from a buggy writer) is skipped, never thrown: the
  // op's shape was checked by its schema, its placement is a rule of this zz.
  if (rungPlacementProblem(r.path, r.kind) !== null) return null;
  const generator = r.generator ?? fallback;
  if (!generator) return null;
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
  const changed: string[] = [];
  const put = (r: RungRecord, fallback?: RungGenerator) => {
    const rung = materialize(r, op, fallback);
    if (!rung) return;
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
      for (const r of op.args.upsert) put(r, op.args.generator);
      break;
  }
  return changed;
}

export const ladderCodec: EntityCodec<LadderState, LadderOp> = {
  empty: () => new Map(),
  clone: (s) => new Map(s),
  parse: parseLadderOp,
  apply: applyLadderOp,
  file(state, file) {
    const rung = state.get(rungPathFromFile(file));
    return rung ? JSON.stringify(rung, null, 2) + '\n' : null;
  },
};
