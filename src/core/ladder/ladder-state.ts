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
import type { EntityCodec, OpRecord } from '../../store/index.js';

// refs/zz/ladder as an entity: one `<rung path>.rung.json` per rung (DESIGN §2), state = every
// rung by path. Two ops write it: `ladder_write_rung` (a coordinator's rungs, citing the Lane
// and Ask being worked) and `ladder_build` (a whole `zz ladder build`: upserts and removals in
// one op, so one commit). A rung's author and written_at are the op's actor and time, so the op
// carries only what it decided and replay (or a merge) rebuilds the exact same files. Rungs
// merge per path: the later write wins; history keeps every write.

export type LadderState = Map<string, Rung>;

/** A rung as an op records it: author and written_at come from the op; generator may too. */
export type RungRecord = Omit<Rung, 'author' | 'written_at' | 'generator'> & {
  generator?: RungGenerator;
};

export interface LadderBuildArgs {
  branch: string;
  head: string;
  /** The generator of every upserted rung that does not name its own. */
  generator: RungGenerator;
  upsert: RungRecord[];
  remove: string[];
}

export interface LadderWriteArgs {
  lane_id: string;
  ask_id: string;
  rungs: RungRecord[];
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

function materialize(r: RungRecord, op: OpRecord, fallback?: RungGenerator): Rung | null {
  if (!r || typeof r !== 'object' || typeof r.path !== 'string') return null;
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

/** Rung paths an op wrote (upserted or removed), in op order. */
export function pathsOfOp(op: OpRecord): { upserted: string[]; removed: string[] } {
  const a = op.args as Partial<LadderBuildArgs & LadderWriteArgs>;
  if (op.op === 'ladder_write_rung') {
    return { upserted: (a.rungs ?? []).map((r) => r.path), removed: [] };
  }
  if (op.op === 'ladder_build') {
    return { upserted: (a.upsert ?? []).map((r) => r.path), removed: a.remove ?? [] };
  }
  return { upserted: [], removed: [] };
}

export function applyLadderOp(s: LadderState, op: OpRecord): string[] {
  const changed: string[] = [];
  const put = (r: RungRecord, fallback?: RungGenerator) => {
    const rung = materialize(r, op, fallback);
    if (!rung) return; // malformed (e.g. a merged op from a buggy writer): skipped, never thrown
    s.set(rung.path, rung);
    changed.push(rungFilePath(rung.path));
  };
  if (op.op === 'ladder_write_rung') {
    const a = op.args as Partial<LadderWriteArgs>;
    for (const r of Array.isArray(a.rungs) ? a.rungs : []) put(r);
  } else if (op.op === 'ladder_build') {
    const a = op.args as Partial<LadderBuildArgs>;
    for (const p of Array.isArray(a.remove) ? a.remove : []) {
      if (typeof p !== 'string' || rungPathProblem(p) !== null || !s.has(p)) continue;
      s.delete(p);
      changed.push(rungFilePath(p));
    }
    for (const r of Array.isArray(a.upsert) ? a.upsert : []) put(r, a.generator);
  }
  return changed;
}

export const ladderCodec: EntityCodec<LadderState> = {
  empty: () => new Map(),
  clone: (s) => new Map(s),
  apply: applyLadderOp,
  file(state, file) {
    const rung = state.get(rungPathFromFile(file));
    return rung ? JSON.stringify(rung, null, 2) + '\n' : null;
  },
};
