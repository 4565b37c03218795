import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { httpClient } from '../src/cli/client.js';
import { initRepo } from '../src/core/index.js';
import { startDaemon } from '../src/daemon/index.js';
import type { Model, ObjectRequest, Usage } from '../src/models/index.js';
import { runWorker, type CallTool } from '../src/work/index.js';
import { ensureBuilt, privateEnv, ZZ_MAIN } from '../test/e2e/zz-process.js';
import { makeRepo } from '../test/helpers/temp-repo.js';
import { median, percentile, printTable } from './util.js';

// zz work's own cost. (1) Overhead per `work` Ask with an instant in-process model, over real
// HTTP to a daemon: claim → context reads → structured answer → ask_answer with a changeset.
// Goal < 100 ms per Ask excluding the model. (2) 8 concurrent `zz work` processes (the built
// binary, exec: model) drain a Lane of 200 work Asks; every Ask must be answered exactly once.

const OVERHEAD_ASKS = 60;
const DRAIN_ASKS = 200;
const WORKERS = 8;

const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;

/** A model that answers at once: what is left is zz's own time. */
function instantModel(): Model {
  const usage: Usage = { input_tokens: 0, output_tokens: 0, calls: 0 };
  return {
    spec: 'instant',
    usage: () => ({ ...usage }),
    chat: () => Promise.resolve({ content: 'done', tool_calls: [], usage }),
    object: <T>(req: ObjectRequest<T>) => {
      usage.calls++;
      const object = req.schema.parse({
        message: 'Add a note',
        files: [{ path: `notes/${usage.calls}.md`, content: 'note\n' }],
      });
      return Promise.resolve({ object, usage, repaired: false });
    },
  };
}

async function setup() {
  const fixture = makeRepo('zz-bench-work-');
  const cache = mkdtempSync(join(tmpdir(), 'zz-bench-work-cache-'));
  const daemon = await startDaemon({
    cwd: fixture.dir,
    port: 0,
    reposFile: join(cache, 'none.json'),
    cacheDir: cache,
    mcpHandler: null,
  });
  const repo = [...daemon.repos.values()][0]!;
  await initRepo(repo, { owner: 'owner@example.com', default_branch: 'main' });
  const ownerToken = (await daemon.tokens.create('owner@example.com', 'login')).token;
  const agentToken = (await daemon.tokens.create('owner@example.com[bot]', 'bot')).token;
  const o = httpClient(daemon.url, repo.key, ownerToken);
  const a = httpClient(daemon.url, repo.key, agentToken);
  const owner: CallTool = (t, args) => o.call(t, args);
  const agent: CallTool = (t, args) => a.call(t, args);
  return {
    dir: fixture.dir,
    owner,
    agent,
    agentToken,
    close: async () => {
      await daemon.close();
      fixture.cleanup();
      rmSync(cache, { recursive: true, force: true });
    },
  };
}

async function postMany(owner: CallTool, lane: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < n) {
        const i = next++;
        const r = await owner('ask_post', { lane_id: lane, kind: 'work', title: `Note ${i}` });
        ids.push((r.ask as { ask_id: string }).ask_id);
      }
    }),
  );
  return ids;
}

async function overhead(): Promise<Record<string, unknown>> {
  const env = await setup();
  try {
    // Two Lanes, so that the baseline and the worker never take each other's Asks.
    await env.owner('lane_propose', { lane_id: 'bare', title: 'Baseline' });
    await env.owner('lane_propose', { lane_id: 'bench', title: 'Bench' });
    const ids = await postMany(env.owner, 'bare', OVERHEAD_ASKS);
    await postMany(env.owner, 'bench', OVERHEAD_ASKS);
    // Baseline, same run: the bare calls any agent must make for a work Ask — claim it, read
    // the head, answer with a changeset — made directly, without the worker. Baseline and
    // worker alternate Ask by Ask, so the load of a shared machine weighs on both alike.
    const bare: number[] = [];
    // Where the bare time goes: the claim and the answer are durable writes (fsync'd), the
    // head a read.
    const parts = { claim: [] as number[], head: [] as number[], answer: [] as number[] };
    const bareAsk = async (id: string) => {
      const t = performance.now();
      await env.agent('ask_claim', { lane_id: 'bare', ask_id: id });
      const t1 = performance.now();
      const head = await env.agent('git_diff', { max_bytes: 1, context_lines: 0 });
      const t2 = performance.now();
      await env.agent('ask_answer', {
        lane_id: 'bare',
        ask_id: id,
        outcome: 'complete',
        result: 'Add a note',
        changeset: {
          base: head.commit,
          message: 'Add a note',
          files: [{ path: `notes/${id}.md`, content: 'note\n' }],
        },
      });
      const t3 = performance.now();
      bare.push(t3 - t);
      parts.claim.push(t1 - t);
      parts.head.push(t2 - t1);
      parts.answer.push(t3 - t2);
    };
    const model = instantModel();
    const times: number[] = [];
    const calls: number[] = [];
    for (let i = 0; i < OVERHEAD_ASKS; i++) {
      await bareAsk(ids[i]!);
      let n = 0;
      const counted: CallTool = (t, args) => {
        n++;
        return env.agent(t, args);
      };
      const t = performance.now();
      const s = await runWorker({
        call: counted,
        model,
        laneId: 'bench',
        actor: 'owner@example.com[bot]',
        once: true,
        kinds: ['work'],
      });
      if (s.answered !== 1) throw new Error(`ask ${i} was not answered`);
      times.push(performance.now() - t);
      calls.push(n);
    }
    const warm = times.slice(5);
    const bareWarm = bare.slice(5);
    const rows = [
      {
        path: 'bare calls (claim, head, answer)',
        asks: OVERHEAD_ASKS,
        'p50 ms': round(median(bareWarm)),
        'p95 ms': round(percentile(bareWarm, 95)),
        'tool calls / ask': 3,
      },
      ...(['claim', 'head', 'answer'] as const).map((k) => ({
        path: `  of which ${k}${k === 'head' ? ' (read)' : ' (durable write)'}`,
        asks: OVERHEAD_ASKS,
        'p50 ms': round(median(parts[k].slice(5))),
        'p95 ms': round(percentile(parts[k].slice(5), 95)),
        'tool calls / ask': 1,
      })),
      {
        path: 'zz work (once), instant model',
        asks: OVERHEAD_ASKS,
        'p50 ms': round(median(warm)),
        'p95 ms': round(percentile(warm, 95)),
        'tool calls / ask': median(calls),
      },
    ];
    printTable('work Ask, claim → answer, excluding the model (goal < 100 ms)', rows);
    return {
      bare_p50_ms: rows[0]!['p50 ms'],
      work_p50_ms: rows.at(-1)!['p50 ms'],
      work_p95_ms: rows.at(-1)!['p95 ms'],
      overhead_p50_ms: round(median(warm) - median(bareWarm)),
    };
  } finally {
    await env.close();
  }
}

