import { describe, expect, it, onTestFinished, vi } from 'vitest';
import {
  ladderEntity,
  ladderWriteRung,
  laneGrant,
  lanePropose,
  roleGrant,
  type ZzRepo,
} from '../../src/core/index.js';
import { LadderEntity } from '../../src/core/ladder/ladder-entity.js';
import { ladderSearch } from '../../src/core/ladder/ladder-search.js';
import { indexRepo, startLadderSync } from '../../src/core/ladder/search-sync.js';
import { syncRepo } from '../../src/core/sync/index.js';
import { CONFIG_REF, LADDER_REF } from '../../src/core/zz-repo.js';
import { LadderSearch } from '../../src/search/index.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { sh } from '../helpers/temp-repo.js';
import { makeCluster, onColdRepo, type Clone } from '../sync/git-cluster.js';
import { BOSS, claimed, CO, demotable, INIT, OWNER } from '../sync/rooted-fixture.js';

// The search index holds the rungs the Ladder's guarded fold holds, and that fold depends on
// refs/zz/config and on the cited Lanes' coordinator histories as well as on refs/zz/ladder
// (core/ladder/role-key.ts). Each case here was a defect of a shard keyed on the ladder oid
// alone. Real git repositories, real clones and sync, a real ref watcher.

const WORD = 'zebrafalcon';

function hits(search: LadderSearch): string[] {
  return search.search({ query: WORD, repo: 'local/test', limit: 5 }).hits.map((h) => h.path);
}

/** A rung `who` writes in Lane web on `repo`, its summary holding WORD. */
async function writeRung(repo: ZzRepo, who: { actor: string }, path: string, ask?: string) {
  await ladderWriteRung(repo, who, {
    lane_id: 'web',
    ask_id: ask ?? (await claimed(repo, who, 'web')),
    rungs: [{ path, kind: 'topic', title: path, summary: `${WORD} notes` }],
  });
}

function newSearch(dir: string): LadderSearch {
  const search = new LadderSearch({ cacheDir: dir, persistDelayMs: 0 });
  onTestFinished(() => search.close());
  return search;
}

