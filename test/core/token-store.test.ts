import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_TOKENS_PER_ACTOR, TokenStore } from '../../src/core/token-store.js';
import { settleBackground } from '../../src/local/background.js';
import { tempDir } from '../helpers/temp-dirs.js';

const dirs: string[] = [];
afterEach(async () => {
  // A store's last-use stamp is written lazily (~10 ms after a verify, `mkdir: true`): removed
  // before it lands, the directory was made again and left behind (hundreds piled up in /tmp).
  await settleBackground();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function gitdir(): string {
  const d = tempDir('zz-tokens-');
  dirs.push(d);
  return d;
}

describe('TokenStore', () => {
  it('creates, verifies, rotates, revokes and lists without secrets', async () => {
    const dir = gitdir();
    const store = new TokenStore(dir);
    expect(store.file).toBe(join(dir, 'zz', 'tokens.json'));
    const a = await store.create('a@example.com', 'login');
    expect(a.token).toMatch(/^zzt_[A-Za-z0-9_-]{43}$/);
    expect(await store.verify(a.token)).toEqual({
      actor: 'a@example.com',
      name: 'login',
      id: a.id,
    });
    expect(
      await store.verify(a.token.slice(0, -1) + (a.token.endsWith('A') ? 'B' : 'A')),
    ).toBeNull();
    expect(await store.verify('')).toBeNull();
    expect(await store.verify('zzt_short')).toBeNull();

    // Minting never revokes: a second token of the same actor and name lives beside the first.
    const agent1 = await store.create('a@example.com[claude]', 'claude');
    const agent2 = await store.create('a@example.com[claude]', 'claude');
    expect(agent2.revoked).toBe(0);
    expect(await store.verify(agent1.token)).toMatchObject({ actor: 'a@example.com[claude]' });
    expect(await store.verify(agent2.token)).toEqual({
      actor: 'a@example.com[claude]',
      name: 'claude',
      id: agent2.id,
    });
    // Revoking one by id leaves its sibling working.
    expect(await store.revoke({ id: agent1.id })).toBe(1);
    expect(await store.verify(agent1.token)).toBeNull();
    expect(await store.verify(agent2.token)).not.toBeNull();

    const listed = await store.list();
    expect(listed.map((t) => [t.actor, t.name])).toEqual([
      ['a@example.com', 'login'],
      ['a@example.com[claude]', 'claude'],
    ]);
    expect(JSON.stringify(listed)).not.toMatch(/hash|zzt_/);
    const file = readFileSync(store.file, 'utf8');
    expect(file).not.toContain(a.token.slice(4));
    expect(statSync(store.file).mode & 0o777).toBe(0o600);

    expect(await store.revoke({ name: 'claude' })).toBe(1);
    expect(await store.verify(agent2.token)).toBeNull();
    expect(await store.revoke('a@example.com')).toBe(1);
    expect(await store.verify(a.token)).toBeNull();
    expect(await store.list()).toEqual([]);
  });

  it('sees another process’s revocation on the next verify', async () => {
    const dir = gitdir();
    const daemon = new TokenStore(dir);
    const cli = new TokenStore(dir);
    const { token } = await cli.create('b@example.com', 'login');
    expect(await daemon.verify(token)).not.toBeNull();
    await cli.revoke('b@example.com');
    expect(await daemon.verify(token)).toBeNull();
    // Even a hand edit that keeps size and mtime is seen (a rename makes a new inode).
    const again = await cli.create('b@example.com', 'login');
    expect(await daemon.verify(again.token)).not.toBeNull();
    const st = statSync(cli.file);
    writeFileSync(cli.file + '.new', JSON.stringify({ version: 1, tokens: [] }));
    const { renameSync } = await import('node:fs');
    renameSync(cli.file + '.new', cli.file);
    utimesSync(cli.file, st.atime, st.mtime);
    expect(await daemon.verify(again.token)).toBeNull();
  });

  it('refuses a token revoked by another process as soon as that process exits', async () => {
    const dir = gitdir();
    const daemon = new TokenStore(dir);
    // Many live tokens: the one revoked is found among them, the others keep working.
    const made = [];
    for (let i = 0; i < 40; i++) made.push(await daemon.create(`u${i}@example.com`, 'login'));
    for (const m of made) expect((await daemon.verify(m.token))?.actor).toBe(m.actor);
    const victim = made[17]!;
    const mod = new URL('../../src/core/token-store.ts', import.meta.url).href;
    const code = `const { TokenStore } = await import(${JSON.stringify(mod)});
      const n = await new TokenStore(${JSON.stringify(dir)}).revoke({ id: ${JSON.stringify(victim.id)} });
      if (n !== 1) process.exit(3);`;
    await new Promise<void>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', '--input-type=module', '-e', code],
        { stdio: ['ignore', 'inherit', 'inherit'] },
      );
      child.on('error', reject);
      child.on('close', (c) => (c === 0 ? resolve() : reject(new Error(`revoke exited ${c}`))));
    });
    // The very next request after the command returned: no wait, no watcher.
    expect(await daemon.verify(victim.token)).toBeNull();
    for (const m of made) if (m !== victim) expect(await daemon.verify(m.token)).not.toBeNull();
    // A token of the right shape that was never minted is refused too.
    expect(await daemon.verify('zzt_' + 'A'.repeat(43))).toBeNull();
    await daemon.flush();
  });

  it('records last use lazily, at most once a minute', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const store = new TokenStore(gitdir(), { clock: () => new Date(now) });
    const { token } = await store.create('c@example.com', 'login');
    expect((await store.list())[0]!.last_used_at).toBeNull();
    await store.verify(token);
    await store.flush();
    expect((await store.list())[0]!.last_used_at).toBe('2026-01-01T00:00:00.000Z');
    now += 30_000;
    await store.verify(token);
    await store.flush();
    expect((await store.list())[0]!.last_used_at).toBe('2026-01-01T00:00:00.000Z');
    now += 60_000;
    await store.verify(token);
    await store.flush();
    expect((await store.list())[0]!.last_used_at).toBe('2026-01-01T00:01:30.000Z');
  });

  it('loses no token when processes create at the same time', async () => {
    const dir = gitdir();
    const writer = fileURLToPath(new URL('../helpers/token-writer.ts', import.meta.url));
    const run = (prefix: string) =>
      new Promise<string>((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', 'tsx', writer, dir, prefix, '10'], {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        let out = '';
        child.stdout.on('data', (b: Buffer) => (out += b.toString()));
        child.on('error', reject);
        child.on('close', (code) =>
          code === 0 ? resolve(out) : reject(new Error(`writer exited ${code}`)),
        );
      });
    const outs = await Promise.all(['p', 'q', 'r', 's'].map(run));
    const created = outs.flatMap((o) =>
      o
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { token: string; actor: string }),
    );
    expect(created).toHaveLength(40);
    const store = new TokenStore(dir);
    expect(await store.list()).toHaveLength(40);
    for (const c of created) expect(await store.verify(c.token)).toMatchObject({ actor: c.actor });
  });

  it('refuses a corrupt file with a message naming it', async () => {
    const dir = gitdir();
    const store = new TokenStore(dir);
    await store.create('d@example.com', 'login');
    writeFileSync(store.file, '{oops');
    await expect(store.verify('zzt_' + 'A'.repeat(43))).rejects.toThrow(
      /tokens\.json is not valid JSON/,
    );
    // Valid JSON of the wrong shape is named the same way, never a TypeError later.
    for (const bad of [
      '{"version":1}',
      '{"version":1,"tokens":[{"hash":"xyz","actor":"a","name":"n","created_at":"t"}]}',
      '[]',
    ]) {
      writeFileSync(store.file, bad);
      const err = await store.list().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, bad).toMatchObject({ code: 'precondition_failed' });
      expect((err as Error).message).toContain(store.file);
      // A write refuses too, rather than replacing the file and losing its records.
      await expect(store.create('e@example.com', 'login')).rejects.toMatchObject({
        code: 'precondition_failed',
      });
      expect(readFileSync(store.file, 'utf8')).toBe(bad);
    }
  });

  it('refuses a valid token with characters appended, and anything but the whole token', async () => {
    const store = new TokenStore(gitdir());
    const { token } = await store.create('f@example.com', 'login');
    for (const extra of ['A', '=', 'AAAA', '\n', ' ', token]) {
      expect(await store.verify(token + extra), JSON.stringify(extra)).toBeNull();
    }
    expect(await store.verify(token.slice(0, -1))).toBeNull();
    expect(await store.verify(token.toUpperCase())).toBeNull();
    expect(await store.verify(token)).not.toBeNull();
  });

  it('compares the whole hash: a record differing only in its last byte does not match', async () => {
    const store = new TokenStore(gitdir());
    const { token } = await store.create('g@example.com', 'login');
    const doc = JSON.parse(readFileSync(store.file, 'utf8')) as {
      tokens: Array<{ hash: string }>;
    };
    const hash = createHash('sha256').update(token).digest('hex');
    expect(doc.tokens[0]!.hash).toBe(hash);
    const last = hash.slice(-2) === 'ff' ? '00' : 'ff';
    doc.tokens[0]!.hash = hash.slice(0, -2) + last;
    writeFileSync(store.file, JSON.stringify(doc));
    expect(await store.verify(token)).toBeNull();
    // And the first byte, for good measure.
    doc.tokens[0]!.hash = (hash.slice(0, 2) === 'ff' ? '00' : 'ff') + hash.slice(2);
    writeFileSync(store.file, JSON.stringify(doc));
    expect(await store.verify(token)).toBeNull();
    doc.tokens[0]!.hash = hash;
    writeFileSync(store.file, JSON.stringify(doc));
    expect(await store.verify(token)).not.toBeNull();
  });

  it('keeps several named tokens per actor; rotate replaces only that name', async () => {
    const store = new TokenStore(gitdir());
    const laptop = await store.create('h@example.com', 'laptop');
    const desk1 = await store.create('h@example.com', 'desk');
    const desk2 = await store.create('h@example.com', 'desk');
    const other = await store.create('i@example.com', 'desk');
    const rotated = await store.create('h@example.com', 'desk', { rotate: true });
    expect(rotated.revoked).toBe(2);
    for (const t of [desk1, desk2]) expect(await store.verify(t.token)).toBeNull();
    for (const t of [laptop, other, rotated]) expect(await store.verify(t.token)).not.toBeNull();
    expect((await store.list({ actor: 'h@example.com' })).map((t) => [t.name, t.id])).toEqual([
      ['laptop', laptop.id],
      ['desk', rotated.id],
    ]);
    expect(await store.revoke({ name: 'desk', actor: 'h@example.com' })).toBe(1);
    expect(await store.verify(other.token)).not.toBeNull();
    await expect(store.create('h@example.com', '')).rejects.toMatchObject({
      code: 'invalid_argument',
    });
    await expect(store.create('h@example.com', 'a\u001b]0;x')).rejects.toMatchObject({
      code: 'invalid_argument',
    });
  });

  it('bounds the tokens one actor may hold', async () => {
    const store = new TokenStore(gitdir());
    const doc = {
      version: 1,
      tokens: Array.from({ length: MAX_TOKENS_PER_ACTOR }, (_, i) => ({
        hash: createHash('sha256').update(`t${i}`).digest('hex'),
        actor: 'j@example.com',
        name: `n${i}`,
        created_at: '2026-01-01T00:00:00.000Z',
        last_used_at: null,
      })),
    };
    mkdirSync(join(store.file, '..'), { recursive: true });
    writeFileSync(store.file, JSON.stringify(doc));
    await expect(store.create('j@example.com', 'one-more')).rejects.toMatchObject({
      code: 'precondition_failed',
    });
    expect(await store.create('k@example.com', 'login')).toMatchObject({ actor: 'k@example.com' });
    expect(await store.create('j@example.com', 'n0', { rotate: true })).toMatchObject({
      revoked: 1,
    });
  });
});

