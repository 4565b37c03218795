import { createHash } from 'node:crypto';
import { ZzError } from '../../errors.js';
import type { GitRepository } from '../../git/index.js';
import {
  ANCHORED_KINDS,
  rungDoc,
  RUNG_PATH_PREFIX,
  validateRungPath,
  type Rung,
  type RungAnchor,
  type RungGenerator,
  type RungKind,
} from '../../schema/rung.js';
import { offsetCursor } from '../../schema/cursor.js';
import type { LadderOp } from '../../schema/ladder-ops.js';
import type { Entity } from '../../store/index.js';
import { type LoggedOp, type OpLog, type OpSpec, type Snapshot } from '../../store/index.js';
import {
  assertSelf,
  isRootedCoordinator,
  notRootedError,
  rootedOf,
  requireCaller,
  type Caller,
} from '../access.js';
import { assertClaimOnClosed } from '../lane-closed.js';
import { readLane, type WriteMeta, type WriteOpts } from '../lanes.js';
import { writeOp } from '../write-op.js';
import { assertLiveClaim } from '../views.js';
import { LADDER_REF, type ZzRepo } from '../zz-repo.js';
import { LIMITS } from '../../schema/limits.js';
import { commitTree, entryAt, lsTree, tagCommit } from './git-tree.js';
import { LadderEntity } from './ladder-entity.js';
import { ladderRefusal, refusalError, type LadderRejection } from './ladder-guards.js';
import {
  pathsOfOp,
  rungPlacementProblem,
  type LadderBuildArgs,
  type LadderState,
  type LadderWriteArgs,
  type RungRecord,
} from './ladder-state.js';

// Ladder use cases (DESIGN §3 ladder toolset, §6): read one rung (detail paged), one rung's
// history, and a coordinator's rung writes (the tree is ladder-tree.ts). `stale` is computed on read
// against the default branch head: one `git ls-tree -r -t` per head, cached until it moves.

export const DEFAULT_DETAIL_CHARS = 64 * 1024;
export const MAX_DETAIL_CHARS = 256 * 1024;
export const MAX_WRITE_RUNGS = LIMITS.rungsPerWrite;

export function ladderEntity(repo: ZzRepo): Entity<LadderState, LadderOp> {
  return repo.entity(LADDER_REF, () => new LadderEntity(repo));
}

/**
 * A rung's inputs_hash: sha-256 (40 hex) of its inputs. They are arrays of strings, numbers and
 * nested arrays, whose JSON is already canonical (no object keys to order).
 */
export function sha(...parts: unknown[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 40);
}

// --- staleness ----------------------------------------------------------------------------

export interface HeadIndex {
  branch: string;
  head: string | null;
  /** path → oid of every blob, tree and submodule at head; '' is the root tree. */
  oids: ReadonlyMap<string, string>;
}

const headCache = new WeakMap<
  ZzRepo,
  { branch: string; head: string | null; oids: Promise<Map<string, string>> }
>();

async function headOids(git: GitRepository, head: string): Promise<Map<string, string>> {
  const [items, root] = await Promise.all([lsTree(git.gitdir, head), commitTree(git, head)]);
  const oids = new Map<string, string>();
  for (const it of items) oids.set(it.path, it.oid);
  if (root) oids.set('', root.tree);
  return oids;
}

/**
 * path → oid at the default branch head, listed once per head and reused until the branch
 * moves (one ref read per call). Null when there is no git repository behind `repo`.
 */
export async function headIndex(repo: ZzRepo): Promise<HeadIndex | null> {
  const git = repo.git;
  if (!git) return null;
  const branch = await repo.defaultBranch();
  let head: string | null;
  try {
    head = await git.refs.read(`refs/heads/${branch}`);
  } catch {
    head = null;
  }
  let cached = headCache.get(repo);
  if (!cached || cached.branch !== branch || cached.head !== head) {
    const oids = head ? headOids(git, head) : Promise.resolve(new Map<string, string>());
    cached = { branch, head, oids };
    headCache.set(repo, cached);
    const mine = cached;
    oids.catch(() => {
      if (headCache.get(repo) === mine) headCache.delete(repo);
    });
  }
  return { branch, head, oids: await cached.oids };
}

/** The oid a tree rung's anchor is compared with: the path's object (root tree for `_repo`). */
export function currentOidOf(
  index: HeadIndex,
  rung: Pick<Rung, 'path' | 'kind'>,
): string | undefined {
  return index.oids.get(rung.kind === 'repo' ? '' : rung.path);
}

