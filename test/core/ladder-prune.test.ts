import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initRepo, ladderBuild, LADDER_REF, readLadder, ZzRepo } from '../../src/core/index.js';
import { startLadderSync, type LadderSync } from '../../src/core/ladder/search-sync.js';
import { LadderSearch } from '../../src/search/index.js';
import { call, ladderUpdateClaim, OWNER } from '../helpers/core-fixture.js';
import { addFixture, commitFile } from '../helpers/ladder-fixture.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// Rungs of commits a rebase dropped (DESIGN §6): `zz ladder build` removes the changeset and
// release rungs anchored to commits no ref reaches any more, re-anchors the tree rungs that
// stood on them, and the search index forgets them. Never what a branch, a tag, a
// remote-tracking ref or a worktree's HEAD still holds; never in a shallow clone (commits
// beyond its boundary look unreachable); never a commit this clone has not fetched yet; never
// a rung a person wrote (one clone's reachability is no reason to delete their words everywhere).
// Real repositories, a real `git rebase`, a real bare remote, a real persisted search index.

const KEY = 'acme/tern';
let dir: string;
let remote: string;
let repo: ZzRepo;
let search: LadderSearch;
let sync: LadderSync;
/** The commits of main that the rebase drops, oldest first. */
let old: string[] = [];
let rebased: string[] = [];

const SUBJECTS = ['Reticulate the splines', 'Calibrate the flux capacitor', 'Polish the gasket'];

beforeAll(async () => {
  ({ dir } = makeRepo('zz-ladder-prune-'));
  addFixture(dir);
  old = SUBJECTS.map((m, i) =>
    commitFile(dir, `src/part${i}.ts`, `export const p${i} = ${i};\n`, m),
  );
  remote = tempDir('zz-prune-remote-');
  sh(remote, 'init', '-q', '--bare');
  sh(dir, 'remote', 'add', 'origin', remote);
  sh(dir, 'push', '-q', 'origin', 'main');
  sh(dir, 'fetch', '-q', 'origin');
  repo = await ZzRepo.open(dir, { key: KEY });
  await initRepo(repo, { owner: OWNER.actor, default_branch: 'main' });
  search = new LadderSearch({ cacheDir: tempDir('zz-prune-cache-'), persistDelayMs: 0 });
  sync = await startLadderSync(search, new Map([[KEY, repo]]), { watch: false });
});
afterAll(async () => {
  await sync.close();
  await search.close();
  repo.close();
});

const build = () => ladderBuild(repo, { actor: OWNER.actor });
const changesets = async (r: ZzRepo = repo) =>
  [...(await readLadder(r)).state.keys()].filter((p) => p.startsWith('_changesets/')).sort();
const cs = (oid: string) => `_changesets/${oid}`;
async function hits(query: string): Promise<string[]> {
  await sync.refresh(repo);
  return search.search({ query, repo: KEY, kind: 'changeset', limit: 50 }).hits.map((h) => h.path);
}