describe('TokenStore: a reload in flight', () => {
  it('refuses a token revoked while an older read of the file was still in flight', async () => {
    // A verify that found the file changed joined any reload in flight, even one whose read
    // began before the revocation landed: the request right after `zz agent revoke` returned
    // was answered from the old file. A read delayed in the pool (behind a storm's fsyncs) is
    // enough; here the first reload's read is held once it has read the file.
    const dir = gitdir();
    const daemon = new TokenStore(dir);
    const cli = new TokenStore(dir); // another process: the CLI
    const victim = await daemon.create('v@example.com', 'victim');
    expect(await daemon.verify(victim.token)).not.toBeNull();
    await cli.create('w@example.com', 'other'); // the file changes: the daemon's next verify reloads

    const inner = daemon as unknown as { readRecords: () => Promise<unknown> };
    const original = inner.readRecords.bind(daemon);
    let readDone!: () => void;
    const read = new Promise<void>((r) => (readDone = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let calls = 0;
    inner.readRecords = async () => {
      const records = await original();
      if (calls++ === 0) {
        readDone();
        await gate;
      }
      return records;
    };

    const first = daemon.verify(victim.token); // reloads; its read holds the old file
    await read;
    expect(await cli.revoke({ id: victim.id })).toBe(1); // the revocation returns
    const next = daemon.verify(victim.token); // the very next request
    release();
    expect(await first).not.toBeNull(); // began before the revocation: either answer is fair
    expect(await next).toBeNull();
  });
});
