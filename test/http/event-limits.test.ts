import { afterEach, describe, expect, it, vi } from 'vitest';
import * as core from '../../src/core/index.js';
import { OWNER, startWebDaemon, type WebDaemon } from '../web/harness.js';

// laneEvents counted where every caller (the event streams, the lane_events tool) reaches it.
vi.mock('../../src/core/index.js', async (original) => {
  const mod = await original<typeof core>();
  return { ...mod, laneEvents: vi.fn(mod.laneEvents) };
});

// Event streams are bounded per actor and in total (a 429 that says so), a Lane commit costs one
// lane_events pull whatever the number of streams watching, and a revoked token's stream ends
// at the next heartbeat even when nothing is committed.

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function daemon(
  daemon: NonNullable<Parameters<typeof startWebDaemon>[0]>['daemon'],
): Promise<WebDaemon> {
  const w = await startWebDaemon({ daemon });
  cleanups.push(() => w.close());
  return w;
}

interface Open {
  status: number;
  text: string;
  ended: boolean;
  body: string;
  close: () => void;
}

async function stream(w: WebDaemon, token: string): Promise<Open> {
  const ac = new AbortController();
  cleanups.push(() => ac.abort());
  const res = await fetch(`${w.url}/api/repos/${w.key}/events`, {
    headers: { authorization: `Bearer ${token}` },
    signal: ac.signal,
  });
  const s: Open = { status: res.status, text: '', ended: false, body: '', close: () => ac.abort() };
  if (res.status !== 200) {
    s.body = await res.text();
    s.ended = true;
    return s;
  }
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
  return s;
}

describe('event stream bounds', () => {
  it('refuses past the per-person (agents included) and the total bound with a 429 that says which', async () => {
    const w = await daemon({ maxStreamsPerPerson: 3, maxStreams: 5 });
    const member = await w.token('member@example.com');
    const owner = await w.token(OWNER);
    const mine = await Promise.all(Array.from({ length: 6 }, () => stream(w, member)));
    expect(mine.map((s) => s.status).sort()).toEqual([200, 200, 200, 429, 429, 429]);
    expect(mine.find((s) => s.status === 429)!.body).toMatch(
      /member@example.com and their agents already have 3 event streams open/,
    );
    // The member's agents count with the member.
    const agent = await w.token('member@example.com[claude]');
    expect((await stream(w, agent)).status).toBe(429);
    const others = [await stream(w, owner), await stream(w, owner), await stream(w, owner)];
    expect(others.map((s) => s.status)).toEqual([200, 200, 429]);
    expect(others[2]!.body).toMatch(/already serves 5 event streams/);
    // A closed stream frees its place.
    mine.find((s) => s.status === 200)!.close();
    await expect.poll(async () => (await stream(w, member)).status, { timeout: 20_000 }).toBe(200);
  });

  it('a revoked token ends its stream at the next heartbeat, with no commit', async () => {
    const w = await daemon({ heartbeatMs: 200 });
    const member = await w.token('member@example.com');
    const s = await stream(w, member);
    await expect.poll(() => s.text).toContain(': ping');
    await w.daemon.tokensFor(w.key)!.revoke('member@example.com');
    await expect.poll(() => s.ended, { timeout: 20_000 }).toBe(true);
  });

  it('a Lane commit costs one lane_events pull for every stream watching', async () => {
    const w = await daemon({});
    const owner = await w.token(OWNER);
    await w.call(owner, 'lane_propose', { lane_id: 'web', title: 'Web' });
    const open = await Promise.all(Array.from({ length: 20 }, () => stream(w, owner)));
    await expect.poll(() => open.every((s) => s.text.includes('connected'))).toBe(true);
    const pulls = vi.mocked(core.laneEvents);
    // Each stream's first pull (from the head) has run: nothing new, so the next page is empty.
    await expect.poll(() => pulls.mock.calls.length).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 500));
    pulls.mockClear();
    await w.call(owner, 'ask_post', { lane_id: 'web', kind: 'work', title: 'Fan out' });
    for (const s of open) await expect.poll(() => s.text).toContain('Fan out');
    // One pull that finds the Ask and one that finds nothing more (per stream: 40).
    expect(pulls.mock.calls.length).toBeLessThanOrEqual(2);
  });
});
