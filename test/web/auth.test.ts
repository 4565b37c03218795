import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { initRepo } from '../../src/core/index.js';
import { SessionStore } from '../../src/web/index.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { makeRepo } from '../helpers/temp-repo.js';
import { codeOf, OWNER, signInHeaders, startWebDaemon, type WebDaemon } from './harness.js';

// The login handshake and the cookie rules over real HTTP on loopback (the browser tests in
// dashboard.test.ts cover the same through Chromium).

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function daemon(): Promise<WebDaemon> {
  const w = await startWebDaemon();
  cleanups.push(() => w.close());
  return w;
}

const errorOf = async (r: Response) => ((await r.json()) as { error: string }).error;
const signIn = signInHeaders;

describe('dashboard login', () => {
  it('trades a one-time code for an HttpOnly SameSite=Strict cookie and a page key, once', async () => {
    const w = await daemon();
    const token = await w.token(OWNER);
    const url = await w.loginUrl(token);
    // The code rides in the fragment, which browsers never send to a server.
    expect(url).toMatch(new RegExp(`^${w.url}/#code=[A-Za-z0-9_-]{43}$`));
    expect(url).not.toContain(token);
    const redeem = (confirmed: boolean) =>
      fetch(`${w.url}/auth/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: w.url },
        body: JSON.stringify({ code: codeOf(url), ...(confirmed ? { switch: true } : {}) }),
      });
    // Signed out, the page must still ask (login CSRF): unconfirmed, the code says whom it
    // signs in as and stays unused.
    const asked = await redeem(false);
    expect(asked.status).toBe(409);
    expect(await asked.json()).toMatchObject({
      error: `this link signs in as ${OWNER}; confirm to sign in`,
      details: { signed_in_as: null, code_signs_in_as: { actor: OWNER, repo: w.key } },
    });
    expect(asked.headers.get('set-cookie')).toBeNull();
    const first = await redeem(true);
    expect(first.status).toBe(200);
    const body = (await first.json()) as { session_key: string };
    expect(body).toMatchObject({ actor: OWNER, repo: w.key });
    // The page key is in the body only (the page keeps it in sessionStorage), never a cookie.
    expect(body.session_key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const cookie = first.headers.get('set-cookie')!;
    expect(cookie).not.toContain(body.session_key);
    expect(cookie).toMatch(new RegExp(`^zz_session_${w.daemon.port}=[A-Za-z0-9_-]{43}; `));
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    expect(cookie).toContain('Path=/');
    expect(cookie).not.toContain(token);
    const again = await redeem(true);
    expect(again.status).toBe(401);
    expect(await errorOf(again)).toMatch(/unknown, used or expired/);
  });

  it('the cookie acts as the actor through the same tools and scopes', async () => {
    const w = await daemon();
    const member = 'member@example.com';
    const auth = await signIn(w, await w.token(member));
    const tool = (name: string, args: object, headers: Record<string, string> = {}) =>
      fetch(`${w.url}/api/repos/${w.key}/tools/${name}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...auth,
          'sec-fetch-site': 'same-origin',
          ...headers,
        },
        body: JSON.stringify(args),
      });
    const state = (await (await tool('repo_state', {})).json()) as { result: unknown };
    expect(state.result).toMatchObject({ actor: member, roles: { owner: false } });
    const refused = await tool('role_grant', { grantee: member, role: 'owner' });
    expect(refused.status).toBe(403);
    expect(await errorOf(refused)).toBe('only an owner may grant or revoke ownership');
    // Without a same-origin mark (Sec-Fetch-Site or Origin) the cookie is not honoured.
    const bare = await fetch(`${w.url}/api/repos/${w.key}/tools/repo_state`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: '{}',
    });
    expect(bare.status).toBe(403);
    // Another origin is refused outright, cookie or not.
    const foreign = await tool('repo_state', {}, { origin: 'http://evil.example' });
    expect(foreign.status).toBe(403);
    expect(await errorOf(foreign)).toBe('cross-origin requests are not accepted');
    const otherPort = await tool(
      'repo_state',
      {},
      {
        origin: `http://127.0.0.1:${w.daemon.port + 1}`,
      },
    );
    expect(otherPort.status).toBe(403);
    // Revoking the member's tokens ends the session too.
    await w.daemon.tokensFor(w.key)!.revoke(member);
    const revoked = await tool('repo_state', {});
    expect(revoked.status).toBe(401);
    expect(await errorOf(revoked)).toMatch(/opened this dashboard session was revoked/);
    // A made-up session is unauthorised, not anonymous.
    const fake = await tool(
      'repo_state',
      {},
      { cookie: `zz_session_${w.daemon.port}=${'A'.repeat(43)}` },
    );
    expect(fake.status).toBe(401);
  });

  it('a stolen cookie without the page key is refused on the API, the session and the event stream', async () => {
    const w = await daemon();
    const owner = await w.token(OWNER);
    await w.call(owner, 'lane_propose', { lane_id: 'web', title: 'Web' });
    const auth = await signIn(w, owner);
    const bob = await signIn(w, await w.token('bob@example.com'));
    // What another server on this host receives (cookies ignore ports), replayed from outside
    // a browser with our Origin forged.
    const forged = { origin: w.url, 'sec-fetch-site': 'same-origin' };
    const tool = (headers: Record<string, string>) =>
      fetch(`${w.url}/api/repos/${w.key}/tools/lane_list`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...forged, ...headers },
        body: '{}',
      });
    const events = (headers: Record<string, string>, query = '') =>
      fetch(`${w.url}/api/repos/${w.key}/events${query}`, { headers: { ...forged, ...headers } });
    const session = (headers: Record<string, string>) =>
      fetch(`${w.url}/auth/session`, { headers: { ...forged, ...headers } });
    const refused = async (r: Promise<Response>, why: RegExp) => {
      const res = await r;
      expect(res.status).toBe(401);
      expect(await errorOf(res)).toMatch(why);
    };
    const noKey = /^signed out: .*not the page's session key \(x-zz-session\)/;
    const wrongKey = /^signed out: this dashboard session belongs to another page/;
    await refused(tool({ cookie: auth.cookie }), noKey);
    await refused(events({ cookie: auth.cookie }), noKey);
    await refused(session({ cookie: auth.cookie }), noKey);
    // A second session's cookie swapped in under the page (another port set it): the page's
    // key is not that session's, so nothing acts as it.
    const swapped = { cookie: bob.cookie, 'x-zz-session': auth['x-zz-session'] };
    await refused(tool(swapped), wrongKey);
    await refused(session(swapped), wrongKey);
    await refused(events({ cookie: bob.cookie }, `?session_key=${auth['x-zz-session']}`), wrongKey);
    // A key of the right shape but made up, and one only in the query of a non-stream call.
    await refused(tool({ cookie: auth.cookie, 'x-zz-session': 'A'.repeat(43) }), wrongKey);
    const inQuery = await fetch(
      `${w.url}/api/repos/${w.key}/tools/lane_list?session_key=${auth['x-zz-session']}`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...forged, cookie: auth.cookie },
        body: '{}',
      },
    );
    expect(inQuery.status).toBe(401);
    // With the page's key: answered, as the owner.
    const ok = await tool(auth);
    expect(ok.status).toBe(200);
    const lanes = ((await ok.json()) as { result: { lanes: Array<{ lane_id: string }> } }).result
      .lanes;
    expect(lanes.map((l) => l.lane_id)).toContain('web');
    expect(((await (await session(auth)).json()) as { actor: string }).actor).toBe(OWNER);
    const stream = await events({ cookie: auth.cookie }, `?session_key=${auth['x-zz-session']}`);
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await stream.body!.cancel();
    // Signing out without the key expires the cookie but leaves the session to its page.
    const out = await fetch(`${w.url}/auth/session`, {
      method: 'DELETE',
      headers: { ...forged, cookie: auth.cookie },
    });
    expect(out.status).toBe(200);
    expect((await tool(auth)).status).toBe(200);
    // Nor does a sign-in of the holder's own code that carries the stolen cookie (re-review F1:
    // the sign-in ended whatever session the cookie named).
    await signIn(w, await w.token('mallory@example.com'), { ...forged, cookie: auth.cookie });
    expect((await tool(auth)).status).toBe(200);
    // The access log names paths only: the stream's key never reaches it.
    expect(w.logs.join('\n')).toMatch(/ events owner@example.com 200 /);
    expect(w.logs.join('\n')).not.toContain(auth['x-zz-session']);
  });

  it('revoking a token ends its open event streams and those of the sessions it opened', async () => {
    const w = await daemon();
    const owner = await w.token(OWNER);
    const member = await w.token('member@example.com');
    const auth = await signIn(w, member);
    await w.call(owner, 'lane_propose', { lane_id: 'web', title: 'Web' });
    /** An open event stream: what it received so far, and whether it has ended. */
    const stream = async (headers: Record<string, string>) => {
      const res = await fetch(`${w.url}/api/repos/${w.key}/events`, { headers });
      expect(res.status).toBe(200);
      const s = { text: '', ended: false };
      const reader = res.body!.getReader();
      const dec = new TextDecoder();
      void (async () => {
        for (;;) {
          const { done, value } = await reader.read().catch(() => ({ done: true, value: null }));
          if (done) break;
          s.text += dec.decode(value!);
        }
        s.ended = true;
      })();
      cleanups.push(() => reader.cancel().catch(() => {}));
      return s;
    };
    const bearer = await stream({ authorization: `Bearer ${member}` });
    const session = await stream({ ...auth, 'sec-fetch-site': 'same-origin' });
    const control = await stream({ authorization: `Bearer ${owner}` });
    const post = (title: string) =>
      w.call(owner, 'ask_post', { lane_id: 'web', kind: 'work', title });
    await post('Before the revoke');
    for (const s of [bearer, session, control])
      await expect.poll(() => s.text).toContain('Before the revoke');
    await w.daemon.tokensFor(w.key)!.revoke('member@example.com');
    await post('After the revoke');
    await expect.poll(() => control.text).toContain('After the revoke');
    for (const s of [bearer, session]) {
      await expect.poll(() => s.ended).toBe(true);
      expect(s.text).not.toContain('After the revoke');
    }
    expect(control.ended).toBe(false);
  });

  it('revoking the token that opened a session ends it, though the actor holds other tokens', async () => {
    const w = await daemon();
    const member = 'member@example.com';
    const store = w.daemon.tokensFor(w.key)!;
    const opener = await store.create(member, 'laptop');
    const other = await store.create(member, 'desktop');
    const auth = await signIn(w, opener.token);
    const state = () =>
      fetch(`${w.url}/api/repos/${w.key}/tools/repo_state`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth, 'sec-fetch-site': 'same-origin' },
        body: '{}',
      });
    expect((await state()).status).toBe(200);
    // Revoking another of the member's tokens leaves the session alone.
    const third = await store.create(member, 'phone');
    await store.revoke({ id: third.id });
    expect((await state()).status).toBe(200);
    const session = () =>
      fetch(`${w.url}/auth/session`, { headers: { ...auth, 'sec-fetch-site': 'same-origin' } });
    expect((await session()).status).toBe(200);
    await store.revoke({ id: opener.id });
    // A reload asks /auth/session first: signed out there already, not at the first API call.
    const reload = await session();
    expect(reload.status).toBe(401);
    expect(await errorOf(reload)).toMatch(
      new RegExp(`token ${opener.id} of ${member} that opened this dashboard session was revoked`),
    );
    const ended = await state();
    expect(ended.status).toBe(401);
    // Ended for good, not only while the token is missing; the member's other token still works.
    expect((await state()).status).toBe(401);
    expect((await w.call(other.token, 'repo_state', {})).actor).toBe(member);
    // The sessions file records the token's id, never the token.
    const file = readFileSync(join(w.dir, '.git', 'zz', 'dashboard-sessions.json'), 'utf8');
    expect(file).not.toContain(opener.token);
  });

  it('a session stored before sessions recorded their token is ended, and the log says so', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'zz-sessions-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const store = new SessionStore({ dir });
    const opened = (await store.redeem(store.issueCode(OWNER, 'o/r', 'abc123def456').code))!;
    expect(opened.session.token_id).toBe('abc123def456');
    expect(await new SessionStore({ dir }).lookup(opened.secret)).toMatchObject({
      actor: OWNER,
      token_id: 'abc123def456',
    });
    // The same entry as an older zz wrote it: no token_id.
    const file = join(dir, 'dashboard-sessions.json');
    const doc = JSON.parse(readFileSync(file, 'utf8')) as { sessions: Record<string, unknown>[] };
    for (const s of doc.sessions) delete s.token_id;
    writeFileSync(file, JSON.stringify(doc));
    const lines: string[] = [];
    const old = new SessionStore({ dir, log: (l) => lines.push(l) });
    expect(await old.lookup(opened.secret)).toBeNull();
    expect(lines.join('\n')).toMatch(
      /ended 1 dashboard session\(s\) opened before sessions recorded their token/,
    );
  });

  it('a code works only briefly; sessions are stored hashed and survive a new store', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'zz-sessions-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    let now = Date.parse('2026-01-01T00:00:00Z');
    const clock = () => new Date(now);
    const store = new SessionStore({ dir, clock, codeTtlMs: 60_000, sessionTtlMs: 3_600_000 });
    const late = store.issueCode(OWNER, 'o/r', 'token-id');
    now += 60_001;
    expect(await store.redeem(late.code)).toBeNull();
    const { code } = store.issueCode(OWNER, 'o/r', 'token-id');
    const opened = (await store.redeem(code))!;
    expect(opened.session).toMatchObject({ actor: OWNER, repo: 'o/r' });
    const file = readFileSync(join(dir, 'dashboard-sessions.json'), 'utf8');
    expect(file).not.toContain(opened.secret);
    expect(file).not.toContain(code);
    const reopened = new SessionStore({ dir, clock });
    expect(await reopened.lookup(opened.secret)).toMatchObject({ actor: OWNER });
    now += 3_600_001;
    expect(await reopened.lookup(opened.secret)).toBeNull();
  });

  it('the sessions file is written 0600; a bad entry costs only itself, a bad file none', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'zz-sessions-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const store = new SessionStore({ dir });
    const opened = (await store.redeem(store.issueCode(OWNER, 'o/r', 'token-id').code))!;
    const file = join(dir, 'dashboard-sessions.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const doc = JSON.parse(readFileSync(file, 'utf8')) as { sessions: unknown[] };
    writeFileSync(file, JSON.stringify({ sessions: [{ hash: 'not hex' }, ...doc.sessions] }));
    expect(await new SessionStore({ dir }).lookup(opened.secret)).toMatchObject({ actor: OWNER });
    writeFileSync(file, '{"sessions": 3}');
    const lines: string[] = [];
    const broken = new SessionStore({ dir, log: (l) => lines.push(l) });
    expect(await broken.lookup(opened.secret)).toBeNull();
    expect(lines.join('\n')).toMatch(/unreadable/);
  });

  it('a session opened for one repository is refused on another it serves', async () => {
    const other = makeRepo('zz-web-other-');
    cleanups.push(other.cleanup);
    const w = await startWebDaemon({ repos: [other.dir] });
    cleanups.push(() => w.close());
    const otherKey = [...w.daemon.repos.keys()].find((k) => k !== w.key)!;
    await initRepo(w.daemon.repos.get(otherKey)!, { owner: OWNER, default_branch: 'main' });
    const auth = await signIn(w, await w.token(OWNER));
    const call = (key: string) =>
      fetch(`${w.url}/api/repos/${key}/tools/repo_state`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth, origin: w.url },
        body: '{}',
      });
    expect((await call(w.key)).status).toBe(200);
    const res = await call(otherKey);
    expect(res.status).toBe(403);
    expect(await errorOf(res)).toMatch(/this dashboard session is for /);
  });

  it('the page carries a CSP and never mentions a token; assets are served from the daemon', async () => {
    const w = await daemon();
    const page = await fetch(`${w.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toMatch(/script-src 'self' 'sha256-/);
    const html = await page.text();
    expect(html).toContain('/assets/app.js');
    expect(html).not.toMatch(/https?:\/\//);
    for (const path of [
      '/assets/app.js',
      '/assets/style.css',
      '/assets/vendor/preact.mjs',
      '/assets/vendor/hooks.mjs',
      '/assets/vendor/htm.mjs',
    ]) {
      const res = await fetch(w.url + path);
      expect(res.status, path).toBe(200);
    }
    expect((await fetch(`${w.url}/assets/../package.json`)).status).toBe(404);
    expect((await fetch(`${w.url}/assets/vendor/x.mjs`)).status).toBe(404);
    // Names every object inherits are not assets (they were a 500 from anyone).
    for (const name of ['constructor', 'toString', '__proto__', 'vendor/constructor']) {
      expect((await fetch(`${w.url}/assets/${name}`)).status, name).toBe(404);
    }
  });

  it('`zz dashboard --json --no-open` prints a one-time URL for the token actor', async () => {
    const w = await daemon();
    const env = { ...cliEnv(), ZZ_TOKEN: await w.token('dev@example.com'), DISPLAY: '' };
    const r = await zz(w.dir, env, 'dashboard', '--json', '--no-open');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = r.json();
    expect(out).toMatchObject({ actor: 'dev@example.com', repo: w.key, opened: false });
    expect(out.url).toMatch(new RegExp(`^${w.url}/#code=`));
    const text = await zz(w.dir, env, 'dashboard', '--no-open');
    expect(text.stdout).toMatch(
      /^Open http:\/\/127\.0\.0\.1:\d+\/#code=\S+\nas dev@example\.com on /,
    );
    const noToken = await zz(w.dir, { ...env, ZZ_TOKEN: undefined }, 'dashboard', '--no-open');
    expect(noToken.code).not.toBe(0);
    expect(noToken.stderr).toMatch(/zz login/);
    // Set but empty is no fall back to a stored login: it is refused, saying so.
    const empty = await zz(w.dir, { ...env, ZZ_TOKEN: '' }, 'dashboard', '--no-open');
    expect(empty.code).not.toBe(0);
    expect(empty.stderr).toMatch(/ZZ_TOKEN is set but empty/);
    // The daemon's log never held the code or the token.
    const log = w.logs.join('\n');
    expect(log).toContain('POST /auth/code');
    expect(log).not.toContain(env.ZZ_TOKEN);
    expect(log).not.toContain(new URL(out.url).hash.slice('#code='.length));
  });

  it.runIf(process.platform === 'linux')(
    '`zz dashboard` starts the browser opener without ZZ_TOKEN in its environment',
    async () => {
      const w = await daemon();
      // A real program named xdg-open first on PATH, recording what it was given.
      const bin = mkdtempSync(join(tmpdir(), 'zz-opener-'));
      cleanups.push(() => rmSync(bin, { recursive: true, force: true }));
      const out = join(bin, 'seen');
      writeFileSync(
        join(bin, 'xdg-open'),
        `#!/bin/sh\nenv > "${out}.tmp"; printf 'ARG=%s\\n' "$1" >> "${out}.tmp"; mv "${out}.tmp" "${out}"\n`,
        { mode: 0o755 },
      );
      const token = await w.token('dev@example.com');
      const env = {
        ...cliEnv(),
        ZZ_TOKEN: token,
        DISPLAY: ':99',
        ZZ_OPENER_CHECK: 'kept',
        PATH: `${bin}:${process.env.PATH}`,
      };
      const r = await zz(w.dir, env, 'dashboard', '--json');
      expect(r.stderr).toBe('');
      expect(r.json()).toMatchObject({ opened: true });
      await expect.poll(() => existsSync(out), { timeout: 10_000 }).toBe(true);
      const seen = readFileSync(out, 'utf8');
      expect(seen).toContain(`ARG=${r.json().url}`);
      expect(seen).toContain('ZZ_OPENER_CHECK=kept');
      expect(seen).not.toContain('ZZ_TOKEN');
      expect(seen).not.toContain(token);
    },
  );
});