async function drain(): Promise<Record<string, unknown>> {
  ensureBuilt();
  const env = await setup();
  const scriptDir = mkdtempSync(join(tmpdir(), 'zz-bench-agent-'));
  const script = join(scriptDir, 'instant.mjs');
  writeFileSync(
    script,
    `const c = []; process.stdin.on('data', (d) => c.push(d)); process.stdin.on('end', () => {
  process.stdout.write(JSON.stringify({ object: { message: 'Add a note', files: [{ path: 'notes/' + process.pid + '.md', content: 'note\\n' }] } }));
});\n`,
  );
  try {
    await env.owner('lane_propose', { lane_id: 'drain', title: 'Drain' });
    const ids = await postMany(env.owner, 'drain', DRAIN_ASKS);
    const penv = privateEnv({ ZZ_TOKEN: env.agentToken });
    const answeredBy = new Map<string, number>();
    // Claims too: an Ask claimed twice was worked (and paid for) twice even if answered once.
    const claimedBy = new Map<string, number>();
    const perWorker = Array.from({ length: WORKERS }, () => 0);
    let released = 0;
    const t = performance.now();
    let remaining = DRAIN_ASKS;
    let allDone: () => void = () => {};
    const done = new Promise<void>((r) => (allDone = r));
    const children = Array.from({ length: WORKERS }, (_, w) => {
      const child = spawn(
        process.execPath,
        [
          ZZ_MAIN,
          'work',
          '--lane',
          'drain',
          '--kinds',
          'work',
          '--json',
          '--model',
          `exec:node ${script}`,
        ],
        { cwd: env.dir, env: penv, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let buf = '';
      child.stdout.on('data', (d: Buffer) => {
        buf += d.toString('utf8');
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          const e = JSON.parse(line) as { type: string; ask_id?: string };
          if (e.type === 'claimed') claimedBy.set(e.ask_id!, (claimedBy.get(e.ask_id!) ?? 0) + 1);
          if (e.type === 'released') released++;
          if (e.type === 'answered') {
            perWorker[w]!++;
            answeredBy.set(e.ask_id!, (answeredBy.get(e.ask_id!) ?? 0) + 1);
            if (--remaining === 0) allDone();
          }
        }
      });
      child.stderr.on('data', (d: Buffer) => process.stderr.write(`[worker ${w}] ${d}`));
      return child;
    });
    await done;
    const ms = performance.now() - t;
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            c.once('close', () => resolve());
            c.kill('SIGINT');
          }),
      ),
    );
    const r = await env.owner('lane_get', { lane_id: 'drain', history_limit: 100_000 });
    const history = r.history as { op: string; ask_id: string | null }[];
    const answers = new Map<string, number>();
    for (const h of history) {
      if (h.op === 'ask_answer' && h.ask_id)
        answers.set(h.ask_id, (answers.get(h.ask_id) ?? 0) + 1);
    }
    const once = ids.every(
      (id) => answers.get(id) === 1 && answeredBy.get(id) === 1 && claimedBy.get(id) === 1,
    );
    if (!once || released) throw new Error('some Ask was not claimed and answered exactly once');
    const row = {
      workers: WORKERS,
      asks: DRAIN_ASKS,
      's total': round(ms / 1000, 2),
      'asks/s': round(DRAIN_ASKS / (ms / 1000)),
      'exactly once': once ? 'yes' : 'NO',
      'asks per worker': perWorker.join('/'),
    };
    printTable(`${WORKERS} zz work processes draining ${DRAIN_ASKS} work Asks (exec: model)`, [
      row,
    ]);
    return row;
  } finally {
    rmSync(scriptDir, { recursive: true, force: true });
    await env.close();
  }
}

export async function benchWork(): Promise<Record<string, unknown>> {
  return { overhead: await overhead(), drain: await drain() };
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  // `node --import tsx bench/work.ts [overhead|drain]` runs one part alone.
  const part = process.argv[2];
  const result =
    part === 'overhead' ? await overhead() : part === 'drain' ? await drain() : await benchWork();
  console.log(JSON.stringify(result, null, 2));
}
