import { execFileSync } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initRepo, ZzRepo } from '../../src/core/index.js';
import { personKeyInfo, signWithPersonKey } from '../../src/core/sync/index.js';
import { startDaemon } from '../../src/daemon/index.js';
import { generateSigningKey } from '../../src/git/index.js';
import { LIMITS } from '../../src/schema/limits.js';
import { appFixture, type AppFixture } from '../helpers/app-fixture.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// key_add / key_remove / key_list / repo_require_signatures, from the one tool registry: over
// the daemon's HTTP routes with tokens (owner-only where it must be), and from the CLI.

const OWNER = 'owner@example.com';
const ALICE = 'alice@example.com';
const BOB = 'bob@example.com';

let fx: AppFixture;
const tok: Record<string, string> = {};

async function tool(name: string, body: unknown, token = tok.owner!) {
  const r = await fx.tool(name, body, token);
  return { status: r.status, json: r.json.result ?? r.json };
}

beforeAll(async () => {
  fx = await appFixture('local/keys', OWNER);
  tok.owner = await fx.token(OWNER);
  tok.alice = await fx.token(ALICE);
});

afterAll(() => fx.close());

describe('key tools over HTTP', () => {
  it('owners register and remove anyone’s keys; others only their own; list pages', async () => {
    const alice = generateSigningKey().key.publicKey;
    const bob = generateSigningKey().key.publicKey;
    expect((await tool('key_add', { actor: ALICE, key: `${alice} laptop` })).status).toBe(200);
    // Alice may not register Bob's key, may register a second one of her own.
    const denied = await tool('key_add', { actor: BOB, key: bob }, tok.alice);
    expect(denied.status).toBe(403);
    const own = generateSigningKey().key.publicKey;
    expect((await tool('key_add', { actor: ALICE, key: own }, tok.alice)).status).toBe(200);
    const bad = await tool('key_add', { actor: ALICE, key: 'ssh-ed25519 not-base64!' });
    expect(bad.status).toBe(400);
    const list = await tool('key_list', {});
    expect(list.status).toBe(200);
    expect(list.json.signatures_required).toBe(false);
    expect(list.json.keys).toEqual([{ actor: ALICE, keys: [alice, own], owner: false }]);
    const page = await tool('key_list', { limit: 1, offset: 0, actor: ALICE });
    expect(page.json.next_offset).toBeNull();
    // Removal matches the key material (the comment may differ); a second removal is a no-op.
    expect((await tool('key_remove', { actor: ALICE, key: `${alice} other` })).json).toMatchObject({
      removed: true,
    });
    expect((await tool('key_remove', { actor: ALICE, key: alice })).json).toMatchObject({
      removed: false,
    });
    expect((await tool('key_remove', { actor: ALICE, key: own }, tok.alice)).status).toBe(200);
    expect((await tool('key_list', {})).json.keys).toEqual([]);
    // What is written is a config op an import checks like any other owner-level op.
    const log = sh(fx.dir, 'log', '--format=%B', 'refs/zz/config');
    expect(log).toMatch(/Zz-Op: key_remove/);
  });

  it(`an actor has at most ${LIMITS.keysPerActor} allowed keys: key_list answers them whole`, async () => {
    const actor = 'many@example.com';
    const keys = Array.from(
      { length: LIMITS.keysPerActor + 1 },
      () => generateSigningKey().key.publicKey,
    );
    for (let i = 0; i < LIMITS.keysPerActor; i += 20) {
      const batch = keys.slice(i, Math.min(i + 20, LIMITS.keysPerActor));
      for (const r of await Promise.all(batch.map((key) => tool('key_add', { actor, key })))) {
        expect(r.status).toBe(200);
      }
    }
    const past = await tool('key_add', { actor, key: keys[LIMITS.keysPerActor]! });
    expect(past.status).toBe(412);
    expect(past.json.error).toMatch(/already has 100 allowed signing keys; remove one first/);
    // Adding one already held is still a no-op, not a refusal.
    expect((await tool('key_add', { actor, key: keys[0]! })).status).toBe(200);
    const listed = await tool('key_list', { actor });
    expect(listed.json.keys[0].keys).toHaveLength(LIMITS.keysPerActor);
    // After a removal there is room for one more.
    expect((await tool('key_remove', { actor, key: keys[0]! })).status).toBe(200);
    expect((await tool('key_add', { actor, key: keys[LIMITS.keysPerActor]! })).status).toBe(200);
  });

  it('only an owner turns required signatures on (and off)', async () => {
    const refused = await tool('repo_require_signatures', { signed: true }, tok.alice);
    expect(refused.status).toBe(403);
    expect((await tool('key_list', {})).json.signatures_required).toBe(false);
    const on = await tool('repo_require_signatures', {});
    expect(on.json).toMatchObject({ signatures_required: true });
    expect((await tool('key_list', {})).json.signatures_required).toBe(true);
    expect((await tool('repo_state', {})).json.signatures_required).toBe(true);
    const off = await tool('repo_require_signatures', { signed: false });
    expect(off.json).toMatchObject({ signatures_required: false });
  });
});

