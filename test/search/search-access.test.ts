import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initRepo, ladderBuild } from '../../src/core/index.js';
import { startDaemon, type Daemon } from '../../src/daemon/index.js';
import { jsonClient, type JsonClient } from '../helpers/http-client.js';
import { daemonOptions } from '../helpers/test-daemon.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// One daemon, one search index over every repository it serves: a caller sees only the Ladders
// of repositories it may read (DESIGN §4: a token belongs to one repository). The review's
// repro: a bot token of local/rvrepo searched "bluefalcon" and read private local/rvsecret's
// README.md, src/pay.js and _repo summaries.

const OWNER = 'owner@example.com';
const BOT = 'owner@example.com[bot]';
const MINE = 'local/rvrepo';
const SECRET = 'local/rvsecret';
const OPEN = 'local/rvpublic';
const WORDS: Record<string, string> = {
  [MINE]: ' Its quokkahandler, wombathandler and handler.',
  [SECRET]: ' Project quokka acquisition plan.',
};

let daemon: Daemon;
/** Every line the daemon logged. */
const logs: string[] = [];
let bot: JsonClient;
let owner: JsonClient;

type Hit = { repo: string; path: string };
type Answer = { status: number; json: { result?: { hits: Hit[]; next_cursor: string | null } } };

const search = (c: JsonClient, args: Record<string, unknown>) =>
  c.post(`/api/repos/${MINE}/tools/ladder_search`, args) as Promise<Answer>;

/**
 * A checkout keyed `key` whose files all mention bluefalcon. Its own README also holds
 * `quokkahandler`, `wombathandler` and `handler`; the private one's holds `quokka` alone. A
 * prefix expansion skips `quokkahandler` as a compound when `quokka` is itself a word: whether
 * a search for `quokka` finds the caller's README must not depend on a word it cannot read.
 */
function checkout(key: string): string {
  const { dir } = makeRepo('zz-search-access-');
  sh(dir, 'config', 'zz.repo', key);
  const name = key.split('/')[1]!;
  writeFileSync(
    join(dir, 'README.md'),
    `# ${name}\n\nThe bluefalcon payment service of ${name}.${WORDS[key] ?? ''}\n`,
  );
  sh(dir, 'add', '.');
  sh(dir, 'commit', '-q', '-m', `${name}: bluefalcon`);
  return dir;
}