/** Whether a rung's anchored object differs from what the default branch holds now. */
export async function isStale(
  repo: ZzRepo,
  index: HeadIndex | null,
  rung: Pick<Rung, 'path' | 'kind' | 'anchor'>,
): Promise<boolean> {
  if (!rung.anchor || !index || !repo.git) return false;
  switch (rung.kind) {
    case 'repo':
    case 'directory':
    case 'file':
      if (index.head === null) return false;
      return currentOidOf(index, rung) !== rung.anchor.oid;
    case 'release': {
      // Released code does not go stale; a tag moved (or deleted) since the rung was written does.
      const tag = rung.path.slice(RUNG_PATH_PREFIX.release.length);
      return (await tagCommit(repo.git, tag)) !== rung.anchor.oid;
    }
    default:
      // A changeset is a commit: immutable. Other kinds cite no code.
      return false;
  }
}

// --- reads --------------------------------------------------------------------------------

export async function readLadder(repo: ZzRepo): Promise<Snapshot<LadderState>> {
  return ladderEntity(repo).read();
}

export interface LadderReadArgs {
  path: string;
  offset?: number;
  limit?: number;
}

export type LadderReadResult = {
  rung: Rung & { detail_chars?: number };
  stale: boolean;
  revision: string | null;
  /** Where the next page of `detail` starts; null when it was returned to its end. */
  next_offset: number | null;
};

export async function ladderRead(
  repo: ZzRepo,
  _caller: Caller | null,
  args: LadderReadArgs,
): Promise<LadderReadResult> {
  const path = validateRungPath(args.path);
  const snap = await readLadder(repo);
  const rung = snap.state.get(path);
  if (!rung) {
    throw new ZzError('not_found', `the Ladder has no rung at ${JSON.stringify(path)}`, { path });
  }
  const stale = await isStale(repo, await headIndex(repo), rung);
  const offset = args.offset ?? 0;
  const limit = Math.min(args.limit ?? DEFAULT_DETAIL_CHARS, MAX_DETAIL_CHARS);
  let next: number | null = null;
  let out: LadderReadResult['rung'] = rung;
  if (rung.detail !== undefined) {
    const total = rung.detail.length;
    if (offset > total) {
      throw new ZzError(
        'invalid_argument',
        `offset ${offset} is past the end of the detail (${total} characters)`,
        {
          field: 'offset',
        },
      );
    }
    const end = Math.min(total, offset + limit);
    out = { ...rung, detail: rung.detail.slice(offset, end), detail_chars: total };
    next = end < total ? end : null;
  } else if (offset > 0) {
    throw new ZzError('invalid_argument', `rung ${path} has no detail to page through`, {
      field: 'offset',
    });
  }
  return { rung: out, stale, revision: snap.revision, next_offset: next };
}

export interface LadderHistoryArgs {
  path: string;
  limit?: number;
  cursor?: string;
}

export type RungRevision = {
  /** The ladder commit that holds this write. */
  revision: string;
  op: string;
  actor: string;
  time: string;
  /** True when the op removed the rung (its path left the tree). */
  removed: boolean;
  lane_id: string | null;
  ask_id: string | null;
  kind: RungKind | null;
  title: string | null;
  summary: string | null;
  anchor: RungAnchor | null;
  inputs_hash: string | null;
  generator: RungGenerator | null;
  /**
   * Set when the guarded fold refused the op (ladder-guards.ts): it changed no rung (for
   * rung_invalid, the op's other rungs applied). As a Lane's history marks its refused ops.
   */
  rejected?: Omit<LadderRejection, 'op_id' | 'op' | 'actor'>;
};

// Where each path was written, per op log (each snapshot has its own log, never changed).
const historyIndex = new WeakMap<OpLog<LoggedOp>, Map<string, number[]>>();

function opsByPath(log: OpLog<LoggedOp>): Map<string, number[]> {
  let m = historyIndex.get(log);
  if (!m) {
    m = new Map();
    log.forEach((op, i) => {
      const { upserted, removed } = pathsOfOp(op);
      for (const p of [...upserted, ...removed]) {
        const list = m!.get(p);
        if (!list) m!.set(p, [i]);
        else if (list[list.length - 1] !== i) list.push(i);
      }
    });
    historyIndex.set(log, m);
  }
  return m;
}

function revisionOf(
  op: LoggedOp,
  path: string,
  refused: ReadonlyMap<string, RungRevision['rejected']>,
): RungRevision {
  const rejected = refused.get(op.id);
  const a = op.args as Partial<LadderBuildArgs & LadderWriteArgs>;
  const list: RungRecord[] = op.op === 'ladder_build' ? (a.upsert ?? []) : (a.rungs ?? []);
  const r = list.find((x) => x.path === path);
  return {
    revision: op.revision,
    op: op.op,
    actor: op.actor,
    time: op.time,
    removed: r === undefined,
    lane_id: typeof a.lane_id === 'string' ? a.lane_id : null,
    ask_id: typeof a.ask_id === 'string' ? a.ask_id : null,
    kind: r?.kind ?? null,
    title: r?.title ?? null,
    summary: r?.summary ?? null,
    anchor: r?.anchor ?? null,
    inputs_hash: r?.inputs_hash ?? null,
    generator: r ? (r.generator ?? a.generator ?? null) : null,
    ...(rejected ? { rejected } : {}),
  };
}

