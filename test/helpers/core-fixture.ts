import { expect } from 'vitest';
import { initRepo, ZzRepo, type Caller } from '../../src/core/index.js';
import type { ZzError } from '../../src/errors.js';
import { parseLaneOp, type LaneOp } from '../../src/schema/index.js';
import type { OpRecord } from '../../src/store/index.js';
import { registry, runTool, type ToolName, type ToolOutput } from '../../src/tools/index.js';
import { zzErrorOf } from './rejection.js';
import { makeRepo } from './temp-repo.js';

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