beforeAll(async () => {
  const [mine, secret, open] = [checkout(MINE), checkout(SECRET), checkout(OPEN)];
  daemon = await startDaemon(
    daemonOptions(mine, {
      repos: [secret, open],
      cacheDir: tempDir('zz-search-access-cache-'),
      log: (line) => logs.push(line),
    }),
  );
  for (const [key, visibility] of [
    [MINE, 'private'],
    [SECRET, 'private'],
    [OPEN, 'public'],
  ] as const) {
    const repo = daemon.repos.get(key)!;
    await initRepo(repo, { owner: OWNER, default_branch: 'main', visibility });
    expect((await ladderBuild(repo, { actor: OWNER })).committed).toBe(true);
  }
  // The bot holds a token of rvrepo only; its person holds one in rvrepo and rvsecret.
  bot = jsonClient(daemon.url, { token: (await daemon.tokensFor(MINE)!.create(BOT, 'bot')).token });
  owner = jsonClient(daemon.url, {
    token: (await daemon.tokensFor(MINE)!.create(OWNER, 'login')).token,
  });
  await daemon.tokensFor(SECRET)!.create(OWNER, 'login');
  // The index catches up with the three Ladders in the background: wait until the owner, who
  // may read all three, finds every one (else "no secret hit" below could pass on an index
  // that had not reached rvsecret yet).
  const until = Date.now() + 30_000;
  for (;;) {
    const r = await search(owner, { query: 'bluefalcon', limit: 50 });
    const repos = new Set(r.json.result?.hits.map((h) => h.repo));
    if (repos.has(MINE) && repos.has(SECRET) && repos.has(OPEN)) break;
    if (Date.now() > until) throw new Error(`never indexed: ${JSON.stringify(r.json)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}, 60_000);

afterAll(async () => {
  bot?.close();
  owner?.close();
  await daemon?.close();
});

describe('ladder_search across served repositories', () => {
  it("a token of one repository never sees another private repository's rungs", async () => {
    const r = await search(bot, { query: 'bluefalcon', limit: 50 });
    expect(r.status).toBe(200);
    const repos = new Set(r.json.result!.hits.map((h) => h.repo));
    expect(repos).toEqual(new Set([MINE, OPEN]));
    // Paged one hit at a time, no page holds one either.
    const seen: Hit[] = [];
    let cursor: string | null = null;
    do {
      const p: Answer = await search(bot, {
        query: 'bluefalcon',
        limit: 1,
        ...(cursor ? { cursor } : {}),
      });
      expect(p.status).toBe(200);
      seen.push(...p.json.result!.hits);
      cursor = p.json.result!.next_cursor;
    } while (cursor && seen.length < 100);
    expect(seen.length).toBe(r.json.result!.hits.length);
    expect(seen.some((h) => h.repo === SECRET)).toBe(false);
  });

  it('a repo filter naming a private repository it may not read answers as an unknown one', async () => {
    const hidden = await search(bot, { query: 'bluefalcon', repo: SECRET });
    const unknown = await search(bot, { query: 'bluefalcon', repo: 'local/nosuch' });
    expect(hidden.status).toBe(404);
    expect(unknown.status).toBe(404);
    const strip = (a: Answer, key: string) => JSON.stringify(a.json).replaceAll(key, '<repo>');
    expect(strip(hidden, SECRET)).toBe(strip(unknown, 'local/nosuch'));
    // A public repository and its own one are searchable by name.
    for (const key of [OPEN, MINE]) {
      const r = await search(bot, { query: 'bluefalcon', repo: key });
      expect(r.status).toBe(200);
      expect(r.json.result!.hits.length).toBeGreaterThan(0);
      expect(r.json.result!.hits.every((h) => h.repo === key)).toBe(true);
    }
  });

  it('an actor holding a token of the other repository reads it, as it could there', async () => {
    const r = await search(owner, { query: 'bluefalcon', repo: SECRET });
    expect(r.status).toBe(200);
    expect(r.json.result!.hits.map((h) => h.path)).toContain('README.md');
    // Revoked there, it is gone from here too.
    await daemon.tokensFor(SECRET)!.revoke(OWNER);
    expect((await search(owner, { query: 'bluefalcon', repo: SECRET })).status).toBe(404);
    const all = await search(owner, { query: 'bluefalcon', limit: 50 });
    expect(all.json.result!.hits.some((h) => h.repo === SECRET)).toBe(false);
  });
});

describe('the served repositories a caller is told of', () => {
  const names = async (c: JsonClient) =>
    ((await c.get('/api/repos')).json.repos as { repo: string }[]).map((r) => r.repo);
  const hint = async (c: JsonClient) => {
    const r = await c.post('/api/repos/local/nosuch/tools/repo_state', {});
    expect(r.status).toBe(404);
    return r.json.details.repos as string[];
  };

  it('without a token, only public ones: in /api/repos and in a 404', async () => {
    const anon = jsonClient(daemon.url);
    try {
      expect(await names(anon)).toEqual([OPEN]);
      expect(await hint(anon)).toEqual([OPEN]);
    } finally {
      anon.close();
    }
  });

  it('with a token, those it may read; a bad token is refused by /api/repos', async () => {
    expect(await names(bot)).toEqual([MINE, OPEN]);
    expect(await hint(bot)).toEqual([MINE, OPEN]);
    const other = jsonClient(daemon.url, {
      token: (await daemon.tokensFor(SECRET)!.create('carol@example.com', 'login')).token,
    });
    const bad = jsonClient(daemon.url, { token: 'zzt_' + 'x'.repeat(43) });
    try {
      expect(await names(other)).toEqual([SECRET, OPEN]);
      expect((await bad.get('/api/repos')).status).toBe(401);
      expect(await hint(bad)).toEqual([OPEN]);
    } finally {
      other.close();
      bad.close();
    }
  });
});

describe('what a caller may read, however the other repositories are set up', () => {
  const names = async (c: JsonClient) =>
    ((await c.get('/api/repos')).json.repos as { repo: string }[]).map((r) => r.repo);

  it("a word only a private repository holds changes nothing in the caller's own hits", async () => {
    const paths = async (query: string) =>
      (await search(bot, { query })).json.result!.hits.map((h) => `${h.repo}:${h.path}`);
    // `quokka` is a word of rvsecret alone: it must expand to rvrepo's `quokkahandler` as
    // `wombat` (a word of no repository) expands to `wombathandler`.
    expect(await paths('wombat')).toContain(`${MINE}:README.md`);
    expect(await paths('quokka')).toEqual(await paths('wombat'));
  });

  it('an agent of the same name in another repository is another agent: it reads nothing there', async () => {
    await daemon.tokensFor(SECRET)!.create(BOT, 'bot');
    try {
      expect((await search(bot, { query: 'bluefalcon', repo: SECRET })).status).toBe(404);
      const all = await search(bot, { query: 'bluefalcon', limit: 50 });
      expect(all.json.result!.hits.some((h) => h.repo === SECRET)).toBe(false);
      expect(await names(bot)).toEqual([MINE, OPEN]);
    } finally {
      await daemon.tokensFor(SECRET)!.revoke(BOT);
    }
  });

  it('repo_state names only the repositories the caller may read', async () => {
    const r = await bot.post(`/api/repos/${MINE}/tools/repo_state`, {});
    expect(r.status).toBe(200);
    expect(r.json.result.repos).toEqual([MINE, OPEN]);
  });

  it("a broken token file of another repository fails no one's request and shows no path", async () => {
    const file = daemon.tokensFor(SECRET)!.file;
    const kept = readFileSync(file, 'utf8');
    // A person holding a token there, so its store is read for this caller (an agent's never is).
    const dave = jsonClient(daemon.url, {
      token: (await daemon.tokensFor(MINE)!.create('dave@example.com', 'login')).token,
    });
    await daemon.tokensFor(SECRET)!.create('dave@example.com', 'login');
    expect(await names(dave)).toEqual([MINE, SECRET, OPEN]);
    const before = logs.length;
    writeFileSync(file, '{ not json');
    try {
      for (const c of [bot, dave]) {
        const r = await search(c, { query: 'bluefalcon', limit: 50 });
        expect(r.status).toBe(200);
        expect(new Set(r.json.result!.hits.map((h) => h.repo))).toEqual(new Set([MINE, OPEN]));
        const l = await c.get('/api/repos');
        expect(l.status).toBe(200);
        expect(await names(c)).toEqual([MINE, OPEN]);
        expect(JSON.stringify([r.json, l.json])).not.toContain('tokens.json');
      }
      // Logged, once for this version of the file however many requests read it.
      const said = logs.slice(before).filter((l) => l.includes(file));
      expect(said.length).toBe(1);
      // A search filtered to its own repository reads no other repository's token file.
      const quiet = logs.length;
      writeFileSync(file, '{ still not json');
      expect((await search(dave, { query: 'bluefalcon', repo: MINE })).status).toBe(200);
      expect(logs.slice(quiet).filter((l) => l.includes(file))).toEqual([]);
    } finally {
      writeFileSync(file, kept);
      dave.close();
    }
  });
});