/** Polls (bounded) until `what` holds. */
async function until(what: () => boolean, label: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!what()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${label}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('the search index follows the Ladder fold’s roles', () => {
  // `zz ladder search` without a daemon loads the persisted shard for the ladder ref: a
  // demotion moved refs/zz/config only, and the refused rung stayed searchable.
  it('a persisted shard is not loaded after a demotion moved the config; a claim in a cited Lane leaves it good', async () => {
    const { repo, boss } = await demotable();
    await writeRung(repo, CO, '_topics/co1');
    const dir = tempDir('zz-roles-search-');
    const first = newSearch(dir);
    expect((await indexRepo(first, repo))?.source).toBe('built');
    expect(hits(first)).toEqual(['_topics/co1']);
    await first.flush();

    // A claim and an answer-free Ask in cited Lanes: their heads move, their coordinators do
    // not. The shard is loaded, not rebuilt (the key's digest holds).
    await claimed(repo, CO, 'web');
    await claimed(repo, INIT, '_repo');
    const second = newSearch(dir);
    expect(await indexRepo(second, repo)).toMatchObject({ source: 'cache' });
    expect(hits(second)).toEqual(['_topics/co1']);

    await roleGrant(boss, BOSS, { grantee: INIT.actor, role: 'owner', revoke: true });
    expect((await ladderEntity(repo).read()).state.get('_topics/co1')).toBeUndefined();
    const third = newSearch(dir);
    expect(await indexRepo(third, repo)).toMatchObject({
      source: 'built',
      reason: 'inputs_changed',
    });
    expect(hits(third)).toEqual([]);
  });

  // Another machine's revoke, dated before a rung this clone accepted, arrives by sync: the
  // fold refuses the rung with refs/zz/ladder and refs/zz/config where they were.
  it('a coordinator revoke arriving by sync drops the rung it refuses from a running index (ref watcher)', async () => {
    const cluster = await makeCluster(2);
    onTestFinished(() => cluster.cleanup());
    const [a, b] = cluster.clones as [Clone, Clone];
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'web' });
    await laneGrant(a.repo, OWNER, { lane_id: 'web', grantee: CO.actor, role: 'coordinator' });
    const ask = await claimed(a.repo, CO, 'web');
    await a.sync();
    await b.sync();
    await laneGrant(b.repo, OWNER, {
      lane_id: 'web',
      grantee: CO.actor,
      role: 'coordinator',
      revoke: true,
    });
    await new Promise((r) => setTimeout(r, 20));
    // A has not seen the revoke: the write is honoured there, and pushed.
    await writeRung(a.repo, CO, '_topics/co1', ask);
    await a.sync();

    const search = newSearch(tempDir('zz-roles-sync-'));
    const live = await startLadderSync(search, new Map([['local/test', a.repo]]), {
      debounceMs: 50,
    });
    onTestFinished(() => live.close());
    await live.ready;
    expect(hits(search)).toEqual(['_topics/co1']);
    const ladder = await a.repo.store.head(LADDER_REF);
    const config = await a.repo.store.head(CONFIG_REF);

    await b.sync();
    // B's work fetched first (a plain `git fetch`): the watcher's look finds no ref of the
    // fold moved. Then the sync runs in another ZzRepo (a `zz sync` beside the daemon): it
    // fast-forwards refs/zz/lanes/web and pushes nothing (no tracking ref moves), so only the
    // watch on the Lanes tells the index.
    sh(a.dir, 'fetch', '-q', 'origin', '+refs/zz/*:refs/zz-remotes/origin/*');
    await new Promise((r) => setTimeout(r, 500));
    await live.refresh(a.repo);
    expect(hits(search)).toEqual(['_topics/co1']);
    await onColdRepo(a, (r) => syncRepo(r, undefined, { backoff: async () => {} }));
    expect(await a.repo.store.head(LADDER_REF)).toBe(ladder);
    expect(await a.repo.store.head(CONFIG_REF)).toBe(config);
    expect((await ladderEntity(a.repo).read()).state.get('_topics/co1')).toBeUndefined();
    await until(() => hits(search).length === 0, 'the refused rung to leave the index');
  });

  // A daemon's search between a demotion by another process and its watcher's look: the
  // refused rung was answered (the search checked the ladder ref alone).
  it('a daemon search right after a demotion another process made answers no refused rung', async () => {
    const { repo, boss } = await demotable();
    await writeRung(repo, CO, '_topics/co1');
    const search = newSearch(tempDir('zz-roles-daemon-'));
    // No watcher: the search's own check is what must notice.
    const live = await startLadderSync(search, new Map([['local/test', repo]]), { watch: false });
    onTestFinished(() => live.close());
    await live.ready;
    const services = { search, current: (r: ZzRepo) => live.refresh(r) };
    const found = async () =>
      (await ladderSearch(repo, null, services, { query: WORD })).hits.map((h) => h.path);
    expect(await found()).toEqual(['_topics/co1']);
    await roleGrant(boss, BOSS, { grantee: INIT.actor, role: 'owner', revoke: true });
    expect(await found()).toEqual([]);
  });

  it('a forced re-index keeps the old entries searchable until the new ones replace them', async () => {
    const { a, repo } = await demotable();
    await writeRung(repo, CO, '_topics/co1');
    const search = newSearch(tempDir('zz-roles-swap-'));
    await indexRepo(search, repo);
    expect(hits(search)).toEqual(['_topics/co1']);
    const seen: number[] = [];
    let done = false;
    // A repository opened afresh (`zz ladder reindex`): its fold reads git, many turns long.
    const rebuilt = onColdRepo(a, (cold) => indexRepo(search, cold, { force: true })).finally(
      () => (done = true),
    );
    while (!done) {
      seen.push(hits(search).length);
      await new Promise((r) => setImmediate(r));
    }
    expect((await rebuilt)?.source).toBe('built');
    expect(seen.length).toBeGreaterThan(1);
    expect(seen.every((n) => n === 1)).toBe(true);
    expect(hits(search)).toEqual(['_topics/co1']);
  });

  // A daemon start folded every repository before loading its shard (50 repositories: 50
  // folds). The key is checked by ref reads; no Ladder is folded.
  it('a start loads a persisted shard whose key holds without folding the Ladder; a claim in a cited Lane folds none either', async () => {
    const { repo } = await demotable();
    await writeRung(repo, CO, '_topics/co1');
    const dir = tempDir('zz-roles-start-');
    const first = newSearch(dir);
    await indexRepo(first, repo);
    await first.flush();

    const folds = vi.spyOn(LadderEntity.prototype, 'read');
    onTestFinished(() => folds.mockRestore());
    const search = newSearch(dir);
    const live = await startLadderSync(search, new Map([['local/test', repo]]), { watch: false });
    onTestFinished(() => live.close());
    await live.ready;
    expect(search.stats().shards.map((s) => s.source)).toEqual(['cache']);
    expect(hits(search)).toEqual(['_topics/co1']);
    expect(folds).not.toHaveBeenCalled();

    // A claim in a cited Lane moves its ref, not its coordinators: the running index reads that
    // Lane, re-keys its shard and folds no Ladder (what the ref watcher's look does).
    const held = search.inputsOf('local/test');
    await claimed(repo, CO, 'web');
    await live.refresh(repo);
    expect(search.inputsOf('local/test')).not.toBe(held);
    expect(search.stats().shards.map((s) => s.source)).toEqual(['cache']);
    expect(folds).not.toHaveBeenCalled();
  });
});
