import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cutProxy, type CutProxy } from '../helpers/cut-proxy.js';
import { makeRepo } from '../helpers/temp-repo.js';
import { ensureBuilt, killAll, privateEnv, serve, zz, type Served } from './zz-process.js';

// A write whose answer is lost after the daemon committed it (src/cli/fast-path.ts): the CLI
// must never apply it twice. The daemon is real; a proxy on loopback, which daemon.json names
// in place of the daemon, lets the request through and cuts the answer (helpers/cut-proxy.ts).
// Found in review: `zz ask post` fell back to the full command table, which posted again, and
// two Asks were made.

beforeAll(() => ensureBuilt());
let proxy: CutProxy | null = null;
const cleanups: Array<() => void> = [];
afterEach(async () => {
  await proxy?.close();
  proxy = null;
  await killAll();
  for (const c of cleanups.splice(0)) c();
});

/** A served checkout whose daemon.json sends the CLI through a cutting proxy. */
async function throughProxy(): Promise<{
  dir: string;
  env: NodeJS.ProcessEnv;
  served: Served;
  proxy: CutProxy;
}> {
  const { dir, cleanup } = makeRepo();
  cleanups.push(cleanup);
  const env = privateEnv();
  expect((await zz(dir, env, ['init'])).code).toBe(0);
  const served = await serve(dir, env);
  expect((await zz(dir, env, ['login'])).code).toBe(0);
  expect(
    (await zz(dir, env, ['lane', 'propose', '--lane-id', 'fp', '--title', 'Fast path'])).code,
  ).toBe(0);
  proxy = await cutProxy(served.url);
  const file = join(dir, '.git', 'zz', 'daemon.json');
  const info = JSON.parse(readFileSync(file, 'utf8')) as { url: string };
  writeFileSync(file, JSON.stringify({ ...info, url: proxy.url }));
  return { dir, env, served, proxy };
}

const post = (title: string, extra: string[] = []) => [
  'ask',
  'post',
  '--lane-id',
  'fp',
  '--kind',
  'work',
  '--title',
  title,
  '--json',
  ...extra,
];

async function titles(dir: string, env: NodeJS.ProcessEnv): Promise<string[]> {
  const r = await zz(dir, env, ['ask', 'list', '--lane-id', 'fp', '--json']);
  expect(r.code, r.stderr).toBe(0);
  return (r.json().asks as Array<{ title: string }>).map((a) => a.title);
}

const count = (log: string, re: RegExp) => log.match(re)?.length ?? 0;

describe('a write whose answer is lost', () => {
  it('is sent again only with the key it was first sent with, and the CLI says what happened', async () => {
    const { dir, env, served, proxy } = await throughProxy();
    // Lost once: sent again with its key, answered with the first attempt's result.
    proxy.cut('/tools/ask_post', 1);
    const r = await zz(dir, env, post('once'));
    expect(r.code, r.stderr).toBe(0);
    expect(await titles(dir, env)).toEqual(['once']);
    expect(r.stderr).toMatch(
      /^zz: the answer was lost \(ECONNRESET\) after ask_post was sent to the zz daemon; sending it again with idempotency_key cli-[0-9a-f]{24}, which cannot apply it twice\n$/,
    );
    expect(r.json()).toMatchObject({ replayed: true, ask: { title: 'once' } });
    expect(proxy.cuts.get('/tools/ask_post')).toBe(1);
    await served.waitForLog(/ask_post owner@example.com 200/);
    expect(count(served.log(), /ask_post owner@example.com 200/g)).toBe(2);

    // Lost twice: it may have been applied, and the error says how to repeat it safely.
    proxy.cut('/tools/ask_post', 2);
    const lost = await zz(dir, env, post('twice'));
    expect(lost.code).toBe(7); // unavailable
    const m =
      /ask_post may or may not have been applied: repeat the command with --idempotency-key (cli-[0-9a-f]{24}), which cannot apply it twice\n$/.exec(
        lost.stderr,
      );
    expect(m, lost.stderr).not.toBeNull();
    expect(await titles(dir, env)).toEqual(['once', 'twice']);
    const again = await zz(dir, env, post('twice', ['--idempotency-key', m![1]!]));
    expect(again.code, again.stderr).toBe(0);
    expect(again.json()).toMatchObject({ replayed: true });
    expect(await titles(dir, env)).toEqual(['once', 'twice']);

    // A write that takes no key is not sent again.
    proxy.cut('/tools/token_revoke', 1);
    const revoke = await zz(dir, env, ['token', 'revoke', '--actor', 'nobody@example.com']);
    expect(revoke.code).toBe(7);
    expect(revoke.stderr).toBe(
      'zz: the answer was lost (ECONNRESET) after token_revoke was sent to the zz daemon: it may or may not have been applied; check before running it again\n',
    );
    await served.waitForLog(/token_revoke owner@example.com/);
    expect(count(served.log(), /token_revoke owner@example.com/g)).toBe(1);
  }, 120_000);

  it('refused before it was sent, goes to the full path; lost with the daemon killed, is replayed in-process', async () => {
    const { dir, env, served, proxy: first } = await throughProxy();
    // daemon.json names a port nobody listens on while the daemon still runs: nothing was
    // sent, so the full path runs it (in-process: no daemon answers there), once.
    const file = join(dir, '.git', 'zz', 'daemon.json');
    const info = readFileSync(file, 'utf8');
    await first.close();
    const refused = await zz(dir, env, post('refused'));
    expect(refused.code, refused.stderr).toBe(0);
    expect(refused.stderr).toBe('');
    expect(refused.json()).toMatchObject({ replayed: false, ask: { title: 'refused' } });
    expect(count(served.log(), /ask_post/g)).toBe(0);

    // The daemon dies once the Ask is committed, before answering: the full path finds no
    // daemon and replays the key from the op log in-process.
    proxy = await cutProxy(served.url);
    writeFileSync(file, info.replace(first.url, proxy.url));
    proxy.cut('/tools/ask_post', 1, 'start', async () => {
      served.child.kill('SIGKILL');
      await served.exited;
    });
    const killed = await zz(dir, env, post('killed'));
    expect(killed.code, killed.stderr).toBe(0);
    expect(await titles(dir, env)).toEqual(['refused', 'killed']);
    expect(killed.stderr).toMatch(/sending it again with idempotency_key cli-/);
    expect(killed.json()).toMatchObject({ replayed: true, ask: { title: 'killed' } });
  }, 120_000);
});