const historyPages = offsetCursor('ladder_history');

/** Every write of one rung, newest first, paged. */
export async function ladderHistory(
  repo: ZzRepo,
  args: LadderHistoryArgs,
): Promise<{ path: string; revisions: RungRevision[]; next_cursor: string | null }> {
  const path = validateRungPath(args.path);
  const snap = await readLadder(repo);
  const at = opsByPath(snap.log).get(path);
  if (!at)
    throw new ZzError('not_found', `the Ladder has never held a rung at ${JSON.stringify(path)}`, {
      path,
    });
  const start = args.cursor === undefined ? 0 : historyPages.decode(args.cursor);
  const limit = args.limit ?? 50;
  const newestFirst = [...at].reverse();
  const refused = new Map<string, RungRevision['rejected']>();
  for (const { op_id, op: _o, actor: _a, ...why } of snap.state.rejected) refused.set(op_id, why);
  const page = newestFirst
    .slice(start, start + limit)
    .map((i) => revisionOf(snap.log.at(i)!, path, refused));
  const end = start + limit;
  return {
    path,
    revisions: page,
    next_cursor: end < newestFirst.length ? historyPages.encode(end) : null,
  };
}

// --- writes -------------------------------------------------------------------------------

export interface WriteRungInput {
  path: string;
  kind: RungKind;
  title: string;
  summary: string;
  detail?: string;
  symbols?: string[];
  /** The commit the rung describes: required for repo, directory, file, release, changeset. */
  commit?: string;
  generator?: { method: 'human' | 'model'; model?: string; version?: string };
}

export type LadderWriteRungArgs = WriteOpts & {
  lane_id: string;
  ask_id: string;
  rungs: WriteRungInput[];
};

export type WrittenRung = {
  path: string;
  kind: RungKind;
  anchor: RungAnchor | null;
  inputs_hash: string;
};

const bad = (field: string, message: string) =>
  new ZzError('invalid_argument', `${field}: ${message}`, { field });

function requireGitFor(repo: ZzRepo, field: string): GitRepository {
  if (!repo.git) throw bad(field, `repository ${repo.key} has no git objects to anchor a rung to`);
  return repo.git;
}

/** Resolves what an anchored rung points at, at the cited commit; 400 when it is not there. */
async function anchorFor(
  repo: ZzRepo,
  r: WriteRungInput,
  field: string,
): Promise<RungAnchor | undefined> {
  if (!ANCHORED_KINDS.has(r.kind)) {
    if (r.commit !== undefined) throw bad(`${field}.commit`, `a ${r.kind} rung cites no commit`);
    return undefined;
  }
  if (r.commit === undefined)
    throw bad(`${field}.commit`, `a ${r.kind} rung must cite the commit it describes`);
  const git = requireGitFor(repo, `${field}.commit`);
  const c = await commitTree(git, r.commit);
  if (!c) throw bad(`${field}.commit`, `${r.commit} is not a commit in ${repo.key}`);
  switch (r.kind) {
    case 'repo':
      return { commit: c.commit, oid: c.tree };
    case 'file':
    case 'directory': {
      const e = await entryAt(git, c.tree, r.path);
      if (!e) throw bad(`${field}.path`, `${r.path} does not exist at commit ${c.commit}`);
      const isDir = e.mode === '040000' || e.mode === '160000';
      if (isDir !== (r.kind === 'directory')) {
        throw bad(
          `${field}.kind`,
          `${r.path} is a ${isDir ? 'directory' : 'file'} at commit ${c.commit}`,
        );
      }
      return { commit: c.commit, oid: e.oid };
    }
    case 'release': {
      const tag = r.path.slice(RUNG_PATH_PREFIX.release.length);
      const target = await tagCommit(git, tag);
      if (!target)
        throw bad(`${field}.path`, `there is no tag ${JSON.stringify(tag)} pointing at a commit`);
      return { commit: c.commit, oid: target };
    }
    case 'changeset': {
      const key = r.path.slice(RUNG_PATH_PREFIX.changeset.length);
      if (!/^[0-9a-f]{40}$/.test(key))
        throw bad(`${field}.path`, 'a changeset rung is _changesets/<full commit id>');
      const cs = await commitTree(git, key);
      if (!cs || cs.commit !== key)
        throw bad(`${field}.path`, `${key} is not a commit in ${repo.key}`);
      return { commit: c.commit, oid: key };
    }
    default:
      return undefined;
  }
}

