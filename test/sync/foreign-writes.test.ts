import { afterEach, describe, expect, it } from 'vitest';
import { initRepo } from '../../src/core/index.js';
import { personKeyInfo, syncRepo } from '../../src/core/sync/index.js';
import { generateSigningKey } from '../../src/git/index.js';
import { TokenStore } from '../../src/core/token-store.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { makeRepo } from '../helpers/temp-repo.js';
import { join } from 'node:path';
import { jsonClient, type JsonClient } from '../helpers/http-client.js';
import { startTestDaemon, type TestDaemon } from '../helpers/test-daemon.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { sh } from '../helpers/temp-repo.js';
import { zzRefs } from './git-cluster.js';

// A daemon signs only for its checkout's person (git user.email) and their agents. Another
// person's token used to write through it unsigned, answered 200: a key_add of their own then
// held refs/zz/config back on every later sync (the owner's own later config changes never
// reached the remote), and in a repository that requires signatures any write of theirs held
// that Lane back for everyone. Such writes are now refused up front (403), nothing moved.

const OWNER = 'owner@example.com';
const BOB = 'bob@example.com';

let d: TestDaemon | null = null;
let http: JsonClient | null = null;
afterEach(async () => {
  http?.close();
  http = null;
  await d?.close();
  d = null;
});

async function served(): Promise<{ d: TestDaemon; http: JsonClient; remote: string }> {
  const env = cliEnv();
  d = await startTestDaemon({ owner: null, daemon: { sync: false, signingEnv: env } });
  const remote = tempDir('zz-remote-');
  sh(remote, 'init', '-q', '--bare', '-b', 'main');
  sh(d.dir, 'remote', 'add', 'origin', remote);
  const { key } = await personKeyInfo(OWNER, env);
  await initRepo(d.repo, { owner: OWNER, default_branch: 'main', owner_keys: [key.publicKey] });
  expect((await syncRepo(d.repo)).held_back).toEqual([]);
  http = jsonClient(d.url);
  return { d, http, remote };
}

const tool = (t: TestDaemon, name: string) => `/api/repos/${t.key}/tools/${name}`;

describe("another person's writes through the owner's daemon", () => {
  it('refuses their config change (403, no ref moved); the owner keeps syncing config', async () => {
    const { d, http, remote } = await served();
    const bob = await d.token(BOB);
    const before = zzRefs(d.dir);
    const r = await http.post(
      tool(d, 'key_add'),
      { actor: BOB, key: generateSigningKey().key.publicKey },
      bob,
    );
    expect(r.status).toBe(403);
    expect(r.json.code).toBe('forbidden');
    expect(r.json.error).toMatch(
      /signs commits only for owner@example\.com and their agents, not for bob@example\.com.*Ask an owner.*zz key add --actor bob@example\.com.*your own clone/,
    );
    expect(zzRefs(d.dir)).toEqual(before);

    // The owner's agent is signed for: its own key_add goes through and syncs.
    const agent = await d.token(`${OWNER}[claude]`);
    const ok = await http.post(
      tool(d, 'key_add'),
      { actor: `${OWNER}[claude]`, key: generateSigningKey().key.publicKey },
      agent,
    );
    expect(ok.status).toBe(200);
    const owner = await d.token(OWNER);
    expect(
      (
        await http.post(
          tool(d, 'role_grant'),
          { grantee: 'carol@example.com', role: 'owner' },
          owner,
        )
      ).status,
    ).toBe(200);
    const s = await syncRepo(d.repo);
    expect(s.held_back).toEqual([]);
    expect(s.pushed).toEqual(['refs/zz/config']);
    expect(zzRefs(remote).get('refs/zz/config')).toBe(zzRefs(d.dir).get('refs/zz/config'));
  });

  it('takes their Lane writes unsigned where signatures are not required, refuses them where they are', async () => {
    const { d, http, remote } = await served();
    const [owner, bob] = [await d.token(OWNER), await d.token(BOB)];
    expect(
      (await http.post(tool(d, 'lane_propose'), { lane_id: 'web', title: 'Web' }, owner)).status,
    ).toBe(200);
    const ask = { lane_id: 'web', kind: 'work', title: 'from bob' };
    expect((await http.post(tool(d, 'ask_post'), ask, bob)).status).toBe(200);
    expect((await syncRepo(d.repo)).held_back).toEqual([]);

    expect(
      (await http.post(tool(d, 'repo_require_signatures'), { signed: true }, owner)).status,
    ).toBe(200);
    await syncRepo(d.repo);
    const before = zzRefs(d.dir);
    const r = await http.post(tool(d, 'ask_post'), ask, bob);
    expect(r.status).toBe(403);
    expect(r.json.error).toMatch(/requires every op to be signed by a key of its actor/);
    expect(zzRefs(d.dir)).toEqual(before);

    // The Lane stays shared: the owner's own later post reaches the remote.
    const mine = { lane_id: 'web', kind: 'work', title: 'from the owner' };
    expect((await http.post(tool(d, 'ask_post'), mine, owner)).status).toBe(200);
    const s = await syncRepo(d.repo);
    expect(s.held_back).toEqual([]);
    expect(s.pushed).toEqual(['refs/zz/lanes/web']);
    expect(zzRefs(remote).get('refs/zz/lanes/web')).toBe(zzRefs(d.dir).get('refs/zz/lanes/web'));
  });

  it('the CLI in-process refuses the same with a token of theirs (exit 3, nothing written)', async () => {
    const { dir } = makeRepo();
    const env = cliEnv();
    expect((await zz(dir, env, 'init', '--no-fetch')).code).toBe(0);
    const bob = (await new TokenStore(join(dir, '.git')).create(BOB, 'login')).token;
    const before = zzRefs(dir);
    const key = generateSigningKey().key.publicKey;
    const r = await zz(dir, { ...env, ZZ_TOKEN: bob }, 'key', 'add', '--actor', BOB, '--key', key);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/signs commits only for owner@example\.com and their agents/);
    expect(zzRefs(dir)).toEqual(before);
  });
});
