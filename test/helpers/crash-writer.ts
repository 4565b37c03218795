import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs, { writeSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openRepository } from '../../src/git/index.js';
import { Entity, GitStore } from '../../src/store/index.js';
import { bundled } from './bundled.js';
import { docCodec, type DocState } from './doc-codec.js';

// Test-only writer process for the crash and interop tests:
//
//   node --import tsx test/helpers/crash-writer.ts <repo> <ref> <prefix> [options]
//
// spawnWriter runs it bundled with the sources (bundled.ts): the crash test starts 59 writers,
// and under plain node each starts in about a third of the CPU tsx takes on Node 20.
//
// Writes keys <prefix>-0, <prefix>-1, … through Entity<DocState> on a GitStore, with
// `--concurrency` mutations in flight (so group commits form), and prints one line per
// ACKNOWLEDGED write, after mutate() resolved:  `ack <key> <revision>`. stdout is written with
// writeSync so that a line printed is a line the parent sees, even if we are SIGKILLed next.
//
// Options:
//   --concurrency N   mutations in flight (default 8)
//   --count N         stop after N acknowledged writes and print `done <ms>`, the time the writes
//                     took after `ready` (default: run until killed)
//   --stall-at P      fault injection: after --stall-after acks, hang forever at point P, print
//                     `stalled P` and wait to be killed. P = `sync` (inside the ref lock, at its first
//                     sync: the new value written, nothing synced) or `rename` (lock written and synced, before it is
//                     renamed over the ref).
//   --stall-after N   (default 3)

export function askPath(key: string): string {
  const fan = createHash('sha1').update(key).digest('hex').slice(0, 2);
  return `asks/${fan}/${key}.json`;
}

export function valueOf(key: string): string {
  return JSON.stringify({ key, v: `value of ${key}` });
}

const SCRIPT = fileURLToPath(import.meta.url);
const PROJECT = resolve(dirname(SCRIPT), '..', '..');

export interface WriterProcess {
  child: ChildProcess;
  pid: number;
  /** key → revision of every acknowledged write, in the order printed. */
  acks: Map<string, string>;
  /** Resolves once the writer has opened the repository and read the ref. */
  ready: Promise<void>;
  /** Resolves when the process is gone. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves when the writer printed `stalled <point>`. */
  stalled: Promise<void>;
  /** Milliseconds from `ready` to `done` (the writes alone), once the writer finished. */
  writeMs: number | null;
  stderr(): string;
}

/** Spawns the writer (parent side). Only complete lines count: a torn last line is dropped. */
export function spawnWriter(
  repo: string,
  ref: string,
  prefix: string,
  args: string[] = [],
): WriterProcess {
  const child = spawn(process.execPath, [bundled(SCRIPT), repo, ref, prefix, ...args], {
    cwd: PROJECT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const acks = new Map<string, string>();
  let out = '';
  let err = '';
  let onReady!: () => void;
  let onStall!: () => void;
  const ready = new Promise<void>((r) => (onReady = r));
  const stalled = new Promise<void>((r) => (onStall = r));
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    out += chunk;
    let nl: number;
    while ((nl = out.indexOf('\n')) >= 0) {
      const line = out.slice(0, nl);
      out = out.slice(nl + 1);
      const [what, a, b] = line.split(' ');
      if (what === 'ready') onReady();
      else if (what === 'done') proc.writeMs = Number(a);
      else if (what === 'stalled') onStall();
      else if (what === 'ack' && a && b) acks.set(a, b);
    }
  });
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (c: string) => (err += c));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.on('close', (code, signal) => r({ code, signal })),
  );
  const failEarly = exited.then(({ code, signal }) => {
    throw new Error(`writer ${prefix} exited (${code ?? signal}) before it was ready: ${err}`);
  });
  const watch = (p: Promise<void>) => {
    const raced = Promise.race([p, failEarly]);
    raced.catch(() => {}); // reported to whoever awaits it; nobody else must hear of it
    return raced;
  };
  const proc: WriterProcess = {
    child,
    pid: child.pid!,
    acks,
    ready: watch(ready),
    stalled: watch(stalled),
    writeMs: null,
    exited,
    stderr: () => err,
  };
  return proc;
}

function say(line: string): void {
  writeSync(1, line + '\n');
}

function option(args: string[], name: string, dflt: number): number {
  const i = args.indexOf(name);
  if (i < 0) return dflt;
  const n = Number(args[i + 1]);
  if (!Number.isFinite(n)) throw new Error(`${name} needs a number`);
  return n;
}

function installStall(point: string, armed: () => boolean): void {
  const stall = () => {
    say(`stalled ${point}`);
    // Hold this thread (and with it everything the process holds) until we are killed.
    for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  };
  // RefStore looks these up on the fs module at call time. `sync` stalls at the first sync in
  // the lock: the lock's own fdatasync (the one file synced with two names, token and lock),
  // or an object directory's fsync (the objects' data syncs start before the lock is taken).
  if (point === 'sync') {
    const origFsync = fs.fsync;
    fs.fsync = ((fd: number, cb: (e: NodeJS.ErrnoException | null) => void) =>
      armed() ? stall() : origFsync(fd, cb)) as typeof fs.fsync;
    const origDatasync = fs.fdatasync;
    fs.fdatasync = ((fd: number, cb: (e: NodeJS.ErrnoException | null) => void) =>
      armed() && fs.fstatSync(fd).nlink === 2
        ? stall()
        : origDatasync(fd, cb)) as typeof fs.fdatasync;
  } else if (point === 'rename') {
    const orig = fs.renameSync;
    fs.renameSync = (from, to) =>
      armed() && String(from).endsWith('.lock') ? stall() : orig(from, to);
  } else {
    throw new Error(`unknown stall point ${point}`);
  }
}

async function main(argv: string[]): Promise<void> {
  const [repoDir, ref, prefix] = argv;
  if (!repoDir || !ref || !prefix) {
    throw new Error('usage: crash-writer <repo> <ref> <prefix> [--concurrency N] [--count N]');
  }
  const concurrency = option(argv, '--concurrency', 8);
  const count = option(argv, '--count', Infinity);
  const stallAfter = option(argv, '--stall-after', 3);
  const stallIdx = argv.indexOf('--stall-at');
  let acked = 0;
  if (stallIdx >= 0) installStall(argv[stallIdx + 1] ?? '', () => acked >= stallAfter);

  const repo = await openRepository(repoDir);
  const store = new GitStore(repo);
  const entity = new Entity<DocState>(store, ref, docCodec);
  const snap = await entity.read();
  say(`ready ${snap.revision ?? 'none'}`);
  const t0 = Date.now();

  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const key = `${prefix}-${next++}`;
      const path = askPath(key);
      const value = valueOf(key);
      const r = await entity.mutate({
        actor: 'crash@example.com',
        request: { tool: 'put', args: { path, value } },
        decide: () => ({ op: 'put', args: { path, value }, summary: `put ${key}` }),
        result: (s) => s.get(path),
      });
      if (r.result !== value) throw new Error(`write of ${key} acknowledged without its value`);
      acked++;
      say(`ack ${key} ${r.revision}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  say(`done ${Date.now() - t0}`);
  store.close();
}

if (process.argv[1] && SCRIPT === resolve(process.argv[1])) {
  main(process.argv.slice(2)).catch((e: unknown) => {
    writeSync(2, `crash-writer: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
}