export async function ladderWriteRung(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: LadderWriteRungArgs,
): Promise<{ rungs: WrittenRung[] } & WriteMeta> {
  const caller = requireCaller(callerIn);
  assertSelf(caller, args.actor, 'actor');
  const config = await repo.requireConfig();
  if (args.rungs.length === 0) throw bad('rungs', 'write at least one rung');
  if (args.rungs.length > MAX_WRITE_RUNGS)
    throw bad('rungs', `at most ${MAX_WRITE_RUNGS} rungs per call`);
  const entity = ladderEntity(repo);
  const { actor: _a, idempotency_key: _k, expected_revision: _r, ...request } = args;
  // A retry of a write that already landed replays it, even once the Ask has been answered.
  const prior =
    args.idempotency_key === undefined
      ? undefined
      : await entity.priorOp(caller.actor, args.idempotency_key);
  const records: RungRecord[] = [];
  if (!prior) {
    const lane = await readLane(repo, args.lane_id);
    // Rungs are read by every agent of the repository: a coordinatorship an owner stands
    // behind (rooted-roles.ts; the Ladder's fold refuses others' writes alike, ladder-guards.ts).
    if (!isRootedCoordinator(rootedOf(lane), config, caller.actor)) {
      throw notRootedError(rootedOf(lane), config, caller.actor, 'write Ladder rungs');
    }
    const ask = lane.state.asks.get(args.ask_id);
    if (!ask)
      throw new ZzError('not_found', `ask ${args.ask_id} does not exist in lane ${args.lane_id}`);
    if (ask.state === 'answered') {
      throw new ZzError(
        'conflict',
        `ask ${args.ask_id} is already answered; cite an Ask you are working`,
      );
    }
    // Before assertLiveClaim, whose "claim it again" a closed Lane would refuse.
    assertClaimOnClosed(lane.lane, ask, caller.actor, repo.clock(), 'write rungs for');
    assertLiveClaim(ask, caller.actor, repo.clock(), 'write rungs for', 'conflict');
    const seen = new Set<string>();
    for (const [i, r] of args.rungs.entries()) {
      const field = `rungs.${i}`;
      const problem = rungPlacementProblem(r.path, r.kind);
      if (problem !== null) throw bad(`${field}.path`, problem);
      if (seen.has(r.path)) throw bad(`${field}.path`, `${r.path} is written twice in one call`);
      seen.add(r.path);
      const anchor = await anchorFor(repo, r, field);
      const generator: RungGenerator = {
        method: r.generator?.method ?? 'human',
        ...(r.generator?.model === undefined ? {} : { model: r.generator.model }),
        version: r.generator?.version ?? '1',
      };
      const symbols = r.symbols?.length ? { symbols: r.symbols } : {};
      const record: RungRecord = {
        path: r.path,
        kind: r.kind,
        title: r.title,
        summary: r.summary,
        ...(r.detail === undefined ? {} : { detail: r.detail }),
        ...symbols,
        ...(anchor ? { anchor } : {}),
        inputs_hash: sha(
          'write',
          r.path,
          r.kind,
          anchor?.oid ?? null,
          r.title,
          r.summary,
          r.detail ?? null,
          r.symbols ?? [],
        ),
        generator,
      };
      // The tool's schema already checked the fields; direct callers get the same refusal.
      const check = rungDoc.safeParse({
        ...record,
        author: caller.actor,
        written_at: repo.clock().toISOString(),
      });
      if (!check.success) {
        const issue = check.error.issues[0]!;
        throw bad(`${field}.${issue.path.map(String).join('.')}`, issue.message);
      }
      records.push(record);
    }
  }
  const r = await writeOp(repo, caller, entity, args, {
    tool: 'ladder_write_rung',
    request,
    decide: (state): OpSpec<LadderOp> => {
      const wa: LadderWriteArgs = { lane_id: args.lane_id, ask_id: args.ask_id, rungs: records };
      // The fold's own guard (the Ladder's bound, and the role as the fold will see it).
      const op = { op: 'ladder_write_rung', args: wa } as const;
      const refused = ladderRefusal(state, state.roles, {
        ...op,
        id: 'local',
        actor: caller.actor,
        lamport: 1,
        time: repo.clock().toISOString(),
      });
      if (refused) throw refusalError(refused, 'write Ladder rungs');
      const first = records[0]!.path;
      return {
        op: 'ladder_write_rung',
        summary: `ladder_write_rung ${first}${records.length > 1 ? ` and ${records.length - 1} more` : ''} (${args.lane_id}/${args.ask_id})`,
        args: wa,
      };
    },
    result: (_s, op) =>
      (op?.op === 'ladder_write_rung' ? op.args.rungs : []).map((x) => ({
        path: x.path,
        kind: x.kind,
        anchor: x.anchor ?? null,
        inputs_hash: x.inputs_hash,
      })),
  });
  return { rungs: r.result, revision: r.revision, replayed: r.replayed };
}
