import { spawn, execFileSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CowMap } from '../src/core/cow-map.js';
import { openRepository as openRepo } from '../src/git/index.js';
import {
  Entity as Ent,
  GitStore as Store,
  type EntityCodec,
  type OpRecord,
} from '../src/store/index.js';
import { importFromCheckout } from './checkout.js';

// Write throughput of the store on a realistic lane: `lane.json` plus 1,000 asks fanned out as
// `asks/<2 hex>/<ask_id>.json`; every write changes one ask. Side by side:
//
//  zz-seq      Entity.mutate awaited one at a time (no group-commit benefit), durable (the
//              default): every object file and its directory fsynced before the ref moves, and
//              the ref's lock fsynced before its rename.
//              A commit of a few objects is one small pack (git/small-packs.ts).
//  zz-seq-loose  the same writing loose objects (smallPacks off): the write path before small
//              packs, i.e. main's before issue 17's last round, in the same run.
//  zz-seq-objects-unsynced  the same with objects not fsynced (the behaviour before: only the
//              ref was, trusting ext4's ordered mode to flush the objects with it).
//  zz-seq-nofsync  the same with every fsync off (objects' and the ref's; git's default:
//              core.fsync leaves out the `reference` component), to show what the fsyncs cost.
//              The same write path otherwise: small packs, as zz-seq (a repository opened
//              without fsync writes loose objects; before 2 Dec this variant did, so its figure
//              was 5 file creations a write on the event loop, not zz-seq less its syncs).
//  zz-32       32 writers in flight on the same lane: group commit (zz-32-loose: loose
//              objects; zz-32-objects-unsynced: objects not fsynced, as before).
//  native-persistent  the fairest fast native pipeline we could build: long-lived
//              `git hash-object -w --stdin-paths` (blobs; commits via `-t commit`),
//              `git mktree --batch` and `git update-ref --stdin` (start/update <new> <old>/commit):
//              no process spawn per write, CAS by git itself, and `-c core.fsync=reference` so
//              the ref is as durable as zz's.
//  native-spawn  the plain plumbing a script would use: hash-object, mktree ×3, commit-tree,
//              update-ref <ref> <new> <old> spawned per write (6 processes), also fsyncing refs.
//
// Each variant runs several rounds; we report the median ops/s (and the range). zz-seq and
// zz-seq-loose (zz-32 and zz-32-loose) run round by round in turn, so load weighs on both alike.
// Beside ops/s, the CPU each round used per op (cpu_ms_per_op): the process's (user + system,
// every thread), the event loop's thread alone and the other threads' (libuv's pool: the
// fsyncs, blank creations and unlinks; V8's: GC, JIT) from /proc/self/task/*/schedstat, where
// there is one. On this project's shared 2-core machines throughput moves with the others'
// load; CPU per op moves much less, so it is the figure to compare between variants. Work one
// variant leaves running (a small-pack merge, an unlink in the pool) may be counted in the next
// variant's round; the order alternates, so that weighs on each alike.
//
//  zz-seq-baseline, zz-32-baseline  with ZZ_BENCH_STORE_BASELINE=<dir>: the same, with the
//              store of another checkout of zz (e.g. `git worktree add --detach /tmp/zz-old
//              main` with node_modules copied in), loaded into this process and measured round
//              by round beside zz-seq (zz-32): on a shared machine whose load moves by the
//              minute, the ratio in one process is what compares (`ratio_*_vs_baseline`).
//              Both write to the same repository, on their own refs.

const ASKS = 1_000;

// The lane's files forked as a Lane's state is (core/cow-map.ts), not copied whole: a Map of
// 1,000 entries copied on every write was ~87 µs of the event loop's ~1.4 ms a write (6%,
// "Where a durable single write's CPU goes"), a cost of this bench that the daemon does not pay.
type Lane = CowMap<string, string>;

const laneCodec: EntityCodec<Lane> = {
  empty: () => new CowMap(),
  clone: (s) => s.fork(),
  parse: (op) => ({ ok: true, op }),
  apply(draft, op: OpRecord) {
    const path = String(op.args.path);
    draft.set(path, String(op.args.value));
    return [path];
  },
  file: (s, path) => s.get(path) ?? null,
};