describe('ladder build after a rebase', () => {
  it('keeps what a branch, a tag, origin/main or a worktree HEAD holds; prunes the rest', async () => {
    expect((await build()).committed).toBe(true);
    for (const o of old) expect(await changesets()).toContain(cs(o));
    expect(await hits('reticulate splines')).toContain(cs(old[0]!));

    // Hold old[1] by a branch and old[0] by a tag (old[1]'s branch holds old[0] too).
    sh(dir, 'branch', 'keep', old[1]!);
    sh(dir, 'tag', 'old-tag', old[0]!);
    // Rebase main for real onto an upstream commit: every old commit gets a new id.
    const base = sh(dir, 'rev-parse', `${old[0]}~1`);
    sh(dir, 'checkout', '-q', '-b', 'upstream', base);
    commitFile(dir, 'UPSTREAM.md', '# Upstream\n', 'upstream change');
    sh(dir, 'checkout', '-q', 'main');
    sh(dir, 'rebase', '-q', 'upstream');
    rebased = sh(dir, 'rev-list', '--reverse', '-n', '3', 'main').split('\n');
    expect(rebased.some((o) => old.includes(o))).toBe(false);

    // origin/main still holds the old commits: nothing is pruned yet.
    const r1 = await build();
    expect(r1.pruned).toBe(0);
    const s1 = await changesets();
    for (const o of [...old, ...rebased]) expect(s1).toContain(cs(o));

    // Published: origin/main moves to the rebased history. A worktree left on old[2] holds it.
    sh(dir, 'push', '-q', '--force', 'origin', 'main');
    sh(dir, 'fetch', '-q', '--prune', 'origin');
    const wt = join(tempDir('zz-prune-wt-'), 'wt');
    sh(dir, 'worktree', 'add', '-q', '--detach', wt, old[2]!);
    const r2 = await build();
    expect(r2.pruned).toBe(0);
    expect(await changesets()).toContain(cs(old[2]!));

    sh(dir, 'worktree', 'remove', '--force', wt);
    const r3 = await build();
    expect(r3.pruned).toBe(1);
    const s3 = await changesets();
    expect(s3).not.toContain(cs(old[2]!));
    expect(s3).toContain(cs(old[1]!)); // branch keep
    expect(s3).toContain(cs(old[0]!)); // branch keep and tag old-tag

    sh(dir, 'branch', '-D', 'keep');
    expect((await build()).pruned).toBe(1);
    expect(await changesets()).toContain(cs(old[0]!)); // the tag still holds it
    expect(await changesets()).not.toContain(cs(old[1]!));

    sh(dir, 'tag', '-d', 'old-tag');
    const r5 = await build();
    expect(r5.pruned).toBe(1);
    expect(r5.removed).toBe(2); // and the tag's release rung, as any deleted tag's
    const s5 = await changesets();
    for (const o of old) expect(s5).not.toContain(cs(o));
    for (const o of rebased) expect(s5).toContain(cs(o));
    // The same build again writes nothing.
    const oid = sh(dir, 'rev-parse', LADDER_REF);
    expect((await build()).committed).toBe(false);
    expect(sh(dir, 'rev-parse', LADDER_REF)).toBe(oid);
  });

  it('leaves every rung anchored to a commit some ref reaches, and search forgets the rest', async () => {
    const reachable = new Set(sh(dir, 'rev-list', '--all').split('\n'));
    const { state } = await readLadder(repo);
    // Tree rungs that stood on the old head were re-anchored to the rebased one.
    for (const r of state.values()) if (r.anchor) expect(reachable.has(r.anchor.commit)).toBe(true);
    const found = await hits('reticulate splines');
    expect(found).toContain(cs(rebased[0]!));
    for (const o of old) expect(found).not.toContain(cs(o));
  });

  it('prunes nothing in a shallow clone, whose old commits look unreachable', async () => {
    const clone = join(tempDir('zz-prune-shallow-'), 'c');
    sh(dir, 'clone', '-q', '--no-local', dir, clone);
    sh(clone, 'fetch', '-q', 'origin', `+${LADDER_REF}:${LADDER_REF}`);
    // Shallow after the fact: the old commits are still held, but rev-list stops at the cut.
    sh(clone, 'fetch', '-q', '--depth=1', 'origin', 'main');
    expect(sh(clone, 'rev-parse', '--is-shallow-repository')).toBe('true');
    expect(sh(clone, 'cat-file', '-t', rebased[0]!)).toBe('commit');
    const c = await ZzRepo.open(clone, { key: KEY });
    try {
      const before = await changesets(c);
      expect(before.length).toBeGreaterThanOrEqual(5);
      const r = await ladderBuild(c, { actor: OWNER.actor });
      expect(r.pruned).toBe(0);
      expect(r.prune_skipped).toBe('shallow');
      expect(await changesets(c)).toEqual(before);
    } finally {
      c.close();
    }
  });

  it('keeps rungs of commits this clone has not fetched yet, and after it has', async () => {
    const clone = join(tempDir('zz-prune-behind-'), 'c');
    sh(dir, 'clone', '-q', '--no-local', '--single-branch', '-b', 'main', dir, clone);
    // The source moves on: two commits, built into its Ladder; the clone fetches that Ladder
    // (rung files naming those commits) but not the commits themselves.
    const ahead = [
      commitFile(dir, 'src/later.ts', 'export const later = 1;\n', 'Later work'),
      commitFile(dir, 'src/later.ts', 'export const later = 2;\n', 'More later work'),
    ];
    await build();
    sh(clone, 'fetch', '-q', 'origin', `+${LADDER_REF}:${LADDER_REF}`);
    expect(() => sh(clone, 'cat-file', '-e', ahead[0]!)).toThrow();
    const c = await ZzRepo.open(clone, { key: KEY });
    try {
      const r = await ladderBuild(c, { actor: OWNER.actor });
      expect(r.pruned).toBe(0);
      for (const o of ahead) expect(await changesets(c)).toContain(cs(o));
      sh(clone, 'fetch', '-q', 'origin');
      const r2 = await ladderBuild(c, { actor: OWNER.actor });
      expect(r2.pruned).toBe(0);
      for (const o of ahead) expect(await changesets(c)).toContain(cs(o));
    } finally {
      c.close();
    }
  });

  it('never prunes a rung a person wrote; a generated one of the same dropped branch goes', async () => {
    // A branch this clone had, with a tag: a person describes its first commit and the tag's
    // release; an agent's model writes up the second. Then branch and tag go (here: deleted;
    // on a real team, a fetch --prune of a branch someone deleted upstream).
    sh(dir, 'checkout', '-q', '-b', 'side');
    const s1 = commitFile(dir, 'src/side1.ts', 'export const s1 = 1;\n', 'Side work one');
    const s2 = commitFile(dir, 'src/side2.ts', 'export const s2 = 2;\n', 'Side work two');
    sh(dir, 'checkout', '-q', 'main');
    sh(dir, 'tag', 'v9-side', s1);
    const askId = await ladderUpdateClaim(repo, OWNER, 'notes', 'Describe the side branch');
    const words = 'Side work one, described by a person who was there.';
    await call(repo, OWNER, 'ladder_write_rung', {
      lane_id: 'notes',
      ask_id: askId,
      rungs: [
        { path: cs(s1), kind: 'changeset', title: 'Side one', summary: words, commit: s1 },
        { path: '_releases/v9-side', kind: 'release', title: 'v9', summary: words, commit: s1 },
        {
          path: cs(s2),
          kind: 'changeset',
          title: 'Side two',
          summary: 'Side work two, as a model put it.',
          commit: s2,
          generator: { method: 'model', model: 'alpha' },
        },
      ],
    });
    sh(dir, 'tag', '-d', 'v9-side');
    sh(dir, 'branch', '-D', 'side');

    const r = await build();
    expect(r.pruned).toBe(1); // the model's rung: pruning did run here
    const { state } = await readLadder(repo);
    expect(state.has(cs(s2))).toBe(false);
    for (const p of [cs(s1), '_releases/v9-side']) {
      expect(state.get(p)?.summary).toBe(words);
      expect(state.get(p)?.generator.method).toBe('human');
    }
    expect((await build()).committed).toBe(false);
  });
});
