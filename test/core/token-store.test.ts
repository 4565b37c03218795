import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { TokenStore } from '../../src/core/token-store.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function gitdir(): string {
  const d = mkdtempSync(join(tmpdir(), 'zz-tokens-'));
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
    expect(await store.verify(a.token)).toEqual({ actor: 'a@example.com' });
    expect(
      await store.verify(a.token.slice(0, -1) + (a.token.endsWith('A') ? 'B' : 'A')),
    ).toBeNull();
    expect(await store.verify('')).toBeNull();
    expect(await store.verify('zzt_short')).toBeNull();

    const agent1 = await store.create('a@example.com[claude]', 'claude');
    const agent2 = await store.create('a@example.com[claude]', 'claude');
    expect(await store.verify(agent1.token)).toBeNull();
    expect(await store.verify(agent2.token)).toEqual({ actor: 'a@example.com[claude]' });

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
    for (const c of created) expect(await store.verify(c.token)).toEqual({ actor: c.actor });
  });

  it('refuses a corrupt file with a message naming it', async () => {
    const dir = gitdir();
    const store = new TokenStore(dir);
    await store.create('d@example.com', 'login');
    writeFileSync(store.file, '{oops');
    await expect(store.verify('zzt_' + 'A'.repeat(43))).rejects.toThrow(
      /tokens\.json is not valid JSON/,
    );
  });
});
