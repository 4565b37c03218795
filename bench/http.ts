import { pathToFileURL } from 'node:url';
import { jsonClient } from '../test/helpers/http-client.js';
import { benchDaemon } from './util.js';

// The daemon over a real socket with keep-alive clients, on a temp repository.
// Goals: ≥ 1,000 claims/s with 32 clients; read p50 < 3 ms. Clients run in the daemon's
// process (as one would run them on the same machine), so RSS includes them.

const CLIENTS = 32;
const CLAIM_ASKS = 3_000;
const READS = 500;
const WRITES = 300;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

async function timed(n: number, f: (i: number) => Promise<unknown>): Promise<number[]> {
  const ts: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await f(i);
    ts.push(performance.now() - t);
  }
  return ts;
}

function ok(r: { status: number; text: string }): void {
  if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${r.text.slice(0, 300)}`);
}

export async function benchHttp(): Promise<Record<string, unknown>> {
  const { daemon, token, owner, clients, tool, close } = await benchDaemon(
    'zz-bench-http-',
    CLIENTS,
  );
  try {
    ok(await owner.post(tool('lane_propose'), { lane_id: 'bench', title: 'Bench' }));

    // Asks to claim, posted by 32 concurrent clients (group commits).
    const ids: string[] = [];
    let next = 0;
    let t = performance.now();
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < CLAIM_ASKS) {
          next++;
          const r = await owner.post(tool('ask_post'), {
            lane_id: 'bench',
            kind: 'work',
            title: `ask ${next}`,
          });
          ok(r);
          ids.push(r.json.result.ask.ask_id as string);
        }
      }),
    );
    const postRate = CLAIM_ASKS / ((performance.now() - t) / 1000);

    // 32 agents, each with its own token and one keep-alive connection, pull from one queue.
    const agents = await Promise.all(
      Array.from({ length: CLIENTS }, async (_, i) => {
        const c = jsonClient(daemon.url, {
          token: (await daemon.tokens.create(`agent${i}@example.com`, 'login')).token,
          maxSockets: 1,
        });
        clients.push(c);
        return c;
      }),
    );
    let cursor = 0;
    let claimed = 0;
    const claimLatency: number[] = [];
    t = performance.now();
    await Promise.all(
      agents.map(async (c) => {
        while (cursor < ids.length) {
          const askId = ids[cursor++]!;
          const s = performance.now();
          const r = await c.post(tool('ask_claim'), { lane_id: 'bench', ask_id: askId });
          claimLatency.push(performance.now() - s);
          ok(r);
          claimed++;
        }
      }),
    );
    const claimRate = claimed / ((performance.now() - t) / 1000);

    // Sequential latencies over one keep-alive connection.
    const reader = jsonClient(daemon.url, { token, maxSockets: 1 });
    clients.push(reader);
    await timed(50, () => reader.post(tool('lane_list'), {}));
    const laneList = await timed(READS, async () => ok(await reader.post(tool('lane_list'), {})));
    const claimable = await timed(READS, async () =>
      ok(await reader.post(tool('ask_query_claimable'), { lane_id: 'bench', limit: 20 })),
    );
    const health = await timed(READS, async () => ok(await reader.get('/healthz')));
    const post = await timed(WRITES, async (i) =>
      ok(
        await reader.post(tool('ask_post'), { lane_id: 'bench', kind: 'work', title: `seq ${i}` }),
      ),
    );
    const rssMb = process.memoryUsage().rss / 1024 / 1024;

    const rows = [
      ['claims/s, 32 clients (goal ≥ 1000)', round(claimRate, 0)],
      [
        'claim p50 / p99 under load, ms',
        `${round(pct(claimLatency, 50))} / ${round(pct(claimLatency, 99))}`,
      ],
      ['ask_post/s, 32 clients', round(postRate, 0)],
      [
        'lane_list p50 / p99, ms (goal p50 < 3)',
        `${round(pct(laneList, 50))} / ${round(pct(laneList, 99))}`,
      ],
      [
        'ask_query_claimable p50 / p99, ms',
        `${round(pct(claimable, 50))} / ${round(pct(claimable, 99))}`,
      ],
      ['GET /healthz p50 / p99, ms', `${round(pct(health, 50))} / ${round(pct(health, 99))}`],
      ['ask_post p50 / p99, ms (sequential)', `${round(pct(post, 50))} / ${round(pct(post, 99))}`],
      ['RSS after the run, MiB', round(rssMb, 0)],
    ] as const;
    const width = Math.max(...rows.map(([k]) => k.length));
    console.log(`\nHTTP daemon (${CLAIM_ASKS} asks in the lane, keep-alive)`);
    for (const [k, v] of rows) console.log(`  ${k.padEnd(width)}  ${v}`);

    return {
      claims_per_s: round(claimRate, 0),
      claim_p50_ms: round(pct(claimLatency, 50)),
      claim_p99_ms: round(pct(claimLatency, 99)),
      posts_per_s: round(postRate, 0),
      lane_list_p50_ms: round(pct(laneList, 50)),
      lane_list_p99_ms: round(pct(laneList, 99)),
      claimable_p50_ms: round(pct(claimable, 50)),
      claimable_p99_ms: round(pct(claimable, 99)),
      healthz_p50_ms: round(pct(health, 50)),
      ask_post_p50_ms: round(pct(post, 50)),
      ask_post_p99_ms: round(pct(post, 99)),
      rss_mb: round(rssMb, 0),
    };
  } finally {
    await close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await benchHttp();
}
