import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { laneRef, type ZzRepo } from '../../src/core/index.js';
import { ALICE, BOB, call, gitRepo, OWNER, rejects } from '../helpers/core-fixture.js';
import { sh } from '../helpers/temp-repo.js';

// Issue 11.2: one bad entity never breaks the others. Each is reported by ref name (lane_list,
// repo_state) and answers entity_corrupt (422) when read by name; a Lane's id is its ref name.

function git(dir: string, input: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd: dir, input, encoding: 'utf8' }).trim();
}

/** A commit on `ref` (parent: its head, if any) with `message` and a tree of `files`. */
function handCommit(dir: string, ref: string, message: string, files: Record<string, string>) {
  const entries = Object.entries(files).map(([name, text]) => {
    const blob = git(dir, text, 'hash-object', '-w', '--stdin');
    return `100644 blob ${blob}\t${name}`;
  });
  const tree = git(dir, entries.join('\n') + (entries.length ? '\n' : ''), 'mktree');
  let parent: string | null;
  try {
    parent = sh(dir, 'rev-parse', '--verify', '-q', ref);
  } catch {
    parent = null;
  }
  const commit = git(dir, message, 'commit-tree', tree, ...(parent ? ['-p', parent] : []));
  sh(dir, 'update-ref', ref, commit);
}

const opLine = (ops: unknown[]) => `hand-written\n\nzz-ops ${JSON.stringify(ops)}\n`;

describe('corrupt entities are reported by ref; everything else stays readable', () => {
  let done: (() => void) | null = null;
  afterEach(() => done?.());

  async function setup(): Promise<{ repo: ZzRepo; dir: string }> {
    const { repo, dir, cleanup } = await gitRepo();
    done = cleanup;
    await call(repo, ALICE, 'lane_propose', { lane_id: 'victim1', title: 'Victim' });
    await call(repo, ALICE, 'ask_post', { lane_id: 'victim1', kind: 'work', title: 'Work' });
    await call(repo, ALICE, 'lane_propose', { lane_id: 'bad1', title: 'Soon bad' });
    const victim = sh(dir, 'rev-parse', laneRef('victim1'));
    // bad1: an op whose args are null on top of a good Lane.
    const good = (await repo.store.history(laneRef('bad1')))[0]!.ops[0]!;
    handCommit(dir, laneRef('bad1'), opLine([{ ...good, id: 'ffffffffff', args: null }]), {});
    // bad2: the ref points at a blob.
    sh(dir, 'update-ref', laneRef('bad2'), git(dir, 'x', 'hash-object', '-w', '--stdin'));
    // bad3: victim1's history copied under another name.
    sh(dir, 'update-ref', laneRef('bad3'), victim);
    // bad4: a commit without ops whose lane.json is not JSON.
    handCommit(dir, laneRef('bad4'), 'by hand\n', { 'lane.json': '{not json' });
    // bad5: an ops line that is not JSON.
    handCommit(dir, laneRef('bad5'), 'x\n\nzz-ops [{"id": "1",\n', {});
    // BAD6: a ref whose name is not a lane id.
    sh(dir, 'update-ref', 'refs/zz/lanes/BAD6', victim);
    return { repo, dir };
  }

  it('lane_list, repo_state and lane_events skip and report each bad Lane by ref', async () => {
    const { repo } = await setup();
    const bad = ['bad1', 'bad2', 'bad3', 'bad4', 'bad5', 'BAD6'].map((id) => laneRef(id)).sort();
    const list = await call(repo, BOB, 'lane_list', {});
    expect(list.lanes.map((l: { lane_id: string }) => l.lane_id).sort()).toEqual([
      '_repo',
      'victim1',
    ]);
    expect(list.corrupt.map((c: { ref: string }) => c.ref).sort()).toEqual(bad);
    const state = await call(repo, OWNER, 'repo_state', {});
    expect(state.corrupt.map((c: { ref: string }) => c.ref).sort()).toEqual(bad);
    expect(state.lanes).toHaveLength(2);
    const events = await call(repo, BOB, 'lane_events', {});
    expect(new Set(events.events.map((e: { lane_id: string }) => e.lane_id))).toEqual(
      new Set(['_repo', 'victim1']),
    );
    // ask_list and lane_events name what they skipped, the way lane_list does.
    const refs = (r: { corrupt: Array<{ ref: string }> }) => r.corrupt.map((c) => c.ref).sort();
    expect(refs(events)).toEqual(bad);
    expect(events.corrupt).toEqual(list.corrupt);
    const asks = await call(repo, BOB, 'ask_list', {});
    expect(asks.asks).toHaveLength(1);
    expect(refs(asks)).toEqual(bad);
    expect((await call(repo, BOB, 'ask_list', { lane_id: 'victim1' })).corrupt).toEqual([]);
    await rejects(call(repo, BOB, 'ask_get', { ask_id: 'ask-0000000000' }), 'not_found', /bad1/);
  });

  it('lane_list pages read only their own Lanes and name each bad ref on one page', async () => {
    const { repo } = await setup();
    const bad = ['bad1', 'bad2', 'bad3', 'bad4', 'bad5', 'BAD6'].map((id) => laneRef(id)).sort();
    // Which Lane refs a page reads: a page of one Lane must not read the other seven (every
    // page reading every Lane made paging through N Lanes cost N²/limit reads).
    const headsRead: string[] = [];
    const head = repo.store.head.bind(repo.store);
    repo.store.head = (ref: string) => {
      if (ref.startsWith('refs/zz/lanes/')) headsRead.push(ref);
      return head(ref);
    };
    const seen: string[] = [];
    const named: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 20; pages++) {
      headsRead.length = 0;
      const r = await call(repo, BOB, 'lane_list', { limit: 1, ...(cursor ? { cursor } : {}) });
      expect(r.total).toBe(8);
      expect(r.lanes.length).toBeLessThanOrEqual(1);
      seen.push(...r.lanes.map((l: { lane_id: string }) => l.lane_id));
      named.push(...r.corrupt.map((c: { ref: string }) => c.ref));
      // The page's Lane and the bad refs sorting before it, nothing after.
      const upTo = r.lanes.length ? laneRef(r.lanes[0]!.lane_id) : '\uffff';
      expect(headsRead.filter((ref) => ref > upTo)).toEqual([]);
      cursor = r.next_cursor ?? undefined;
      if (!cursor) break;
    }
    expect(seen).toEqual(['_repo', 'victim1']);
    expect(named.sort()).toEqual(bad);
  });

  it('each bad Lane read by name is entity_corrupt naming its ref and what is wrong', async () => {
    const { repo } = await setup();
    const why: Record<string, RegExp> = {
      bad1: /refs\/zz\/lanes\/bad1.*args/,
      bad2: /refs\/zz\/lanes\/bad2 cannot be read/,
      bad3: /refs\/zz\/lanes\/bad3.*holds lane victim1, not bad3/,
      bad4: /refs\/zz\/lanes\/bad4.*no lane_propose/,
      bad5: /refs\/zz\/lanes\/bad5.*not JSON/,
    };
    for (const [id, re] of Object.entries(why)) {
      const e = await rejects(call(repo, BOB, 'lane_get', { lane_id: id }), 'entity_corrupt', re);
      expect(e.status).toBe(422);
      await rejects(
        call(repo, ALICE, 'ask_post', { lane_id: id, kind: 'work', title: 'x' }),
        'entity_corrupt',
      );
    }
    // The original is untouched and still writable.
    const got = await call(repo, BOB, 'lane_get', { lane_id: 'victim1' });
    expect(got.lane.lane_id).toBe('victim1');
    await call(repo, ALICE, 'ask_post', { lane_id: 'victim1', kind: 'work', title: 'More' });
  });
});

