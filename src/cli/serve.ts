import { lookup } from 'node:dns/promises';
import { setFlagsFromString } from 'node:v8';
import { knownError, ZzError } from '../errors.js';
import { isLoopback } from '../http/host-check.js';
import { DEFAULT_HOST, reposFile } from '../local/paths.js';
import type { CliIO } from './io.js';
import { lineWriter } from './terminal.js';

// `zz serve`: the daemon in the foreground. Both the command table (commands.ts) and the fast
// path (fast-path.ts) run it through runServe(). The fast path takes a plain command line
// (parseServeArgs) without loading yargs and the CLI's command table: a daemon runs for hours
// and keeps whatever its start loaded (~10 MiB of RSS for yargs, its locales and the tool
// commands' option tables, measured with bench/rss.ts). Anything else — help, an unknown or
// malformed flag — is left to the command table, which explains it in the CLI's words.

export interface ServeArgs {
  /** Unset: DEFAULT_PORT or the next free one (daemon.ts). */
  port?: number;
  host: string;
  repos: string[];
}

/**
 * The arguments after `serve` when they are only --port N, --host H and --repo P… (yargs'
 * forms: `--flag value` or `--flag=value`; --repo takes every value up to the next flag, and
 * may repeat), else null.
 */
export function parseServeArgs(rest: readonly string[]): ServeArgs | null {
  const out: ServeArgs = { host: DEFAULT_HOST, repos: [] };
  for (let i = 0; i < rest.length; i++) {
    const tok = rest[i]!;
    if (!tok.startsWith('--')) return null;
    const eq = tok.indexOf('=');
    const name = eq < 0 ? tok.slice(2) : tok.slice(2, eq);
    const values: string[] = [];
    if (eq >= 0) values.push(tok.slice(eq + 1));
    else {
      while (i + 1 < rest.length && !rest[i + 1]!.startsWith('-')) {
        values.push(rest[++i]!);
        if (name !== 'repo') break;
      }
    }
    if (values.length === 0) return null;
    if (name === 'port') {
      if (!/^\d{1,5}$/.test(values[0]!) || Number(values[0]) > 65_535) return null;
      out.port = Number(values[0]);
    } else if (name === 'host') {
      if (values[0] === '') return null;
      out.host = values[0]!;
    } else if (name === 'repo') {
      out.repos.push(...values);
    } else return null;
  }
  return out;
}

/**
 * Keeps V8's young generation at its initial size (1 MiB semi-spaces) for the daemon's life,
 * unless the user set its size (--max-semi-space-size in NODE_OPTIONS or node's arguments).
 * Left alone, V8 doubles the semi-spaces up to 16 MiB each whenever much of a scavenge
 * survives — which the daemon's start (modules, shard heads, the Lane's fold) and every burst
 * of requests make happen — and shrinks them back only in a memory-reducing collection tens of
 * seconds after the burst, or never: ~30 MiB of RSS held for little. Measured with
 * bench/rss.ts (50 repos indexed, a Lane of 5,000 Asks read, median of 3 restarts, three runs
 * side by side): 137 MiB after the reads against 163 without, and daemon CPU per request in
 * the 64-client mixed load (bench/load.ts) within the noise (+5% mean of three alternating
 * runs at load 13-16, requests/s unchanged). Hazard: unlike --max-semi-space-size, which V8
 * reads once when the heap is made (too late here), the growth factor ("factor by which to
 * grow the new space", default 2) is read each time V8 would grow it; setting it at run time
 * is what makes this work, and a V8 upgrade that reads it once would silently undo it (the
 * RSS bench would show it).
 */
function boundYoungGeneration(): void {
  const given = `${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`;
  if (/--max[-_]semi[-_]space[-_]size/.test(given)) return;
  setFlagsFromString('--semi-space-growth-factor=1');
}

/**
 * What to warn of when the daemon listens where other machines can reach it (null on
 * loopback): its API and dashboard take bearer tokens and session cookies over plain HTTP.
 * A name is judged by the address listen() bound, the first dns.lookup gives (a host name of
 * this machine may well be 127.0.1.1).
 */
async function exposureWarning(host: string, url: string): Promise<string | null> {
  if (isLoopback(host)) return null;
  const { address } = await lookup(host).catch(() => ({ address: host }));
  if (isLoopback(address)) return null;
  return `${url} is reachable from other machines, and tokens travel to it over plain HTTP, unencrypted; to keep it on this machine, serve on loopback (leave out --host, or pass --host 127.0.0.1) and reach it from elsewhere through an SSH tunnel or a TLS proxy`;
}

/** Runs the daemon until io.stopSignal; resolves with the exit code. */
export async function runServe(io: CliIO, args: ServeArgs): Promise<number> {
  // yargs reads `--port abc` as NaN: said plainly, not as node's RangeError from listen().
  if (
    args.port !== undefined &&
    (!Number.isInteger(args.port) || args.port < 0 || args.port > 65_535)
  ) {
    throw new ZzError('invalid_argument', '--port must be a whole number from 0 to 65535');
  }
  boundYoungGeneration();
  // Every line zz serve writes goes through these, neutralised whole: lines carry what other
  // machines wrote (quarantine reasons name their actors, a stack quotes a request).
  const log = lineWriter(io.stderr);
  const say = lineWriter(io.stdout);
  const { startDaemon } = await import('../daemon/index.js');
  const d = await startDaemon({
    cwd: io.cwd,
    ...(args.port !== undefined ? { port: args.port } : {}),
    host: args.host,
    repos: args.repos,
    // The clones this machine lists, in the config home of the environment zz was given.
    reposFile: reposFile(io.env),
    log,
    signingEnv: io.env,
  });
  const exposed = await exposureWarning(args.host, d.url);
  if (exposed) log(`zz: warning: ${exposed}`);
  say(`zz serving ${[...d.repos.keys()].join(', ')} at ${d.url}`);
  // Served before `zz init`, every tool call answers 412 "not initialised" to the agents
  // pointed at it, while the terminal that started it said nothing was amiss.
  for (const [key, repo] of d.repos) {
    if (!(await repo.config.read()).state.config)
      log(
        `zz: warning: ${key} is not initialised for zz, so its tools refuse every call; run \`zz init\` in it (this daemon serves it from then on)`,
      );
  }
  await (io.stopSignal ?? new Promise<void>(() => {}));
  log('zz: stopping (finishing in-flight writes)');
  await d.close();
  return 0;
}

/**
 * `zz serve` from the fast path: null when the command line is not a plain one (the command
 * table takes it). A failure is reported as the command table's error boundary does (run.ts).
 */
export async function tryServe(rest: readonly string[], io: CliIO): Promise<number | null> {
  const args = parseServeArgs(rest);
  if (!args) return null;
  try {
    return await runServe(io, args);
  } catch (e) {
    const log = lineWriter(io.stderr);
    const err = knownError(e);
    if (err) {
      log(`zz: ${err.message}`);
      return err.exitCode;
    }
    log(`zz: internal error: ${(e as Error)?.stack ?? String(e)}`, { multiline: true });
    return 1;
  }
}
