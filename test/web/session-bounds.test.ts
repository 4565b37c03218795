import { afterEach, describe, expect, it } from 'vitest';
import { SessionStore } from '../../src/web/index.js';
import { codeOf, OWNER, signInHeaders, startWebDaemon, type WebDaemon } from './harness.js';

// Dashboard sessions and login codes are bounded per actor and in total, and no actor can push
// another's out; a request carrying two of this daemon's session cookies (one set by another
// server on this host: cookies ignore ports) is refused, never resolved to either.

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const open = async (store: SessionStore, actor: string) =>
  (await store.redeem(store.issueCode(actor, 'o/r', 'token-id').code))!.secret;

describe('dashboard session bounds', () => {
  it("a member's new sessions end only that member's oldest", async () => {
    const store = new SessionStore({ maxSessionsPerPerson: 3, maxSessions: 50 });
    const alice = await open(store, OWNER);
    const bobs: string[] = [];
    for (let i = 0; i < 30; i++) bobs.push(await open(store, 'bob@example.com'));
    expect(await store.lookup(alice)).toMatchObject({ actor: OWNER });
    // Bob keeps his three newest.
    const live = await Promise.all(bobs.map((s) => store.lookup(s)));
    expect(live.map((s) => s !== null)).toEqual([...Array(27).fill(false), true, true, true]);
  });

  it('past the total bound a new session is refused, nobody else is signed out', async () => {
    const store = new SessionStore({ maxSessionsPerPerson: 1, maxSessions: 4 });
    const held = [await open(store, 'a@x'), await open(store, 'b@x'), await open(store, 'c@x')];
    held.push(await open(store, 'd@x'));
    await expect(open(store, 'e@x')).rejects.toMatchObject({
      code: 'too_many_requests',
      message: expect.stringMatching(/4 open sessions/),
    });
    for (const s of held) expect(await store.lookup(s)).not.toBeNull();
    // An actor at their own bound still replaces their oldest.
    const again = await open(store, 'a@x');
    expect(await store.lookup(again)).toMatchObject({ actor: 'a@x' });
    expect(await store.lookup(held[0]!)).toBeNull();
    for (const s of held.slice(1)) expect(await store.lookup(s)).not.toBeNull();
  });

  it("a person's agents share the person's bound: twenty agent names sign nobody else out", async () => {
    const store = new SessionStore({ maxSessionsPerPerson: 3, maxSessions: 10 });
    const alice = await open(store, OWNER);
    for (let i = 0; i < 20; i++) await open(store, `bob@example.com[a${i}]`);
    // Bob's agents hold three places; the owner's session lives, and there is room for others.
    expect(await store.lookup(alice)).toMatchObject({ actor: OWNER });
    for (const c of ['c@x', 'd@x', 'e@x']) await open(store, c);
    const codes = new SessionStore({ maxCodesPerPerson: 2, maxCodes: 5 });
    for (let i = 0; i < 20; i++) codes.issueCode(`bob@example.com[a${i}]`, 'o/r', 'token-id');
    expect(() =>
      ['c@x', 'd@x', 'e@x'].map((a) => codes.issueCode(a, 'o/r', 'token-id')),
    ).not.toThrow();
  });

  it('login codes: a member minting in a loop drops only their own; the total refuses', async () => {
    const store = new SessionStore({ maxCodesPerPerson: 2, maxCodes: 5 });
    const alice = store.issueCode(OWNER, 'o/r', 'token-id').code;
    const bob = Array.from({ length: 50 }, () => store.issueCode('bob@x', 'o/r', 'token-id').code);
    expect(await store.redeem(alice)).not.toBeNull();
    expect(await store.redeem(bob[0]!)).toBeNull();
    expect(await store.redeem(bob[49]!)).not.toBeNull();
    // bob's last but one is still waiting: four more fill the five.
    const others = ['c@x', 'd@x', 'e@x', 'f@x'].map(
      (a) => store.issueCode(a, 'o/r', 'token-id').code,
    );
    expect(() => store.issueCode('g@x', 'o/r', 'token-id')).toThrow(
      /5 dashboard login codes are waiting/,
    );
    for (const c of others) expect(await store.redeem(c)).not.toBeNull();
  });
});

describe('a second session cookie for this daemon', () => {
  async function daemon(): Promise<WebDaemon> {
    const w = await startWebDaemon();
    cleanups.push(() => w.close());
    return w;
  }
  it('is refused (either order) and expired at every path above the request', async () => {
    const w = await daemon();
    const aliceAuth = await signInHeaders(w, await w.token(OWNER));
    const alice = aliceAuth.cookie;
    const bob = (await signInHeaders(w, await w.token('bob@example.com'))).cookie;
    const get = (cookie: string) =>
      fetch(`${w.url}/api/repos/${w.key}/tools/lane_list`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-zz-session': aliceAuth['x-zz-session'],
          cookie,
          'sec-fetch-site': 'same-origin',
        },
        body: '{}',
      });
    const one = await get(alice);
    expect(one.status).toBe(200);
    for (const both of [`${bob}; ${alice}`, `${alice}; ${bob}`]) {
      const res = await get(both);
      expect(res.status).toBe(401);
      const body = (await res.json()) as { error: string };
      expect(body.error).toMatch(/signed out: .*two dashboard session cookies/);
      const cleared = res.headers.getSetCookie();
      const name = alice.slice(0, alice.indexOf('='));
      for (const p of ['/', '/api', '/api/repos', `/api/repos/${w.key}/tools/lane_list`])
        expect(cleared).toContain(`${name}=; Path=${p}; HttpOnly; SameSite=Strict; Max-Age=0`);
    }
    const session = await fetch(`${w.url}/auth/session`, {
      headers: { cookie: `${bob}; ${alice}`, 'sec-fetch-site': 'same-origin' },
    });
    expect(session.status).toBe(401);
    // Signing in again still works, and expires the shadowing name where it may sit.
    const res = await fetch(`${w.url}/auth/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: w.url, cookie: `${bob}; ${alice}` },
      body: JSON.stringify({ code: codeOf(await w.loginUrl(await w.token(OWNER))), switch: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.getSetCookie().some((c) => /Path=\/auth; .*Max-Age=0/.test(c))).toBe(true);
  });
});