describe('zz init and the signing key', () => {
  it('makes the user a key on first use, says so, and reuses it after', async () => {
    const { dir, cleanup } = makeRepo();
    const env = cliEnv();
    try {
      const first = await zz(dir, env, 'init', '--no-fetch', '--json');
      expect(first.code).toBe(0);
      const made = first.json().signing_key;
      expect(made).toMatchObject({
        created: true,
        public_key: expect.stringMatching(/^ssh-ed25519 /),
      });
      expect(statSync(made.file).mode & 0o777).toBe(0o600);
      const again = await zz(dir, env, 'init', '--no-fetch');
      expect(again.stdout).toContain(`Signing as owner@example.com with ${made.file}.`);
      // The key repo_init registered for the owner is the one on disk.
      const keys = (await zz(dir, env, 'key', 'list', '--json')).json().keys;
      expect(keys).toEqual([{ actor: 'owner@example.com', keys: [made.public_key], owner: true }]);
    } finally {
      cleanup();
    }
  });
});

describe("git's own SSH signing key", () => {
  it('zz init and the daemon sign with the key git config user.signingkey names', async () => {
    const { dir, cleanup } = makeRepo();
    const env = cliEnv();
    try {
      const file = join(tempDir('zz-sshkey-'), 'id_ed25519');
      execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'me', '-f', file]);
      sh(dir, 'config', 'gpg.format', 'ssh');
      sh(dir, 'config', 'user.signingkey', `${file}.pub`);
      const pub = readFileSync(`${file}.pub`, 'utf8').split(' ').slice(0, 2).join(' ');
      const init = await zz(dir, env, 'init', '--no-fetch', '--json');
      expect(init.json().signing_key).toMatchObject({
        file,
        created: false,
        source: 'git',
        public_key: pub,
      });
      const keys = (await zz(dir, env, 'key', 'list', '--json')).json().keys;
      expect(keys).toEqual([{ actor: 'owner@example.com', keys: [pub], owner: true }]);
      // git itself verifies what zz signed with that key.
      writeFileSync(`${file}.signers`, `owner@example.com ${pub}\n`);
      sh(dir, 'config', 'gpg.ssh.allowedSignersFile', `${file}.signers`);
      sh(dir, 'verify-commit', 'refs/zz/config');
      const repo = await ZzRepo.open(dir, { key: 'local/git-key' });
      try {
        expect(await signWithPersonKey(repo, env)).toBe(
          `local/git-key: signing zz commits as owner@example.com with ${file} (git user.signingkey)`,
        );
      } finally {
        repo.close();
      }
      // A key with a passphrase is said, and zz's own key is used instead.
      execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', 'secret', '-f', `${file}2`]);
      sh(dir, 'config', 'user.signingkey', `${file}2`);
      const again = await zz(dir, env, 'init', '--no-fetch');
      expect(again.stdout).toMatch(/Not signing with git's key: .*passphrase/);
    } finally {
      cleanup();
    }
  });
});