// A ref under a Lane's name (refs/zz/lanes/x/y, made by hand or fetched) leaves a directory
// where Lane x's ref file would be. Git reads x as absent and refuses to create it; zz too:
// reads answer not_found and a write a 409 naming the refs in the way, never a 500 (EISDIR).
describe('a directory of refs in the place of a Lane', () => {
  it('reads as no Lane, a write is a conflict naming it, and the other Lanes are untouched', async () => {
    const { repo, dir, cleanup } = await gitRepo();
    try {
      await call(repo, ALICE, 'lane_propose', { lane_id: 'ok1', title: 'Fine' });
      const ok1 = sh(dir, 'rev-parse', laneRef('ok1'));
      sh(dir, 'update-ref', `${laneRef('nest')}/inner`, ok1);
      await rejects(call(repo, ALICE, 'lane_get', { lane_id: 'nest' }), 'not_found');
      await rejects(
        call(repo, ALICE, 'lane_propose', { lane_id: 'nest', title: 'Blocked' }),
        'conflict',
        /refs\/zz\/lanes\/nest cannot be written: refs named refs\/zz\/lanes\/nest\/… are in its place/,
      );
      expect(sh(dir, 'rev-parse', `${laneRef('nest')}/inner`)).toBe(ok1);
      expect(sh(dir, 'for-each-ref', '--format=%(refname)', 'refs/zz/lanes/')).not.toMatch(
        /lanes\/nest\n|lanes\/nest$|\.lock/,
      );
      const got = (await call(repo, ALICE, 'lane_get', { lane_id: 'ok1' })) as {
        lane: { title: string };
      };
      expect(got.lane.title).toBe('Fine');
      // Once the refs in the way are gone, the Lane can be made.
      sh(dir, 'update-ref', '-d', `${laneRef('nest')}/inner`);
      await call(repo, ALICE, 'lane_propose', { lane_id: 'nest', title: 'Now' });
    } finally {
      cleanup();
    }
  });

  it('an empty directory left in its place is removed and the Lane written, as git does', async () => {
    // git update-ref removes empty directories in a ref's way (only refs in them block it):
    // zz refused the write with a 409 naming refs that are not there.
    const { repo, dir, cleanup } = await gitRepo();
    try {
      mkdirSync(join(dir, '.git', 'refs', 'zz', 'lanes', 'hollow', 'deeper'), { recursive: true });
      await call(repo, ALICE, 'lane_propose', { lane_id: 'hollow', title: 'Made' });
      const got = (await call(repo, ALICE, 'lane_get', { lane_id: 'hollow' })) as {
        lane: { title: string };
      };
      expect(got.lane.title).toBe('Made');
      const refs = sh(dir, 'for-each-ref', '--format=%(refname)', 'refs/zz/lanes/').split('\n');
      expect(refs.filter((r) => r.startsWith(laneRef('hollow')))).toEqual([laneRef('hollow')]);
    } finally {
      cleanup();
    }
  });
});
