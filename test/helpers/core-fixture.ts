import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect } from 'vitest';
import { initRepo, ZzRepo, type Caller } from '../../src/core/index.js';
import type { ZzError } from '../../src/errors.js';
import { parseLaneOp, type LaneOp } from '../../src/schema/index.js';
import type { OpRecord } from '../../src/store/index.js';
import { registry, runTool, type ToolName, type ToolOutput } from '../../src/tools/index.js';
import { zzErrorOf } from './rejection.js';
import { fsckProblems, makeRepo, sh } from './temp-repo.js';

export const OWNER: Caller = { actor: 'owner@example.com' };
export const ALICE: Caller = { actor: 'alice@example.com' };
export const BOB: Caller = { actor: 'bob@example.com' };
export const AGENT: Caller = { actor: 'alice@example.com[claude]' };

/** A settable clock so lease expiry is tested without sleeping. */
export class FakeClock {
  t = Date.parse('2026-11-30T12:00:00.000Z');
  now = (): Date => new Date(this.t);
  advance(seconds: number): void {
    this.t += seconds * 1000;
  }
}

export async function memoryRepo(
  clock = new FakeClock(),
): Promise<{ repo: ZzRepo; clock: FakeClock }> {
  const repo = ZzRepo.memory('local/test', clock.now);
  await initRepo(repo, { owner: OWNER.actor, default_branch: 'main' });
  return { repo, clock };
}

export async function gitRepo(
  clock?: FakeClock,
): Promise<{ repo: ZzRepo; dir: string; cleanup: () => void }> {
  const { dir, cleanup } = makeRepo();
  const repo = await ZzRepo.open(dir, {
    key: 'local/test',
    ...(clock ? { clock: clock.now } : {}),
  });
  await initRepo(repo, { owner: OWNER.actor, default_branch: 'main' });
  return {
    repo,
    dir,
    cleanup: () => {
      repo.close();
      cleanup();
    },
  };
}

/**
 * Runs `f` on the zz state of the checkout `dir`, opened in this process (its repo key as the
 * daemon and the CLI derive it) and closed after.
 */
export async function withZzRepo<T>(dir: string, f: (repo: ZzRepo) => Promise<T>): Promise<T> {
  const repo = await ZzRepo.open(dir);
  try {
    return await f(repo);
  } finally {
    repo.close();
  }
}

/**
 * The checkout `dir` initialised for zz in this process (config and lane _repo, owner
 * owner@example.com, makeRepo's git user): what a spawned `zz init` makes in refs/zz/*, for
 * end-to-end tests that are about something else. A spawn of the built zz costs ~1 s of CPU on
 * a loaded 2-core machine; `zz init` itself is driven end to end in test/e2e (zz.e2e (a), hooks).
 */
export function initialiseInProcess(dir: string): Promise<void> {
  return withZzRepo(dir, (repo) =>
    initRepo(repo, { owner: OWNER.actor, default_branch: 'main' }).then(() => undefined),
  );
}

/** Calls a tool the way every transport does; answers the tool's output type. */
export function call<N extends ToolName>(
  repo: ZzRepo,
  caller: Caller | null,
  tool: N,
  args: Record<string, unknown>,
): Promise<ToolOutput<N>> {
  // runTool answers what the tool's output schema parsed; the registry erases which schema.
  return runTool(registry.require(tool), args, { repo, caller, local: true }) as Promise<
    ToolOutput<N>
  >;
}

/**
 * The owner grants these roles in Lane `laneId`, so that an owner stands behind them
 * (core/rooted-roles.ts): what landing code, writing rungs and a review that lets a changeset
 * land need of a Lane a non-owner proposed.
 */
export async function ownerGrants(
  repo: ZzRepo,
  laneId: string,
  roles: { coordinators?: Caller[]; maintainers?: Caller[] },
): Promise<void> {
  for (const c of roles.coordinators ?? []) {
    await call(repo, OWNER, 'lane_grant', {
      lane_id: laneId,
      grantee: c.actor,
      role: 'coordinator',
    });
  }
  for (const m of roles.maintainers ?? []) {
    await call(repo, OWNER, 'lane_grant', {
      lane_id: laneId,
      grantee: m.actor,
      role: 'maintainer',
    });
  }
}

/**
 * A Lane `laneId` proposed by `caller` (its coordinatorship granted again by the owner, so that
 * it may write rungs) with a ladder_update Ask it has claimed: what ladder_write_rung must cite.
 * Answers the Ask's id.
 */
export async function ladderUpdateClaim(
  repo: ZzRepo,
  caller: Caller,
  laneId: string,
  title: string,
): Promise<string> {
  await call(repo, caller, 'lane_propose', { lane_id: laneId, title });
  if (caller.actor !== OWNER.actor) await ownerGrants(repo, laneId, { coordinators: [caller] });
  const ask = await call(repo, caller, 'ask_post', {
    lane_id: laneId,
    kind: 'ladder_update',
    title,
  });
  await call(repo, caller, 'ask_claim', { lane_id: laneId, ask_id: ask.ask.ask_id });
  return ask.ask.ask_id;
}