describe('the daemon and the signing key', () => {
  it('makes the person a key when they have none (DESIGN §7), signs with it, says an owner must register it', async () => {
    const { dir, cleanup } = makeRepo();
    const env = cliEnv();
    const logs: string[] = [];
    const serve = () =>
      startDaemon({
        cwd: dir,
        port: 0,
        reposFile: join(dir, 'none.json'),
        cacheDir: tempDir('zz-cache-'),
        mcpHandler: null,
        sync: false,
        log: (l) => logs.push(l),
        signingEnv: env,
      });
    const keyLines = () => logs.filter((l) => /sign/.test(l));
    try {
      let d = await serve();
      const [name, repo] = [...d.repos][0]!;
      const { file, key } = await personKeyInfo(OWNER, env);
      expect(keyLines()).toEqual([
        `${name}: made a signing key for ${OWNER} (${file}); signing zz commits with it`,
      ]);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      // What the daemon writes for the person is signed with that key (git verifies it).
      await initRepo(repo, { owner: OWNER, default_branch: 'main' });
      expect(sh(dir, 'cat-file', 'commit', 'refs/zz/config')).toMatch(/BEGIN SSH SIGNATURE/);
      writeFileSync(join(dir, '.git', 'signers'), `${OWNER} ${key.publicKey}\n`);
      sh(dir, 'config', 'gpg.ssh.allowedSignersFile', join(dir, '.git', 'signers'));
      sh(dir, 'verify-commit', 'refs/zz/config');
      await d.close();
      // The next start uses it (no second key) and, as the config does not list it for the
      // person, says what an owner runs so that other machines trust these commits.
      logs.length = 0;
      d = await serve();
      expect(keyLines()).toEqual([
        `${name}: signing zz commits as ${OWNER} with ${file}; the key is not registered for ${OWNER} in refs/zz/config, so other machines see these commits as unsigned until it is. Not here (an unregistered key cannot vouch for itself) but on the machine of an owner whose key refs/zz/config lists, run: zz key add --actor ${OWNER} --key "${key.publicKey}" ; then zz sync there, and zz sync here`,
      ]);
      await d.close();
    } finally {
      cleanup();
    }
  });

  it('an embedder that passes no user environment gets no key made', async () => {
    const { dir, cleanup } = makeRepo();
    const env = cliEnv();
    const repo = await ZzRepo.open(dir, { key: 'local/daemon-key' });
    try {
      expect(await signWithPersonKey(repo, env)).toBe(
        'local/daemon-key: zz commits are not signed (owner@example.com has no key yet: run zz init)',
      );
      const { file } = await personKeyInfo(OWNER, env);
      expect(await signWithPersonKey(repo, env)).toBe(
        `local/daemon-key: signing zz commits as owner@example.com with ${file}`,
      );
    } finally {
      repo.close();
      cleanup();
    }
  });
});

describe('key tools from the CLI', () => {
  it('zz key add / list / remove and zz repo require-signatures, in-process as the git user', async () => {
    const { dir, cleanup } = makeRepo();
    const env = cliEnv();
    try {
      expect((await zz(dir, env, 'init', '--no-fetch')).code).toBe(0);
      const key = generateSigningKey().key.publicKey;
      const add = await zz(dir, env, 'key', 'add', '--actor', BOB, '--key', key, '--json');
      expect(add.stderr).toBe('');
      expect(add.code).toBe(0);
      const list = await zz(dir, env, 'key', 'list', '--actor', BOB, '--json');
      expect(list.json().keys).toEqual([{ actor: BOB, keys: [key], owner: false }]);
      const req = await zz(dir, env, 'repo', 'require-signatures', '--json');
      expect(req.json()).toMatchObject({ signatures_required: true });
      const rm = await zz(dir, env, 'key', 'remove', '--actor', BOB, '--key', key, '--json');
      expect(rm.json()).toMatchObject({ removed: true });
      const after = await zz(dir, env, 'key', 'list', '--json');
      expect(after.json()).toMatchObject({ signatures_required: true });
      expect(after.json().keys.map((k: { actor: string }) => k.actor)).not.toContain(BOB);
    } finally {
      cleanup();
    }
  });
});