const askIds = Array.from(
  { length: ASKS },
  (_, i) => `ask-${createHash('sha1').update(`ask ${i}`).digest('hex').slice(0, 10)}`,
);
const askPath = (id: string) => `asks/${id.slice(4, 6)}/${id}.json`;
const askBody = (id: string, n: number) =>
  JSON.stringify({
    id,
    kind: 'work',
    title: `Task ${id}`,
    body: 'Do the thing described in the lane, then report back with a changeset.',
    priority: 2,
    state: n === 0 ? 'open' : 'claimed',
    claim: n === 0 ? null : { holder: 'agent@example.com[claude]', lease_expires: n },
    depends_on: [],
  });

function sh(cwd: string, args: string[], input?: string): string {
  return execFileSync('git', args, {
    cwd,
    input,
    encoding: 'utf8',
    stdio: ['pipe', 'pipe', 'pipe'],
  }).trim();
}

function makeRepo(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'zz-bench-store-'));
  sh(dir, ['init', '-q', '-b', 'main']);
  sh(dir, ['config', 'user.email', 'bench@example.com']);
  sh(dir, ['config', 'user.name', 'Bench']);
  // No auto-gc in the middle of a measurement.
  sh(dir, ['config', 'gc.auto', '0']);
  sh(dir, ['commit', '-q', '--allow-empty', '-m', 'initial']);
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const round1 = (x: number) => Math.round(x * 10) / 10;
const round2 = (x: number) => Math.round(x * 100) / 100;
const round3 = (x: number) => Math.round(x * 1000) / 1000;

interface Variant {
  name: string;
  rounds: number;
  writesPerRound: number;
  /** Runs `n` writes; resolves when all are acknowledged (durable per the variant). */
  run(n: number): Promise<void>;
  close(): Promise<void> | void;
}

/** CPU time (ns) of this process's threads so far: the event loop's, and all the others'. */
function threadCpuNs(): { loop: number; others: number } | null {
  let loop = 0;
  let others = 0;
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      let ns: number;
      try {
        ns = Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ', 1)[0]);
      } catch {
        continue; // a thread that ended meanwhile
      }
      if (tid === String(process.pid)) loop += ns;
      else others += ns;
    }
  } catch {
    return null; // no /proc (not Linux)
  }
  return { loop, others };
}

interface Measured {
  ops_per_s: { median: number; min: number; max: number };
  /** Per op, medians of the rounds: the process (all threads), its loop, its other threads. */
  cpu_ms_per_op: { process: number; loop: number | null; other_threads: number | null };
}

/**
 * Measures variants round by round in turn (A B A B …), so that a shared machine's load,
 * which moves by the minute, weighs on each alike: a ratio between them is then fairer than
 * between runs a minute apart.
 */
async function measureSideBySide(vs: Variant[]): Promise<Measured[]> {
  // Flush what the set-up wrote (1,000 asks): otherwise the first fsyncs pay for it.
  execFileSync('sync');
  for (const v of vs) await v.run(Math.min(20, v.writesPerRound)); // warm-up: JIT, caches, dirs
  const rates: number[][] = vs.map(() => []);
  const cpu: number[][] = vs.map(() => []);
  const loop: number[][] = vs.map(() => []);
  const others: number[][] = vs.map(() => []);
  for (let r = 0; r < vs[0]!.rounds; r++) {
    for (let i = 0; i < vs.length; i++) {
      const v = vs[(i + r) % vs.length]!; // who goes first alternates too
      const k = vs.indexOf(v);
      const th0 = threadCpuNs();
      const c0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      await v.run(v.writesPerRound);
      const s = Number(process.hrtime.bigint() - t0) / 1e9;
      const c = process.cpuUsage(c0);
      const th1 = threadCpuNs();
      const n = v.writesPerRound;
      rates[k]!.push(n / s);
      cpu[k]!.push((c.user + c.system) / 1000 / n);
      if (th0 && th1) {
        loop[k]!.push((th1.loop - th0.loop) / 1e6 / n);
        others[k]!.push((th1.others - th0.others) / 1e6 / n);
      }
    }
  }
  const ms = (xs: number[]) => (xs.length ? round3(median(xs)) : null);
  return rates.map((rs, k) => ({
    ops_per_s: {
      median: round1(median(rs)),
      min: round1(Math.min(...rs)),
      max: round1(Math.max(...rs)),
    },
    cpu_ms_per_op: {
      process: round3(median(cpu[k]!)),
      loop: ms(loop[k]!),
      other_threads: ms(others[k]!),
    },
  }));
}

