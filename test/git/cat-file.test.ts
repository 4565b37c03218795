import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ZzRepo } from '../../src/core/index.js';
import { CatFile } from '../../src/git/cat-file.js';
import type { ZzError } from '../../src/errors.js';
import { ALICE, call, gitRepo, OWNER } from '../helpers/core-fixture.js';
import { prng, testSeed } from '../helpers/seeded.js';

// Hardening 11.1: the repository's one `git cat-file --batch` is shared by every reader, so a
// revision that makes git die (HEAD@{9999}, @{u} without an upstream, HEAD:./x in a bare
// context) must fail for its caller alone. A hostile reader loops beside honest readers and
// writers on a real repository; every honest read must be byte-exact and every write present.

let repo: ZzRepo;
let dir: string;
let cleanup: () => void;
const files = new Map<string, Buffer>();
let head: string;

const gitOut = (args: string[]): Buffer =>
  execFileSync('git', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });

beforeAll(async () => {
  ({ repo, dir, cleanup } = await gitRepo());
  // Files of different sizes (some larger than a pipe buffer, so replies arrive in pieces),
  // a directory named like a file elsewhere, binary content and a path with a space.
  for (let i = 0; i < 12; i++) {
    const p = i % 3 === 0 ? `dir ${i}/nested/f${i}.txt` : `f${i}.txt`;
    const body =
      i % 4 === 1
        ? Buffer.from(Array.from({ length: 5000 + i * 3001 }, (_, k) => (k * 31 + i) % 256))
        : Buffer.from(`file ${i}\n`.repeat(1 + i * 900));
    mkdirSync(join(dir, p, '..'), { recursive: true });
    writeFileSync(join(dir, p), body);
    files.set(p, body);
  }
  gitOut(['add', '-A']);
  gitOut(['commit', '-q', '-m', 'files']);
  head = gitOut(['rev-parse', 'HEAD']).toString().trim();
  for (const p of files.keys()) {
    expect(gitOut(['cat-file', 'blob', `HEAD:${p}`]).equals(files.get(p)!)).toBe(true);
  }
  await call(repo, OWNER, 'lane_propose', { lane_id: 'l1', title: 'L1' });
});

afterAll(() => cleanup?.());

const HOSTILE = ['HEAD@{9999}', '@{u}', 'main@{upstream}', 'HEAD:./x', 'main@{99999}'];

function contentOf(r: { content: string; encoding: string }): Buffer {
  return Buffer.from(r.content, r.encoding === 'base64' ? 'base64' : 'utf8');
}