/** Awaits a call that must fail with a ZzError of `code` (and a message matching `msg`). */
export async function rejects(p: Promise<unknown>, code: string, msg?: RegExp): Promise<ZzError> {
  const e = await zzErrorOf(p);
  expect(e.code, e.message).toBe(code);
  if (msg) expect(e.message).toMatch(msg);
  return e;
}

/** A raw op from a store's history as the Lane fold takes it; a malformed one fails the test. */
export function parsedLaneOp(raw: OpRecord): LaneOp {
  const p = parseLaneOp(raw);
  if (!p.ok) throw new Error(p.error);
  return p.op;
}

// commit_changeset's tests (changesets*.test.ts): a git repository whose `main` is checked out,
// Lane `ship` proposed by ALICE with BOB its maintainer, both rooted by the owner.
const shipCleanups: Array<() => void> = [];
const shipFsckDirs: string[] = [];

/**
 * Call once at the top of a commit_changeset test file: answers the set-up its tests call, and
 * after each test has git fsck every repository it made (whatever the test did, git must find
 * it sound) and removes them.
 */
export function shipLanes(): typeof shipLane {
  afterEach(() => {
    try {
      for (const dir of shipFsckDirs.splice(0)) expect(fsckProblems(dir), dir).toEqual([]);
    } finally {
      while (shipCleanups.length) shipCleanups.pop()!();
    }
  });
  return shipLane;
}

export type ShipEnv = Awaited<ReturnType<typeof shipLane>>;

/** Lane `ship`'s Asks. */
export const shipAsks = async (env: ShipEnv) =>
  (await call(env.repo, ALICE, 'lane_get', { lane_id: 'ship' })).asks;

async function shipLane() {
  const { repo, dir, cleanup } = await gitRepo();
  shipCleanups.push(cleanup);
  shipFsckDirs.push(dir);
  await call(repo, ALICE, 'lane_propose', {
    lane_id: 'ship',
    title: 'Ship',
    maintainers: [BOB.actor],
  });
  await ownerGrants(repo, 'ship', { coordinators: [ALICE], maintainers: [BOB] });
  const git = (...args: string[]) => sh(dir, ...args);
  const head = () => git('rev-parse', 'refs/heads/main');
  const read = (p: string) => readFileSync(join(dir, p), 'utf8');
  const write = (p: string, s: string) => {
    mkdirSync(join(dir, p, '..'), { recursive: true });
    writeFileSync(join(dir, p), s);
  };
  /** A commit on main made by the user in the checkout. */
  const userCommit = (files: Record<string, string>, msg = 'user change') => {
    for (const [p, s] of Object.entries(files)) write(p, s);
    git('add', '-A');
    git('commit', '-q', '-m', msg);
    return head();
  };
  /** work → changeset → review granted → submit_changeset claimed by ALICE. */
  const changeset = async (
    files: Array<{ path: string; content: string | null }>,
    base = head(),
    message = 'Change',
  ) => {
    const w = (
      await call(repo, ALICE, 'ask_post', { lane_id: 'ship', kind: 'work', title: message })
    ).ask;
    await call(repo, AGENT, 'ask_claim', { lane_id: 'ship', ask_id: w.ask_id });
    const ans = await call(repo, AGENT, 'ask_answer', {
      lane_id: 'ship',
      ask_id: w.ask_id,
      outcome: 'complete',
      changeset: { base, message, files },
    });
    const review = ans.follow_ups[0]!;
    await call(repo, BOB, 'ask_claim', { lane_id: 'ship', ask_id: review.ask_id });
    const granted = await call(repo, BOB, 'ask_answer', {
      lane_id: 'ship',
      ask_id: review.ask_id,
      outcome: 'grant',
      result: 'lgtm',
    });
    const submit = granted.follow_ups[0]!;
    expect(submit.kind).toBe('submit_changeset');
    await call(repo, ALICE, 'ask_claim', { lane_id: 'ship', ask_id: submit.ask_id });
    return { csId: ans.changeset_id as string, askId: submit.ask_id as string };
  };
  /** A submit_changeset Ask posted by hand (coordinators may), for direct file commits. */
  const submitAsk = async () =>
    (
      await call(repo, ALICE, 'ask_post', {
        lane_id: 'ship',
        kind: 'submit_changeset',
        title: 'Direct',
      })
    ).ask.ask_id as string;
  const commit = (args: Record<string, unknown>, who = ALICE) =>
    call(repo, who, 'commit_changeset', { lane_id: 'ship', ...args });
  const status = () => git('status', '--porcelain=v1', '--untracked-files=all');
  const assertFsck = () => expect(fsckProblems(dir)).toEqual([]);
  return {
    repo,
    dir,
    git,
    head,
    read,
    write,
    userCommit,
    changeset,
    submitAsk,
    commit,
    status,
    assertFsck,
  };
}