// ---- zz ---------------------------------------------------------------------------------

/** The store API of another checkout (its sources, run through the same tsx loader). */
async function storeOf(
  root: string,
): Promise<{ openRepository: typeof openRepo; GitStore: typeof Store; Entity: typeof Ent }> {
  const git = await importFromCheckout<{ openRepository: typeof openRepo }>(
    root,
    'src/git/index.ts',
  );
  const store = await importFromCheckout<{ GitStore: typeof Store; Entity: typeof Ent }>(
    root,
    'src/store/index.ts',
  );
  return { openRepository: git.openRepository, GitStore: store.GitStore, Entity: store.Entity };
}

async function zzVariant(
  dir: string,
  name: string,
  opts: {
    fsync: boolean;
    concurrency: number;
    rounds: number;
    writes: number;
    /** false: objects not fsynced (the behaviour before issue 17's durability item). */
    fsyncObjects?: boolean;
    /** Loose objects, one file each, as before small packs (the "before" of issue 17). */
    loose?: boolean;
    /** Another checkout of zz whose store is measured instead (ZZ_BENCH_STORE_BASELINE). */
    root?: string;
  },
): Promise<Variant> {
  const { openRepository, GitStore, Entity } = opts.root
    ? await storeOf(opts.root)
    : { openRepository: openRepo, GitStore: Store, Entity: Ent };
  const repo = await openRepository(dir, {
    fsync: opts.fsync,
    ...(opts.fsyncObjects === undefined ? {} : { fsyncObjects: opts.fsyncObjects }),
  });
  if (opts.loose) repo.objects.smallPacks = false;
  // Without fsync a repository writes loose objects (ObjectWriter.smallPacks); the variants
  // without it keep zz-seq's path, so that they differ from it in the syncs alone.
  else if (!opts.fsync) repo.objects.smallPacks = true;
  const store = new GitStore(repo);
  const ref = `refs/zz/lanes/${name}`;
  // The lane with 1,000 asks, created in one commit.
  const changes = new Map<string, string>([
    ['lane.json', JSON.stringify({ id: name, title: 'Bench lane' })],
  ]);
  for (const id of askIds) changes.set(askPath(id), askBody(id, 0));
  await store.commit(ref, { parent: null, changes, ops: [], summary: 'create lane' });
  const entity = new Entity<Lane>(store, ref, laneCodec);
  await entity.read();
  let n = 0;
  const write = async () => {
    const id = askIds[Math.floor(Math.random() * ASKS)]!;
    const path = askPath(id);
    const value = askBody(id, ++n);
    await entity.mutate({
      actor: 'agent@example.com[claude]',
      decide: () => ({ op: 'ask_claim', args: { path, value }, summary: `claim ${id}` }),
      result: () => null,
    });
  };
  return {
    name,
    rounds: opts.rounds,
    writesPerRound: opts.writes,
    async run(count) {
      let left = count;
      const worker = async () => {
        while (left > 0) {
          left--;
          await write();
        }
      };
      await Promise.all(Array.from({ length: opts.concurrency }, worker));
    },
    async close() {
      store.close();
      await repo.objects.close();
    },
  };
}

// ---- native -----------------------------------------------------------------------------

/** A long-lived git process answering one line per request line. */
class LineProc {
  private readonly p: ChildProcessWithoutNullStreams;
  private buf = '';
  private waiters: Array<{ ok: (line: string) => void; fail: (e: Error) => void }> = [];
  private err = '';

