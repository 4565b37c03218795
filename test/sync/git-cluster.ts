import { mkdtempSync, rmSync } from 'node:fs';
import { afterEach } from 'vitest';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initRepo, ladderEntity, laneGet, ZzRepo, type RungRecord } from '../../src/core/index.js';
import { signAs, syncRepo, type SyncOptions, type SyncReport } from '../../src/core/sync/index.js';
import { generateSigningKey, type SshSigningKey } from '../../src/git/index.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// A bare remote and clones of it, each with its own ZzRepo (what a daemon holds), for the
// real-git sync tests.

export interface Clone {
  dir: string;
  /** The owner's key on clone 0 (and on every clone with initAll). */
  key: SshSigningKey;
  repo: ZzRepo;
  sync(opts?: Omit<SyncOptions, 'authoritative'>): Promise<SyncReport>;
}

export interface Cluster {
  remote: string;
  clones: Clone[];
  cleanup(): void;
}

const noSleep = async () => {};

/** The clusters made and not yet cleaned up. */
const made = new Set<Cluster>();

/**
 * Call once at the top of a test file that makes clusters: after each test, every cluster it
 * made is cleaned up (the `let cluster …; afterEach(() => cluster?.cleanup())` each file wrote).
 */
export function cleanUpClusters(): void {
  afterEach(() => {
    for (const c of [...made]) c.cleanup();
  });
}

export async function makeCluster(
  n: number,
  opts: { initAll?: boolean; signed?: boolean } = {},
): Promise<Cluster> {
  const remote = mkdtempSync(join(tmpdir(), 'zz-remote-'));
  sh(remote, 'init', '-q', '--bare', '-b', 'main');
  const cleanups: Array<() => void> = [() => rmSync(remote, { recursive: true, force: true })];
  const clones: Clone[] = [];
  for (let i = 0; i < n; i++) {
    const { dir, cleanup } = makeRepo(`zz-clone${i}-`);
    cleanups.push(cleanup);
    sh(dir, 'remote', 'add', 'origin', remote);
    const repo = await ZzRepo.open(dir, { key: 'local/test' });
    cleanups.push(() => repo.close());
    const { key } = generateSigningKey();
    const clone: Clone = {
      dir,
      key,
      repo,
      sync: (o) => syncRepo(repo, undefined, { backoff: noSleep, ...o }),
    };
    clones.push(clone);
    if (i === 0 || opts.initAll) {
      signAs(repo, 'owner@example.com', key);
      await initRepo(repo, {
        owner: 'owner@example.com',
        default_branch: 'main',
        owner_keys: [key.publicKey],
        ...(opts.signed ? { signed: true } : {}),
      });
    }
    if (i === 0) await clone.sync();
  }
  // Later clones adopt the config the first one pushed.
  if (!opts.initAll) for (const c of clones.slice(1)) await c.sync();
  const cluster: Cluster = {
    remote,
    clones,
    // Once only: a file may clean up itself as well as by cleanUpClusters.
    cleanup: () => {
      if (!made.delete(cluster)) return;
      for (const c of cleanups.reverse()) c();
    },
  };
  made.add(cluster);
  return cluster;
}

/** refs/zz/* of a repository (or the bare remote), name → oid. */
export function zzRefs(dir: string): Map<string, string> {
  const out = sh(dir, 'for-each-ref', '--format=%(refname) %(objectname)', 'refs/zz/');
  return new Map(
    out
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(' ') as [string, string]),
  );
}

/**
 * Pushes `ref` from a clone with plain git, as someone bypassing zz (or an older zz) would:
 * `zz sync` itself holds back what other machines would quarantine, so the import checks are
 * shown against what only such a push puts on the remote.
 */
export function pushRaw(clone: Clone, ref: string): void {
  sh(clone.dir, 'push', '-q', 'origin', `${ref}:${ref}`);
}

/** `f` on a fresh ZzRepo of the clone: a daemon started after the sync folds from scratch. */
export async function onColdRepo<T>(c: Clone, f: (repo: ZzRepo) => Promise<T>): Promise<T> {
  const repo = await ZzRepo.open(c.dir, { key: 'local/test' });
  try {
    return await f(repo);
  } finally {
    repo.close();
  }
}

/** What a Lane's history shows as refused, as [op, actor, reason], read as `viewer`. */
export async function refusalsIn(
  repo: ZzRepo,
  viewer: { actor: string },
  laneId = 'web',
): Promise<unknown[][]> {
  return (await laneGet(repo, viewer, { lane_id: laneId })).history
    .filter((h) => h.rejected)
    .map((h) => [h.op, h.actor, h.rejected?.reason]);
}

/**
 * A ladder_build by `actor` upserting `upsert`, written past the local checks as another
 * machine's zz may have (recordRefused: kept in the log even where the fold refuses it), or,
 * with `recordRefused: false`, as a local write the fold must accept.
 */
export async function rawLadderBuild(
  repo: ZzRepo,
  actor: string,
  upsert: RungRecord[],
  { recordRefused = true }: { recordRefused?: boolean } = {},
): Promise<void> {
  await ladderEntity(repo).mutate({
    actor,
    ...(recordRefused ? { recordRefused: true as const } : {}),
    decide: () => ({
      op: 'ladder_build',
      summary: `ladder_build by ${actor}`,
      args: {
        branch: 'main',
        head: '0'.repeat(40),
        generator: { method: 'extractive', version: '1' },
        upsert,
        remove: [],
      },
    }),
    result: () => null,
  });
}
