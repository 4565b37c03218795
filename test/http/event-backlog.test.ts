import { readFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BACKLOG_BYTES } from '../../src/http/event-stream.js';
import { jsonClient, type JsonClient } from '../helpers/http-client.js';
import { startTestDaemon, type TestDaemon } from '../helpers/test-daemon.js';

// An event stream's backlog is bounded in bytes (hostile review: one Ladder write of ~8 MiB is
// one chunk to every stream, and 1,000 queued chunks were allowed). A real SSE client on
// loopback that stops reading while large Ladder writes land is dropped once it is
// MAX_BACKLOG_BYTES behind; one that reads gets everything; the dropped one reconnects from
// its Last-Event-ID and misses no Lane event.

const MiB = 1024 * 1024;
const OWNER = 'owner@example.com';
/** Ladder writes of ~4 MiB each, WRITES of them: far more than the bound and socket buffers. */
const WRITES = 12;
const RUNGS = 16;
const DETAIL = 'd'.repeat(250 * 1024);

let t: TestDaemon;
let http: JsonClient;
let token = '';
let ask = '';

async function call(name: string, body: unknown) {
  const r = await http.post(`/api/repos/${t.key}/tools/${name}`, body, token);
  expect(r.status, r.text.slice(0, 300)).toBe(200);
  return r.json.result;
}

beforeAll(async () => {
  t = await startTestDaemon({ prefix: 'zz-backlog-' });
  token = await t.token(OWNER);
  http = jsonClient(t.url);
  await call('lane_propose', { lane_id: 'lad', title: 'Ladder' });
  ask = (await call('ask_post', { lane_id: 'lad', kind: 'ladder_update', title: 'rungs' })).ask
    .ask_id;
  await call('ask_claim', { lane_id: 'lad', ask_id: ask, lease_seconds: 86_400 });
});
afterAll(async () => {
  http?.close();
  await t?.close();
});

interface Sse {
  res: IncomingMessage;
  /** Bytes received once reading. */
  bytes: number;
  text: string;
  ended: boolean;
  read(): void;
  close(): void;
}

/** An SSE connection; it reads only once read() is called (until then the socket fills). */
function open(lastEventId?: string): Promise<Sse> {
  const u = new URL(`${t.url}/api/repos/${t.key}/events`);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        headers: {
          authorization: `Bearer ${token}`,
          ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
        },
      },
      (res) => {
        expect(res.statusCode).toBe(200);
        const s: Sse = {
          res,
          bytes: 0,
          text: '',
          ended: false,
          read() {
            res.on('data', (c: Buffer) => {
              s.bytes += c.length;
              // Only what the assertions need: Lane events and ids, not the rungs' details.
              for (const l of c.toString('latin1').split('\n')) {
                if (l.startsWith('id: ') || l.includes('"ask_post"') || l.includes('Lane note'))
                  s.text += l.slice(0, 400) + '\n';
              }
            });
          },
          close: () => req.destroy(),
        };
        const end = () => (s.ended = true);
        res.once('end', end);
        res.once('close', end);
        res.once('error', end);
        resolve(s);
      },
    );
    req.once('error', reject);
    req.end();
  });
}

/** One ~4 MiB Ladder write (one commit: one chunk to every stream) and one small Lane write. */
async function writeBoth(i: number) {
  await call('ladder_write_rung', {
    lane_id: 'lad',
    ask_id: ask,
    rungs: Array.from({ length: RUNGS }, (_, k) => ({
      path: `_topics/big/${i}/${k}`,
      kind: 'topic',
      title: `rung ${i}.${k}`,
      summary: 'big',
      detail: DETAIL,
    })),
  });
  await call('ask_post', { lane_id: 'lad', kind: 'work', title: `Lane note ${i}` });
}

describe('event stream backlog', { timeout: 300_000 }, () => {
  it('drops a client that stopped reading once it is MAX_BACKLOG_BYTES behind; a reader gets all; the dropped one resumes by cursor', async () => {
    const reader = await open();
    reader.read();
    // The stalled client starts from a cursor (it may be cut before its first id arrives).
    const head = (await call('lane_events', { limit: 5000 })).next_cursor as string;
    const stalled = await open(head);
    await expect.poll(() => reader.bytes).toBeGreaterThan(0);
    for (let i = 0; i < WRITES; i++) await writeBoth(i);
    const written = WRITES * RUNGS * DETAIL.length;

    // The reader got every Lane note and every big write, and is still connected.
    await expect.poll(() => reader.text).toContain(`Lane note ${WRITES - 1}`);
    await expect.poll(() => reader.bytes).toBeGreaterThan(written);
    expect(reader.ended).toBe(false);

    // The stalled client was cut: reading now, it gets what the sockets held, then the end.
    stalled.read();
    await expect.poll(() => stalled.ended, { timeout: 60_000 }).toBe(true);
    // At most: the backlog bound, the chunk the socket was writing when it stopped, and the
    // kernel's buffers on loopback (4 MiB to send, what the receive side took unread).
    expect(stalled.bytes).toBeLessThan(MAX_BACKLOG_BYTES + 4 * MiB + 4 * MiB + 4 * MiB);
    expect(stalled.bytes).toBeLessThan(written / 2);
    const ids = [...stalled.text.matchAll(/^id: (.+)$/gm)].map((m) => m[1]!);
    const seen = new Set([...stalled.text.matchAll(/Lane note (\d+)/g)].map((m) => m[1]!));
    expect(seen.size).toBeLessThan(WRITES);

    // Resumed from its last id (as EventSource does): every Lane note it missed arrives.
    const again = await open(ids.at(-1) ?? head);
    again.read();
    await expect.poll(() => again.text).toContain(`Lane note ${WRITES - 1}`);
    for (const m of again.text.matchAll(/Lane note (\d+)/g)) seen.add(m[1]!);
    expect([...seen].map(Number).sort((a, b) => a - b)).toEqual(
      Array.from({ length: WRITES }, (_, i) => i),
    );
    reader.close();
    again.close();
  });

  it('cuts a dropped client that never reads again at once, not when it next reads', async () => {
    // Review M3: the dropped stream's slot was freed while the server still waited for a
    // 'drain' that never came, so the socket (and the chunk it was writing) stayed open for
    // as long as the client stayed silent. Seen from the kernel, not the client: one that
    // never reads never sees the FIN queued behind what it left unread.
    const stalled = await open();
    const port = stalled.res.socket!.localPort!;
    expect(serverSideState(port)).toBe('ESTABLISHED');
    for (let i = 0; i < 8; i++) await writeBoth(100 + i);
    await expect.poll(() => serverSideState(port), { timeout: 10_000 }).not.toBe('ESTABLISHED');
    expect(stalled.bytes).toBe(0);
    stalled.close();
  });
});

/**
 * The TCP state (from /proc/net/tcp) of the daemon's end of the loopback connection whose
 * client end is `clientPort`; 'gone' once the kernel has let it go.
 */
function serverSideState(clientPort: number): string {
  const hex = (n: number) => n.toString(16).toUpperCase().padStart(4, '0');
  const local = `:${hex(Number(new URL(t.url).port))}`;
  const remote = `:${hex(clientPort)}`;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1]?.endsWith(local) && f[2]?.endsWith(remote)) {
      return f[3] === '01' ? 'ESTABLISHED' : `state ${f[3]}`;
    }
  }
  return 'gone';
}