describe('cat-file under a hostile reader', () => {
  it('a revision git dies on is a 404 for its caller and nobody else notices', async () => {
    const seed = testSeed('cat-file hostile test');
    const rnd = prng(seed);
    const paths = [...files.keys()];
    const posted: string[] = [];
    const failures: string[] = [];
    const hostile: string[] = [];
    const rounds = 20;
    for (let round = 0; round < rounds; round++) {
      const jobs: Array<Promise<void>> = [];
      // The hostile reader: a burst of bad revisions, through the tools every member can call.
      for (const bad of HOSTILE) {
        for (const [tool, args] of [
          ['git_show_file', { commit: bad, path: 'f1.txt' }],
          ['git_log', { ref: bad }],
        ] as const) {
          jobs.push(
            call(repo, ALICE, tool, args).then(
              () => void hostile.push(`${tool} ${bad}: answered`),
              (e: ZzError) => {
                if (e.code !== 'not_found') hostile.push(`${tool} ${bad}: ${e.code}`);
              },
            ),
          );
        }
      }
      // Honest readers: whole files, checked byte for byte, at the branch and at the oid.
      for (let k = 0; k < 8; k++) {
        const p = paths[Math.floor(rnd() * paths.length)]!;
        const commit = rnd() < 0.5 ? head : 'main';
        jobs.push(
          call(repo, ALICE, 'git_show_file', { commit, path: p, limit: 16 * 1024 * 1024 }).then(
            (r: { content: string; encoding: string; next_offset: number | null }) => {
              if (!contentOf(r).equals(files.get(p)!) || r.next_offset !== null) {
                failures.push(`round ${round}: ${p} at ${commit} read wrong`);
              }
            },
            (e: Error) => void failures.push(`round ${round}: ${p}: ${e.message}`),
          ),
        );
      }
      jobs.push(
        call(repo, ALICE, 'git_log', { ref: head }).then(
          (r: { commits: Array<{ oid: string }> }) => {
            if (r.commits.at(-1)?.oid !== head) failures.push(`round ${round}: git_log wrong`);
          },
          (e: Error) => void failures.push(`round ${round}: git_log: ${e.message}`),
        ),
      );
      // Writers: each post must be acknowledged and then present.
      for (let k = 0; k < 2; k++) {
        const title = `r${round}-w${k}`;
        jobs.push(
          call(repo, ALICE, 'ask_post', { lane_id: 'l1', kind: 'work', title }).then(
            (r: { ask: { ask_id: string } }) => void posted.push(r.ask.ask_id),
            (e: Error) => void failures.push(`round ${round}: ask_post: ${e.message}`),
          ),
        );
      }
      await Promise.all(jobs);
    }
    expect(failures, `seed=${seed}`).toEqual([]);
    expect(hostile, `seed=${seed}`).toEqual([]);
    expect(posted).toHaveLength(rounds * 2);
    const lane = await call(repo, ALICE, 'lane_get', { lane_id: 'l1' });
    const ids = new Set(
      (lane.asks as Array<{ ask_id: string }> | undefined)?.map((a) => a.ask_id) ??
        (lane.lane.asks as Array<{ ask_id: string }>).map((a) => a.ask_id),
    );
    for (const id of posted) expect(ids.has(id), id).toBe(true);
  });
});

