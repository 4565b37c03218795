import { pathToFileURL } from 'node:url';
import { jsonClient, type JsonClient } from '../test/helpers/http-client.js';
import { benchDaemon, percentile } from './util.js';

// Issue 18: 32 agents over real HTTP drain a Lane of 1,000 Asks, once with ask_claim_next and
// once with query-then-claim (ask_query_claimable, pick one of the top few, ask_claim; a 409 is
// a lost race), in the same run on the same daemon. Goal for ask_claim_next: ≥ 1,000 claims/s,
// 0 lost races, each Ask claimed exactly once.

const AGENTS = 32;
const ASKS = 1_000;
const TOP = 5;

const round = (n: number, d = 0) => Math.round(n * 10 ** d) / 10 ** d;

export async function benchClaim(): Promise<Record<string, unknown>> {
  const { daemon, owner, clients, tool, close } = await benchDaemon('zz-bench-claim-', AGENTS);
  try {
    const call = async (c: JsonClient, name: string, args: Record<string, unknown>) => {
      const r = await c.post(tool(name), args);
      if (r.status !== 200 && r.status !== 409)
        throw new Error(`${name}: HTTP ${r.status}: ${r.text.slice(0, 300)}`);
      return r;
    };

    const fill = async (lane: string) => {
      await call(owner, 'lane_propose', { lane_id: lane, title: lane });
      let posted = 0;
      await Promise.all(
        Array.from({ length: AGENTS }, async () => {
          while (posted < ASKS) {
            posted++;
            await call(owner, 'ask_post', {
              lane_id: lane,
              kind: 'work',
              title: `ask ${posted}`,
              priority: posted % 5,
            });
          }
        }),
      );
    };
    await fill('next');
    await fill('race');

    const agents = await Promise.all(
      Array.from({ length: AGENTS }, async (_, i) => {
        const c = jsonClient(daemon.url, {
          token: (await daemon.tokens.create(`agent${i}@example.com`, 'login')).token,
          maxSockets: 1,
        });
        clients.push(c);
        return c;
      }),
    );

    type Run = { rate: number; calls: number; lost: number; p50: number; p99: number };
    const drain = async (
      lane: string,
      take: (c: JsonClient, wins: Map<string, number>) => Promise<'won' | 'lost' | 'empty'>,
    ): Promise<Run & { wins: Map<string, number> }> => {
      const wins = new Map<string, number>();
      const lat: number[] = [];
      let lost = 0;
      let calls = 0;
      const t = performance.now();
      await Promise.all(
        agents.map(async (c) => {
          for (;;) {
            const s = performance.now();
            const r = await take(c, wins);
            lat.push(performance.now() - s);
            calls++;
            if (r === 'empty') return;
            if (r === 'lost') lost++;
          }
        }),
      );
      const secs = (performance.now() - t) / 1000;
      const claimed = [...wins.values()].reduce((a, b) => a + b, 0);
      void lane;
      return {
        rate: claimed / secs,
        calls,
        lost,
        p50: percentile(lat, 50),
        p99: percentile(lat, 99),
        wins,
      };
    };

    const next = await drain('next', async (c, wins) => {
      const r = await call(c, 'ask_claim_next', { lane_id: 'next' });
      const ask = r.json.result?.ask as { ask_id: string } | null;
      if (!ask) return 'empty';
      wins.set(ask.ask_id, (wins.get(ask.ask_id) ?? 0) + 1);
      return 'won';
    });

    const race = await drain('race', async (c, wins) => {
      const q = await call(c, 'ask_query_claimable', { lane_id: 'race', limit: TOP });
      const asks = q.json.result.asks as Array<{ ask_id: string }>;
      if (asks.length === 0) return 'empty';
      const pick = asks[Math.floor(Math.random() * asks.length)]!;
      const r = await call(c, 'ask_claim', { lane_id: 'race', ask_id: pick.ask_id });
      if (r.status === 409) return 'lost';
      wins.set(pick.ask_id, (wins.get(pick.ask_id) ?? 0) + 1);
      return 'won';
    });

    // Each claimed exactly once: every Ask won once, and the Lane agrees.
    const check = async (lane: string, run: { wins: Map<string, number> }) => {
      const list = await call(owner, 'lane_list', {});
      const l = (
        list.json.result.lanes as Array<{ lane_id: string; counts: Record<string, number> }>
      ).find((x) => x.lane_id === lane)!;
      const twice = [...run.wins.values()].filter((n) => n > 1).length;
      return run.wins.size === ASKS && twice === 0 && l.counts.claimed === ASKS;
    };
    const nextOnce = await check('next', next);
    const raceOnce = await check('race', race);

    console.log(`\nClaiming over HTTP: ${AGENTS} agents drain a Lane of ${ASKS} Asks`);
    const rows: Array<[string, string | number, string | number]> = [
      ['', 'ask_claim_next', 'query-then-claim'],
      ['claims/s', round(next.rate), round(race.rate)],
      ['lost races (409)', next.lost, race.lost],
      ['calls', next.calls, race.calls],
      [
        'per-call p50 / p99, ms',
        `${round(next.p50, 1)} / ${round(next.p99, 1)}`,
        `${round(race.p50, 1)} / ${round(race.p99, 1)}`,
      ],
      ['each claimed exactly once', String(nextOnce), String(raceOnce)],
    ];
    for (const [k, a, b] of rows) console.log(`  ${k.padEnd(26)} ${String(a).padEnd(16)} ${b}`);
    return {
      claim_next_per_s: round(next.rate),
      claim_next_lost: next.lost,
      claim_next_exactly_once: nextOnce,
      query_claim_per_s: round(race.rate),
      query_claim_lost: race.lost,
      query_claim_exactly_once: raceOnce,
    };
  } finally {
    await close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await benchClaim();
}
