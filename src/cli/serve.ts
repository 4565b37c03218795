import { knownError, ZzError } from '../errors.js';
import { DEFAULT_HOST, DEFAULT_PORT } from '../local/paths.js';
import type { CliIO } from './io.js';
import { neutralize } from './terminal.js';

// `zz serve`: the daemon in the foreground. Both the command table (commands.ts) and the fast
// path (fast-path.ts) run it through runServe(). The fast path takes a plain command line
// (parseServeArgs) without loading yargs and the CLI's command table: a daemon runs for hours
// and keeps whatever its start loaded (~10 MiB of RSS for yargs, its locales and the tool
// commands' option tables, measured with bench/rss.ts). Anything else — help, an unknown or
// malformed flag — is left to the command table, which explains it in the CLI's words.

export interface ServeArgs {
  port: number;
  host: string;
  repos: string[];
}

/**
 * The arguments after `serve` when they are only --port N, --host H and --repo P… (yargs'
 * forms: `--flag value` or `--flag=value`; --repo takes every value up to the next flag, and
 * may repeat), else null.
 */
export function parseServeArgs(rest: readonly string[]): ServeArgs | null {
  const out: ServeArgs = { port: DEFAULT_PORT, host: DEFAULT_HOST, repos: [] };
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

/** Runs the daemon until io.stopSignal; resolves with the exit code. */
export async function runServe(io: CliIO, args: ServeArgs): Promise<number> {
  // yargs reads `--port abc` as NaN: said plainly, not as node's RangeError from listen().
  if (!Number.isInteger(args.port) || args.port < 0 || args.port > 65_535) {
    throw new ZzError('invalid_argument', '--port must be a whole number from 0 to 65535');
  }
  const { startDaemon } = await import('../daemon/index.js');
  const d = await startDaemon({
    cwd: io.cwd,
    port: args.port,
    host: args.host,
    repos: args.repos,
    log: (line: string) => io.stderr(line + '\n'),
    signingEnv: io.env,
  });
  io.stdout(`zz serving ${[...d.repos.keys()].join(', ')} at ${d.url}\n`);
  await (io.stopSignal ?? new Promise<void>(() => {}));
  io.stderr('zz: stopping (finishing in-flight writes)\n');
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
    const err = knownError(e);
    if (err) {
      io.stderr(`zz: ${neutralize(err.message)}\n`);
      return err.exitCode;
    }
    io.stderr(
      `zz: internal error: ${neutralize((e as Error)?.stack ?? String(e), { multiline: true })}\n`,
    );
    return 1;
  }
}
