import { readFileSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo } from '../helpers/temp-repo.js';
import { ensureBuilt, killAll, privateEnv, serve, zz } from './zz-process.js';

// Tool commands sent straight to a running daemon (src/cli/fast-path.ts) must answer exactly
// as the full command table does, and hand anything unusual to it.

beforeAll(() => ensureBuilt());
afterEach(async () => {
  await killAll();
});

describe('the CLI fast path to a running daemon', () => {
  it('gives the same answers and exit codes as the full path, and falls back on anything unusual', async () => {
    const { dir, cleanup } = makeRepo();
    const env = privateEnv();
    try {
      expect((await zz(dir, env, ['init'])).code).toBe(0);
      const served = await serve(dir, env);
      expect((await zz(dir, env, ['login'])).code).toBe(0);
      expect(
        (await zz(dir, env, ['lane', 'propose', '--lane-id', 'fp', '--title', 'Fast path'])).code,
      ).toBe(0);
      const fast = await zz(dir, env, ['lane', 'get', '--lane-id', 'fp', '--json']);
      const full = await zz(dir, env, ['call', 'lane_get', '--args', '{"lane_id":"fp"}']);
      expect(fast.code).toBe(0);
      expect(fast.json()).toEqual(full.json());
      // Both went through the daemon (its log names each call).
      await served.waitForLog(/lane_get owner@example.com 200/);
      expect(served.log().match(/lane_get owner@example.com 200/g)?.length).toBe(2);
      const missing = await zz(dir, env, [
        'ask',
        'claim',
        '--lane-id',
        'fp',
        '--ask-id',
        'ask-0000000000',
      ]);
      expect(missing.code).toBe(4);
      expect(missing.stderr).toBe('zz: ask ask-0000000000 does not exist in lane fp\n');
      // A paged read continues with --cursor on the fast path as on the full one (the flag is
      // in dist/cli/tool-manifest.json, written by the build from the tool's one definition).
      for (const title of ['one', 'two', 'three']) {
        const posted = await zz(dir, env, [
          'ask',
          'post',
          '--lane-id',
          'fp',
          '--kind',
          'work',
          '--title',
          title,
        ]);
        expect(posted.code, posted.stderr).toBe(0);
      }
      const manifest = JSON.parse(
        readFileSync(new URL('../../dist/cli/tool-manifest.json', import.meta.url), 'utf8'),
      ) as { tools: Array<{ name: string; options: Array<{ flag: string; kind: string }> }> };
      expect(manifest.tools.find((x) => x.name === 'ask_query_claimable')?.options).toContainEqual({
        key: 'cursor',
        flag: 'cursor',
        kind: 'string',
      });
      const q = ['ask', 'query-claimable', '--lane-id', 'fp', '--limit', '2', '--json'];
      const page1 = await zz(dir, env, q);
      expect(page1.code, page1.stderr).toBe(0);
      const cursor = page1.json().next_cursor as string;
      const fastNext = await zz(dir, env, [...q, '--cursor', cursor]);
      const fullNext = await zz(dir, env, [
        'call',
        'ask_query_claimable',
        '--args',
        JSON.stringify({ lane_id: 'fp', limit: 2, cursor }),
      ]);
      expect(fastNext.code, fastNext.stderr).toBe(0);
      expect(fastNext.json()).toEqual(fullNext.json());
      expect(fastNext.json()).toMatchObject({ total: 3, next_cursor: null });
      expect(fastNext.json().asks).toHaveLength(1);
      await served.waitForLog(/ask_query_claimable owner@example.com 200/);
      expect(served.log().match(/ask_query_claimable owner@example.com 200/g)?.length).toBe(3);
      const garbled = await zz(dir, env, [...q, '--cursor', 'garbage!']);
      expect(garbled.code).toBe(2);
      expect(garbled.stderr).toMatch(/^zz: cursor is not a cursor this server issued/);
      // An unknown flag is the full path's to refuse (yargs, strict), not the daemon's.
      const unknown = await zz(dir, env, ['lane', 'list', '--bogus']);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toMatch(/bogus/);
      // Its time is measured in bench/cli-startup.ts ('zz lane list, through the daemon').
      const listed = await zz(dir, env, ['lane', 'list', '--json']);
      expect(listed.code).toBe(0);
      // Without a daemon the same command runs in-process, with the same answer.
      served.child.kill('SIGTERM');
      await served.exited;
      const offline = await zz(dir, env, ['lane', 'list', '--json']);
      expect(offline.code).toBe(0);
      expect(offline.json().lanes.map((l: { lane_id: string }) => l.lane_id)).toEqual([
        '_repo',
        'fp',
      ]);
      expect(offline.json()).toEqual(listed.json());
    } finally {
      cleanup();
    }
  });
});