  constructor(cwd: string, args: string[]) {
    this.p = spawn('git', args, { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    this.p.stdout.setEncoding('utf8').on('data', (c: string) => {
      this.buf += c;
      let nl: number;
      while ((nl = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, nl);
        this.buf = this.buf.slice(nl + 1);
        this.waiters.shift()?.ok(line);
      }
    });
    this.p.stderr.setEncoding('utf8').on('data', (c: string) => (this.err += c));
    this.p.on('exit', (code) => {
      for (const w of this.waiters.splice(0)) w.fail(new Error(`git exited ${code}: ${this.err}`));
    });
  }

  /** Writes `text`; resolves with the next `lines` output lines. */
  ask(text: string, lines = 1): Promise<string[]> {
    const out: Array<Promise<string>> = [];
    for (let i = 0; i < lines; i++) {
      out.push(new Promise((ok, fail) => this.waiters.push({ ok, fail })));
    }
    this.p.stdin.write(text);
    return Promise.all(out);
  }

  close(): void {
    this.p.stdin.end();
  }
}

interface NativeTree {
  root: Map<string, string>; // name -> "mode type oid"
  asks: Map<string, string>;
  fans: Map<string, Map<string, string>>;
}

function treeText(entries: Map<string, string>): string {
  return [...entries].map(([name, e]) => `${e}\t${name}\n`).join('');
}

async function nativeVariant(
  dir: string,
  name: string,
  kind: 'persistent' | 'spawn',
  rounds: number,
  writes: number,
): Promise<Variant> {
  const ref = `refs/zz/lanes/${name}`;
  const tmp = mkdtempSync(join(tmpdir(), 'zz-bench-native-'));
  const blobProc =
    kind === 'persistent' ? new LineProc(dir, ['hash-object', '-w', '--stdin-paths']) : null;
  const commitProc =
    kind === 'persistent'
      ? new LineProc(dir, ['hash-object', '-w', '-t', 'commit', '--stdin-paths'])
      : null;
  const treeProc = kind === 'persistent' ? new LineProc(dir, ['mktree', '--batch']) : null;
  const refProc =
    kind === 'persistent'
      ? new LineProc(dir, ['-c', 'core.fsync=reference', 'update-ref', '--stdin'])
      : null;
  let fileNo = 0;

  const spawnGit = (args: string[], input?: string) =>
    new Promise<string>((resolve, reject) => {
      const p = spawn('git', args, { cwd: dir, stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      p.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
      p.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
      p.on('close', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(err))));
      p.stdin.on('error', () => {}); // commit-tree and update-ref never read stdin
      if (input === undefined) p.stdin.end();
      else p.stdin.end(input);
    });

  const blob = async (content: string) => {
    if (blobProc) {
      const f = join(tmp, `b${fileNo++}`);
      writeFileSync(f, content);
      return (await blobProc.ask(f + '\n'))[0]!;
    }
    return spawnGit(['hash-object', '-w', '--stdin'], content);
  };
  const mktree = async (entries: Map<string, string>) =>
    treeProc
      ? (await treeProc.ask(treeText(entries) + '\n'))[0]!
      : spawnGit(['mktree'], treeText(entries));
  const commit = async (tree: string, parent: string, message: string) => {
    if (commitProc) {
      const now = Math.floor(Date.now() / 1000);
      const body = `tree ${tree}\nparent ${parent}\nauthor Bench <bench@example.com> ${now} +0000\ncommitter Bench <bench@example.com> ${now} +0000\n\n${message}\n`;
      const f = join(tmp, `c${fileNo++}`);
      writeFileSync(f, body);
      return (await commitProc.ask(f + '\n'))[0]!;
    }
    return spawnGit(['commit-tree', tree, '-p', parent, '-m', message]);
  };
  const moveRef = async (next: string, prev: string) => {
    if (refProc) {
      const r = await refProc.ask(`start\nupdate ${ref} ${next} ${prev}\ncommit\n`, 2);
      if (r[1] !== 'commit: ok') throw new Error(`update-ref: ${r.join(' ')}`);
      return;
    }
    await spawnGit(['-c', 'core.fsync=reference', 'update-ref', ref, next, prev]);
  };

  // The same lane, built natively (one commit), and kept in memory as trees.
  const t: NativeTree = { root: new Map(), asks: new Map(), fans: new Map() };
  t.root.set(
    'lane.json',
    `100644 blob ${await blob(JSON.stringify({ id: name, title: 'Bench lane' }))}`,
  );
  for (const id of askIds) {
    const fan = id.slice(4, 6);
    let f = t.fans.get(fan);
    if (!f) t.fans.set(fan, (f = new Map()));
    f.set(`${id}.json`, `100644 blob ${await blob(askBody(id, 0))}`);
  }
  for (const [fan, f] of t.fans) t.asks.set(fan, `040000 tree ${await mktree(f)}`);
  t.root.set('asks', `040000 tree ${await mktree(t.asks)}`);
  let head = await commit(await mktree(t.root), sh(dir, ['rev-parse', 'HEAD']), 'create lane');
  sh(dir, ['update-ref', ref, head]);

  let n = 0;
  const write = async () => {
    const id = askIds[Math.floor(Math.random() * ASKS)]!;
    const fan = id.slice(4, 6);
    const f = t.fans.get(fan)!;
    f.set(`${id}.json`, `100644 blob ${await blob(askBody(id, ++n))}`);
    t.asks.set(fan, `040000 tree ${await mktree(f)}`);
    t.root.set('asks', `040000 tree ${await mktree(t.asks)}`);
    const next = await commit(await mktree(t.root), head, `claim ${id}`);
    await moveRef(next, head);
    head = next;
  };
  return {
    name,
    rounds,
    writesPerRound: writes,
    async run(count) {
      for (let i = 0; i < count; i++) await write();
    },
    close() {
      for (const p of [blobProc, commitProc, treeProc, refProc]) p?.close();
      rmSync(tmp, { recursive: true, force: true });
    },
  };
}

export async function benchStore(): Promise<Record<string, unknown>> {
  const { dir, cleanup } = makeRepo();
  const results: Record<string, unknown> = {
    lane: `${ASKS} asks, fan-out asks/<2 hex>/<id>.json, one ask changed per write`,
    git: sh(dir, ['version']),
    load_average_at_start: loadavg().map((x) => Math.round(x * 100) / 100),
  };
  const baseline = process.env.ZZ_BENCH_STORE_BASELINE;
  if (baseline)
    results.baseline = `${baseline} at ${sh(baseline, ['rev-parse', '--short', 'HEAD'])}`;
  try {
    const variants: Array<[string, () => Promise<Variant>]> = [
      [
        'zz-seq',
        () => zzVariant(dir, 'zz-seq', { fsync: true, concurrency: 1, rounds: 5, writes: 300 }),
      ],
      [
        'zz-seq-loose',
        () =>
          zzVariant(dir, 'zz-seq-loose', {
            fsync: true,
            loose: true,
            concurrency: 1,
            rounds: 5,
            writes: 300,
          }),
      ],
      [
        'zz-seq-nofsync',
        () =>
          zzVariant(dir, 'zz-seq-nofsync', {
            fsync: false,
            concurrency: 1,
            rounds: 5,
            writes: 300,
          }),
      ],
      [
        'zz-seq-objects-unsynced',
        () =>
          zzVariant(dir, 'zz-seq-objects-unsynced', {
            fsync: true,
            fsyncObjects: false,
            concurrency: 1,
            rounds: 5,
            writes: 300,
          }),
      ],
      [
        'zz-32',
        () => zzVariant(dir, 'zz-32', { fsync: true, concurrency: 32, rounds: 5, writes: 1_000 }),
      ],
      [
        'zz-32-loose',
        () =>
          zzVariant(dir, 'zz-32-loose', {
            fsync: true,
            loose: true,
            concurrency: 32,
            rounds: 5,
            writes: 1_000,
          }),
      ],
      [
        'zz-32-objects-unsynced',
        () =>
          zzVariant(dir, 'zz-32-objects-unsynced', {
            fsync: true,
            fsyncObjects: false,
            concurrency: 32,
            rounds: 5,
            writes: 1_000,
          }),
      ],
      ...(baseline
        ? ([
            [
              'zz-seq-baseline',
              () =>
                zzVariant(dir, 'zz-seq-baseline', {
                  fsync: true,
                  concurrency: 1,
                  rounds: 5,
                  writes: 300,
                  root: baseline,
                }),
            ],
            [
              'zz-32-baseline',
              () =>
                zzVariant(dir, 'zz-32-baseline', {
                  fsync: true,
                  concurrency: 32,
                  rounds: 5,
                  writes: 1_000,
                  root: baseline,
                }),
            ],
          ] as Array<[string, () => Promise<Variant>]>)
        : []),
      ['native-persistent', () => nativeVariant(dir, 'native-persistent', 'persistent', 5, 150)],
      ['native-spawn', () => nativeVariant(dir, 'native-spawn', 'spawn', 3, 30)],
    ];
    // ZZ_BENCH_STORE_ONLY=zz-seq,zz-32 runs a subset (e.g. under --cpu-prof).
    const only = process.env.ZZ_BENCH_STORE_ONLY?.split(',');
    // Small packs beside loose objects (the write path before them), the same path without
    // fsync and the baseline's store, round by round.
    const groups = new Map([
      ['zz-seq', ['zz-seq-loose', 'zz-seq-nofsync', 'zz-seq-baseline']],
      ['zz-32', ['zz-32-loose', 'zz-32-baseline']],
    ]);
    const makers = new Map(variants);
    const wanted = (n: string) => makers.has(n) && (!only || only.includes(n));
    const leadOf = new Map(
      [...groups].flatMap(([lead, partners]) => partners.map((p) => [p, lead] as const)),
    );
    for (const [name, make] of variants) {
      if (only && !only.includes(name)) continue;
      const lead = leadOf.get(name);
      if (lead && wanted(lead)) continue; // measured beside its lead
      const makeAll = [make, ...(groups.get(name) ?? []).filter(wanted).map((p) => makers.get(p)!)];
      const vs: Variant[] = [];
      try {
        for (const m of makeAll) vs.push(await m());
        process.stderr.write(`bench store: ${vs.map((v) => v.name).join(' beside ')}…\n`);
        const measured = await measureSideBySide(vs);
        vs.forEach((v, i) => {
          results[v.name] = {
            ...measured[i]!,
            writes_per_round: v.writesPerRound,
            rounds: v.rounds,
            ...(vs.length > 1
              ? { measured_beside: vs.filter((o) => o !== v).map((o) => o.name) }
              : {}),
          };
        });
      } finally {
        for (const v of vs) await v.close();
      }
    }
    const ops = (k: string) =>
      (results[k] as { ops_per_s: { median: number } } | undefined)?.ops_per_s.median ?? NaN;
    results.ratio_zz_seq_vs_native_persistent = round1(ops('zz-seq') / ops('native-persistent'));
    results.ratio_zz_seq_vs_native_spawn = round1(ops('zz-seq') / ops('native-spawn'));
    results.ratio_zz_32_vs_zz_seq = round1(ops('zz-32') / ops('zz-seq'));
    results.ratio_small_packs_vs_loose_seq = round1(ops('zz-seq') / ops('zz-seq-loose'));
    results.ratio_small_packs_vs_loose_32 = round1(ops('zz-32') / ops('zz-32-loose'));
    results.ratio_durable_objects_seq = round1(ops('zz-seq') / ops('zz-seq-objects-unsynced'));
    results.ratio_durable_objects_32 = round1(ops('zz-32') / ops('zz-32-objects-unsynced'));
    // CPU per op (the process's, every thread), the figure that moves least with load.
    const cpu = (k: string) =>
      (results[k] as { cpu_ms_per_op: { process: number } } | undefined)?.cpu_ms_per_op.process ??
      NaN;
    results.cpu_ratio_zz_seq_vs_nofsync = round2(cpu('zz-seq') / cpu('zz-seq-nofsync'));
    if (baseline) {
      results.ratio_zz_seq_vs_baseline = round2(ops('zz-seq') / ops('zz-seq-baseline'));
      results.ratio_zz_32_vs_baseline = round2(ops('zz-32') / ops('zz-32-baseline'));
      results.cpu_ratio_zz_seq_vs_baseline = round2(cpu('zz-seq') / cpu('zz-seq-baseline'));
      results.cpu_ratio_zz_32_vs_baseline = round2(cpu('zz-32') / cpu('zz-32-baseline'));
    }
    results.goal_zz_seq_500_ops_s = ops('zz-seq') >= 500 ? 'met' : 'missed';
    results.load_average_at_end = loadavg().map((x) => Math.round(x * 100) / 100);
    // The history is sound after all of it.
    sh(dir, ['fsck', '--connectivity-only', '--no-dangling']);
  } finally {
    cleanup();
  }
  return results;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  benchStore().then(
    (r) => console.log(JSON.stringify(r, null, 2)),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
}