describe('CatFile', () => {
  it('answers only full oids from the batch process and resolves the rest on the side', async () => {
    const cf = new CatFile(join(dir, '.git'));
    try {
      const blob = gitOut(['rev-parse', 'HEAD:f1.txt']).toString().trim();
      expect((await cf.read(`${head}:f1.txt`))?.data.equals(files.get('f1.txt')!)).toBe(true);
      expect((await cf.read(`main:f1.txt`))?.oid).toBe(blob);
      expect((await cf.read(`${head}^{tree}`))?.type).toBe('tree');
      expect((await cf.read(`${blob}^{commit}`))?.type).toBeUndefined();
      expect(await cf.read(`${head}:dir 0/nested`)).toMatchObject({ type: 'tree' });
      expect(await cf.read(`${head}:nope/f1.txt`)).toBeNull();
      expect(await cf.read('HEAD@{9999}')).toBeNull();
      expect(await cf.read('@{u}')).toBeNull();
      expect(cf.spawned).toBe(1);
    } finally {
      cf.close();
    }
  });

  it("resolves names from the ref files in git's own order, and the rest through git", async () => {
    const cf = new CatFile(join(dir, '.git'));
    try {
      const first = gitOut(['rev-list', '--max-parents=0', 'HEAD']).toString().trim();
      gitOut(['update-ref', 'refs/heads/both', head]);
      gitOut(['update-ref', 'refs/tags/both', first]); // a tag shadows a branch in git
      gitOut(['symbolic-ref', 'refs/heads/alias', 'refs/heads/main']);
      gitOut(['pack-refs', '--all']);
      gitOut(['update-ref', 'refs/heads/loose', first]);
      for (const name of [
        'main',
        'both',
        'refs/heads/both',
        'heads/both',
        'alias',
        'loose',
        'HEAD',
        'main~1',
        'nope',
      ]) {
        let want: string | null;
        try {
          want = gitOut(['rev-parse', '--verify', '-q', `${name}^{commit}`])
            .toString()
            .trim();
        } catch {
          want = null;
        }
        expect((await cf.read(`${name}^{commit}`))?.oid ?? null, name).toBe(want);
      }
    } finally {
      cf.close();
    }
  });

  it('a reader killed with reads in flight is replaced and the reads still answer exactly', async () => {
    const cf = new CatFile(join(dir, '.git'));
    try {
      const oids = [...files.keys()].map((p) => ({
        p,
        oid: gitOut(['rev-parse', `HEAD:${p}`])
          .toString()
          .trim(),
      }));
      await cf.readOid(oids[0]!.oid);
      const pid = cf.pid!;
      const reads = Array.from({ length: 200 }, (_, i) => oids[i % oids.length]!).map(
        ({ p, oid }) => cf.readOid(oid).then((o) => o?.data.equals(files.get(p)!)),
      );
      process.kill(pid, 'SIGKILL');
      expect(await Promise.all(reads)).toEqual(reads.map(() => true));
      expect(cf.spawned).toBeGreaterThanOrEqual(2);
      expect(cf.pid).not.toBe(pid);
    } finally {
      cf.close();
    }
  });
  it('readMany: one write for many reads, each answered exactly, a bad id failing alone', async () => {
    const cf = new CatFile(join(dir, '.git'));
    try {
      const byOid = new Map<string, Buffer>();
      for (const p of files.keys())
        byOid.set(
          gitOut(['rev-parse', `HEAD:${p}`])
            .toString()
            .trim(),
          files.get(p)!,
        );
      const oids = [...byOid.keys()];
      const missing = 'f'.repeat(40);
      const asked = [...oids, missing, 'not-an-oid', ...oids.slice().reverse()];
      const single = cf.readOid(oids[0]!); // interleaved with a batch: replies stay matched
      const got = await Promise.allSettled(cf.readMany(asked));
      expect((await single)?.data.equals(byOid.get(oids[0]!)!)).toBe(true);
      asked.forEach((oid, i) => {
        const r = got[i]!;
        if (oid === 'not-an-oid') expect(r.status).toBe('rejected');
        else if (oid === missing) expect(r).toEqual({ status: 'fulfilled', value: null });
        else {
          expect(r.status).toBe('fulfilled');
          const o = (r as PromiseFulfilledResult<{ oid: string; data: Buffer } | null>).value;
          expect(o?.oid).toBe(oid);
          expect(o?.data.equals(byOid.get(oid)!), oid).toBe(true);
        }
      });
      // A reader killed with a batch in flight: the unanswered ones go to a fresh reader.
      const pid = cf.pid!;
      const again = cf.readMany(Array.from({ length: 300 }, (_, i) => oids[i % oids.length]!));
      process.kill(pid, 'SIGKILL');
      const objs = await Promise.all(again);
      objs.forEach((o, i) => expect(o?.data.equals(byOid.get(oids[i % oids.length]!)!)).toBe(true));
      expect(cf.spawned).toBeGreaterThanOrEqual(2);
      expect(cf.readMany([])).toEqual([]);
    } finally {
      cf.close();
    }
  });
  it('pathOid walks only trees: a blob mid-path is "not found" without being read', async () => {
    // Review M1: "huge.bin/x" once read the whole blob through the shared --batch process.
    const cf = new CatFile(join(dir, '.git'));
    try {
      const read = vi.spyOn(cf, 'readOid');
      expect(await cf.pathOid(head, 'f1.txt/x')).toBeNull();
      expect(await cf.pathOid(head, 'f1.txt/x/y')).toBeNull();
      const blob = gitOut(['rev-parse', 'HEAD:f1.txt']).toString().trim();
      expect(read.mock.calls.map(([oid]) => oid)).not.toContain(blob);
      // A real path still walks its trees to the blob's id.
      const nested = gitOut(['rev-parse', 'HEAD:dir 0/nested/f0.txt']).toString().trim();
      expect(await cf.pathOid(head, 'dir 0/nested/f0.txt')).toBe(nested);
      expect(await cf.pathOid(head, 'dir 0/nested/f0.txt/x')).toBeNull();
      expect(read.mock.calls.map(([oid]) => oid)).not.toContain(nested);
    } finally {
      cf.close();
    }
  });
});
