import { readFileSync } from 'node:fs';
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { makeRepo } from '../test/helpers/temp-repo.js';
import { callHttp, ensureBuilt, killAll, privateEnv, serve, zz } from '../test/e2e/zz-process.js';
import { median } from './util.js';

// ask_post latency and daemon RSS while one agent token tries to open STREAMS event streams
// (the hostile review's sse-flood): a real `zz serve` in its own process, the streams and the
// writes over loopback HTTP from this one. Not a test: figures for the README and reports.

const STREAMS = Number(process.env.ZZ_BENCH_STREAMS ?? 400);
const WRITES = 9;

export async function benchEventStreams(): Promise<Record<string, unknown>> {
  ensureBuilt();
  const { dir, cleanup } = makeRepo('zz-bench-sse-');
  const env = privateEnv();
  await zz(dir, env, ['init']);
  const d = await serve(dir, env);
  const pid = d.child.pid!;
  const rss = () =>
    Math.round(
      Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024,
    );
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const sockets: http.ClientRequest[] = [];
  try {
    const owner = (await zz(dir, env, ['login', '--json'])).json().token as string;
    const member = (await zz(dir, env, ['agent', 'create', 'flood', '--json'])).json()
      .token as string;
    const key = d.repoKeys[0]!;
    await callHttp(d.url, key, 'lane_propose', { lane_id: 'web', title: 'Web' }, owner);
    const writes = async (label: string) => {
      const ms: number[] = [];
      for (let i = 0; i < WRITES; i++) {
        const t = performance.now();
        const r = await callHttp(
          d.url,
          key,
          'ask_post',
          { lane_id: 'web', kind: 'work', title: `${label} ${i}` },
          owner,
        );
        if (r.status !== 200) throw new Error(`ask_post: ${r.status} ${JSON.stringify(r.body)}`);
        ms.push(performance.now() - t);
      }
      return { median_ms: Math.round(median(ms)), max_ms: Math.round(Math.max(...ms)) };
    };
    const rss0 = rss();
    const before = await writes('quiet');
    const { port } = new URL(d.url);
    let open = 0;
    let refused = 0;
    await Promise.all(
      Array.from(
        { length: STREAMS },
        () =>
          new Promise<void>((res) => {
            const q = http.get(
              {
                host: '127.0.0.1',
                port,
                agent,
                path: `/api/repos/${key}/events`,
                headers: { authorization: `Bearer ${member}` },
              },
              (r) => {
                if (r.statusCode === 200) open++;
                else refused++;
                r.on('data', () => {});
                res();
              },
            );
            sockets.push(q);
            q.on('error', () => (refused++, res()));
          }),
      ),
    );
    await new Promise((r) => setTimeout(r, 2000));
    const during = await writes('flood');
    await new Promise((r) => setTimeout(r, 2000));
    return {
      streams_attempted: STREAMS,
      streams_open: open,
      streams_refused: refused,
      ask_post_quiet: before,
      ask_post_with_streams: during,
      rss_mib: { before: rss0, after_writes: rss() },
    };
  } finally {
    for (const q of sockets) q.destroy();
    agent.destroy();
    await killAll();
    cleanup();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  console.log(JSON.stringify(await benchEventStreams(), null, 2));
}
