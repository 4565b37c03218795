import { readFileSync } from 'node:fs';
import { get, request } from 'node:http';
import { ERROR_CODES, type ErrorCode } from '../errors.js';
import { findCheckoutSync } from '../git/discover.js';
import { sameProcess } from '../local/file-lock.js';
import { credentialsFile, daemonFile } from '../local/paths.js';
import { newIdempotencyKey } from '../schema/new-key.js';
import {
  NO_LADDER_HINT,
  NOT_INITIALISED_HINT,
  mayLackInit,
  mayLackLadder,
  print,
} from './format.js';
import { envToken, isTokenText } from './env-token.js';
import { neutralize } from './terminal.js';
import { WHOLE_FILE_PAGE, wholeFileWanted, type CliIO } from './io.js';
import { readToolManifest, type ManifestTool } from './tool-manifest.js';

// `zz serve` without yargs (serve.ts). And `zz lane list` through a running daemon without
// loading zod, yargs or the registry: the tool commands' flags come from
// dist/cli/tool-manifest.json (written by the build). A command line whose flags parse here but
// that the daemon cannot take — no daemon, no token, a refused connection — runs as the command
// table's handler would (runParsed), still without yargs. Anything unusual in the command line
// — help, an unknown flag, a `--…-file` flag, a missing required flag — returns null and the full
// command table handles it, so this path never decides an error on its own except the daemon's
// own answer and those of the call the handler makes.
// It asks git/ for the checkout directly (findCheckoutSync, one spawn, remembered for the full
// path should it run) rather than through core: loading core here would cost more than the call
// it saves.
// Hazard: handing a write to the full path sends it a second time. That is done only when the
// first attempt provably never reached the daemon (its connection was refused), or when the
// second cannot act twice: every write that takes an idempotency_key is given one before the
// first attempt, and the full path is handed the very same arguments, key included. A write
// without a key (token_revoke) whose answer was lost is not sent again: the user is told it
// may have been applied. (Before, `zz ask post` whose answer was cut made two Asks.)
// Hazard: the token goes to daemon.json's URL only once the file is known to name a live
// daemon (daemonAt): after a SIGKILL the file stays behind, its pid may be reused and its port
// taken by any server, which would then be handed the bearer token. daemon-file.ts says how.

/**
 * A tool command's flags (`rest`: what follows `zz <group> <sub>`) as the command table would
 * parse them, or null to leave them to it. Hazard: it must never read a command line otherwise
 * than yargs does — test/cli/fast-path-parity.test.ts checks that over every tool.
 */
export function parseToolFlags(tool: ManifestTool, rest: readonly string[]): Parsed | null {
  const args: Record<string, unknown> = {};
  let base: Record<string, unknown> = {};
  let json = false;
  // A flag given twice, other than an array flag, is the full command table's to refuse (yargs
  // makes it an array: `title: must be a string`). Taking the last one here made
  // `--title a --title b` a Lane titled "b", and `--ask-id X --ask-id Y` cancel only Y.
  const seen = new Set<string>();
  for (let i = 0; i < rest.length; i++) {
    const tok = rest[i]!;
    if (!tok.startsWith('--') || tok === '--') return null;
    const eq = tok.indexOf('=');
    const name = eq < 0 ? tok.slice(2) : tok.slice(2, eq);
    const inline = eq < 0 ? undefined : tok.slice(eq + 1);
    const next = (): string | undefined => inline ?? rest[++i];
    const o = tool.options.find((x) => x.flag === name || x.key === name);
    const key = o?.key ?? name;
    if (o?.kind !== 'array') {
      if (seen.has(key)) return null;
      seen.add(key);
    }
    if (name === 'json' && inline === undefined) {
      json = true;
      continue;
    }
    if (name === 'args') {
      const v = next();
      try {
        const parsed = JSON.parse(v ?? '') as unknown;
        if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return null;
        base = parsed as Record<string, unknown>;
      } catch {
        return null;
      }
      continue;
    }
    if (!o) return null;
    if (o.kind === 'boolean') {
      if (inline === undefined) args[o.key] = true;
      else if (inline === 'true' || inline === 'false') args[o.key] = inline === 'true';
      else return null;
      continue;
    }
    const v = next();
    // A spaced value starting with `-` is a flag (or a stray `-`) to yargs: its to read.
    if (v === undefined || (inline === undefined && v.startsWith('-'))) return null;
    // yargs takes the quotes off a value in quotes (`--title="x"` is x): its to read, too.
    if (/^["']/.test(v)) return null;
    if (o.choices && !o.choices.includes(v)) return null;
    if (o.kind === 'number') {
      const n = Number(v);
      if (v.trim() === '' || !Number.isFinite(n)) return null;
      if ((o.int && !Number.isInteger(n)) || n < (o.min ?? -Infinity) || n > (o.max ?? Infinity))
        return null;
      args[o.key] = n;
    } else if (o.kind === 'array') {
      // yargs reads `--command=` as no element at all, not one empty one: its to say.
      if (v === '') return null;
      args[o.key] = [...((args[o.key] as string[] | undefined) ?? []), v];
    } else if (o.kind === 'json') {
      try {
        args[o.key] = JSON.parse(v);
      } catch {
        return null;
      }
    } else {
      args[o.key] = v;
    }
  }
  const all = { ...base, ...args };
  // A missing required flag is explained by the full command table, in the CLI's words.
  if (tool.options.some((o) => o.required && all[o.key] === undefined)) return null;
  return { args: all, json };
}

/**
 * Runs a tool command whose flags parse here: straight through a running daemon, else as the
 * command table would (runParsed). Answers its exit status; null to have the full command table
 * run `argv`; or the command line it must run instead (a write whose answer was lost, sent
 * again with the same arguments and idempotency key).
 */
export async function tryFastPath(argv: string[], io: CliIO): Promise<number | string[] | null> {
  if (argv.some((a) => a === '--help' || a === '-h')) return null;
  // The daemon, started without yargs or the command table (serve.ts says why).
  if (argv[0] === 'serve') return (await import('./serve.js')).tryServe(argv.slice(1), io);
  if (argv.length < 2) return null;
  const tools = readToolManifest();
  const tool = tools?.find((t) => t.group === argv[0] && t.sub === argv[1]);
  if (!tool) return null;
  const parsed = parseToolFlags(tool, argv.slice(2));
  if (!parsed) return null;
  // A local tool (run_in_sandbox) runs in this process, never in the daemon's.
  const sent = tool.local ? null : await viaDaemon(io, tool, parsed);
  return sent ?? runParsed(io, tool, parsed);
}

/**
 * A parsed tool command, run as the command table's handler runs it (callToolCommand: through
 * a daemon if one answers, else in-process), inside the same error boundary, but without
 * loading yargs and the command table: with no daemon running, that was a third of the CPU of
 * `zz lane list`.
 */
async function runParsed(io: CliIO, tool: ManifestTool, parsed: Parsed): Promise<number> {
  const [{ callToolCommand }, { reportFailure }] = await Promise.all([
    import('./tool-calls.js'),
    import('./failure.js'),
  ]);
  try {
    await callToolCommand(io, tool, { ...parsed.args }, parsed.json);
    return 0;
  } catch (e) {
    return reportFailure(io, e);
  }
}

export type Parsed = { args: Record<string, unknown>; json: boolean };

/**
 * Sends a parsed tool command to the checkout's running daemon. Answers its exit status, the
 * command line to run instead (see tryFastPath), or null when there is no daemon to send it
 * to, or the daemon's refusal is for the full path to explain.
 */
async function viaDaemon(
  io: CliIO,
  tool: ManifestTool,
  parsed: Parsed,
): Promise<number | string[] | null> {
  const gitdir = findCheckoutSync(io.cwd)?.gitdir ?? null;
  if (gitdir === null) return null;
  const info = await daemonAt(gitdir);
  if (!info) return null;
  const server = info.origin;
  let token: string | null | undefined;
  try {
    token = envToken(io.env) ?? storedLoginToken(io.env, gitdir);
  } catch {
    return null; // ZZ_TOKEN set but empty, or not a token: the full path says so
  }
  // No token, or a stored one that is not a token: the full path explains.
  if (!token || !isTokenText(token)) return null;
  // The key goes with the first attempt: only then can a second one be recognised as a repeat.
  // `zz git show-file` into a pipe with no page asked for is the whole file: asked for in the
  // largest page here, and handed to the full path (whose callTool pages it) when it has more.
  // Skipping the fast path for every such call cost agents' piped reads ~100 ms of start-up.
  const wholeFile = wholeFileWanted(io, tool.name, parsed.json, parsed.args);
  const args =
    tool.resend === 'keyed' && parsed.args.idempotency_key === undefined
      ? { ...parsed.args, idempotency_key: newIdempotencyKey('cli') }
      : wholeFile
        ? { ...parsed.args, limit: WHOLE_FILE_PAGE }
        : parsed.args;
  const bounds = { connectMs: CONNECT_TIMEOUT_MS, answerMs: answerTimeoutMs(io.env) };
  let res: Reply;
  try {
    res = await post(
      `${server}/api/repos/${info.repo}/tools/${tool.name}`,
      token,
      JSON.stringify(args),
      bounds,
    );
  } catch (e) {
    if (!(e instanceof NotAnswered)) return null;
    // A daemon that does not answer in time is said so here, not handed to the full path:
    // that would only wait on the same daemon again.
    if (e.timedOut) return notAnswered(io, server, tool, args, e);
    // Refused before a byte was sent: the full path starts afresh (in-process, if the daemon
    // is gone). Otherwise the request may have been acted on.
    if (!e.sent) return null;
    return answerLost(io, tool, args, parsed.json, `the answer was lost (${e.message})`);
  }
  const body = res.body;
  if (res.status === 200 && body && typeof body.result === 'object' && body.result !== null) {
    const result = body.result as Record<string, unknown>;
    if (wholeFile && typeof result.next_offset === 'number') return null;
    print(io, result, parsed.json, tool.name);
    if (mayLackLadder(tool.name, parsed.args, result)) {
      const url = `${server}/api/repos/${info.repo}/tools/ladder_read`;
      const read = await post(url, token, '{"path":"_repo","limit":1}', bounds).catch(() => null);
      if (read?.status === 404) io.stderr(NO_LADDER_HINT);
    }
    if (mayLackInit(tool.name, result)) {
      const url = `${server}/api/repos/${info.repo}/tools/repo_state`;
      const state = await post(url, token, '{}', bounds).catch(() => null);
      const r = state?.body?.result as { initialised?: unknown } | undefined;
      if (r?.initialised === false) io.stderr(NOT_INITIALISED_HINT);
    }
    return 0;
  }
  // 401 from a daemon that does not know this token (e.g. restarted elsewhere): refused before
  // anything was done; let the full path explain it with its own checks.
  if (res.status === 401) return null;
  // An answer that is not the daemon's (a proxy's 502, a cut body): the request may have been
  // acted on all the same.
  if (!body?.code)
    return answerLost(
      io,
      tool,
      args,
      parsed.json,
      `HTTP ${res.status} came back without a zz answer`,
    );
  const code = (body.code in ERROR_CODES ? body.code : 'internal') as ErrorCode;
  io.stderr(`zz: ${neutralize(body.error ?? `HTTP ${res.status}`)}\n`);
  return ERROR_CODES[code].exit;
}

/**
 * The daemon daemon.json names, once known to be the process that wrote it (the same rules as
 * daemon-file.ts readDaemonInfo, without loading zod): by its process stamp, with no request;
 * where no stamp can be compared, by its answer to /healthz, as the full path checks. Null
 * when the file is missing, not a daemon's, or names a process or port no longer its: the full
 * path then works as with no daemon.
 */
async function daemonAt(gitdir: string): Promise<{ origin: string; repo: string } | null> {
  let info: { pid?: unknown; url?: unknown; repo?: unknown; process_start?: unknown };
  try {
    info = JSON.parse(readFileSync(daemonFile(gitdir), 'utf8')) as typeof info;
  } catch {
    return null;
  }
  const { pid, url, repo, process_start: stamp } = info ?? {};
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0) return null;
  if (typeof url !== 'string' || typeof repo !== 'string') return null;
  let origin: string;
  try {
    origin = new URL(url).origin;
  } catch {
    return null;
  }
  const same = sameProcess(pid, typeof stamp === 'string' ? stamp : null);
  if (same === 'other') return null;
  if (same === 'unknown' && !(await healthPid(origin, pid))) return null;
  return { origin, repo };
}

/** Whether the server at `origin` answers GET /healthz with `pid` (no token sent). */
function healthPid(origin: string, pid: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = get(`${origin}/healthz`, { timeout: CONNECT_TIMEOUT_MS }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        // A daemon's answer is a few bytes; anything long is not one.
        if ((size += c.length) > 4096) req.destroy(new Error('too long'));
        else chunks.push(c);
      });
      res.on('end', () => {
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { pid?: unknown };
          resolve(res.statusCode === 200 && body.pid === pid);
        } catch {
          resolve(false);
        }
      });
      res.on('error', () => resolve(false));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(false));
  });
}

/**
 * A call that may have reached the daemon but got no answer from it. A read, or a write that
 * cannot act twice, goes to the full path (which reports what it gets); a keyed write goes with
 * the same arguments and key, saying so; a write without a key is not sent again.
 */
function answerLost(
  io: CliIO,
  tool: ManifestTool,
  args: Record<string, unknown>,
  json: boolean,
  why: string,
): number | string[] | null {
  if (tool.resend === 'safe') return null;
  if (tool.resend === 'never') {
    io.stderr(
      `zz: ${neutralize(why)} after ${tool.name} was sent to the zz daemon: it may or may not have been applied; check before running it again\n`,
    );
    return ERROR_CODES.unavailable.exit;
  }
  io.stderr(
    `zz: ${neutralize(why)} after ${tool.name} was sent to the zz daemon; sending it again with idempotency_key ${neutralize(String(args.idempotency_key))}, which cannot apply it twice\n`,
  );
  return [tool.group, tool.sub, '--args', JSON.stringify(args), ...(json ? ['--json'] : [])];
}

/**
 * How long the CLI waits for a connection to the daemon: loopback connects in microseconds, so
 * a few seconds mean a daemon that no longer accepts (stopped, or its backlog full).
 */
const CONNECT_TIMEOUT_MS = 5_000;
/**
 * How long the CLI waits for the daemon's whole answer, from the request's start. Well above
 * the longest a tool may legitimately take: lane_events long-polls up to 60 s (wait_ms), the
 * daemon's request bound is 120 s, and a ladder_reindex or commit_changeset of a large
 * repository runs minutes. ZZ_DAEMON_TIMEOUT_MS sets another (ms).
 */
const ANSWER_TIMEOUT_MS = 600_000;

function answerTimeoutMs(env: NodeJS.ProcessEnv): number {
  const ms = Number(env.ZZ_DAEMON_TIMEOUT_MS);
  // Hazard: Node runs a timer longer than 2^31-1 ms after 1 ms, so "wait forever" written as a
  // huge number would time every call out at once; it means the longest timer there is.
  return Number.isFinite(ms) && ms > 0 ? Math.min(ms, 2 ** 31 - 1) : ANSWER_TIMEOUT_MS;
}

/**
 * The daemon accepted no connection, or gave no answer, within its bound: what that means for
 * the call, and how to repeat it safely. Exit `unavailable`.
 */
function notAnswered(
  io: CliIO,
  server: string,
  tool: ManifestTool,
  args: Record<string, unknown>,
  e: NotAnswered,
): number {
  const secs = `${Math.round((e.timedOut === 'connect' ? CONNECT_TIMEOUT_MS : answerTimeoutMs(io.env)) / 100) / 10} s`;
  // Not connected: nothing reached the daemon, whichever bound ran out first.
  const what = !e.sent
    ? `the zz daemon at ${server} did not accept a connection within ${secs}; ${tool.name} was not sent`
    : `the zz daemon at ${server} did not answer ${tool.name} within ${secs}; ` +
      (tool.resend === 'safe'
        ? 'running it again is safe'
        : tool.resend === 'keyed'
          ? `it may or may not have been applied: repeat the command with --idempotency-key ${String(args.idempotency_key)}, which cannot apply it twice`
          : 'it may or may not have been applied; check before running it again');
  io.stderr(
    `zz: ${neutralize(what)} (is the daemon stuck? stop it and run zz serve again; ZZ_DAEMON_TIMEOUT_MS sets the wait in ms)\n`,
  );
  return ERROR_CODES.unavailable.exit;
}

/**
 * The stored login token of the repository at `gitdir` (credentials.ts has the format), read
 * without zod, which this path must not load; null when absent or unreadable (the full path
 * then says why).
 */
function storedLoginToken(env: NodeJS.ProcessEnv, gitdir: string): string | null {
  try {
    const data = JSON.parse(readFileSync(credentialsFile(env), 'utf8')) as {
      repos?: Record<string, { login?: { token?: unknown } }>;
    };
    const token = data.repos?.[gitdir]?.login?.token;
    return typeof token === 'string' ? token : null;
  } catch {
    return null;
  }
}

type Reply = { status: number; body: { result?: unknown; error?: string; code?: string } | null };

/**
 * No answer came; `sent`: the connection was made, so the request may have been acted on;
 * `timedOut`: which bound ran out, if one did.
 */
class NotAnswered extends Error {
  constructor(
    readonly sent: boolean,
    cause: Error,
    readonly timedOut: 'connect' | 'answer' | null = null,
  ) {
    super((cause as NodeJS.ErrnoException).code ?? cause.message);
  }
}

// node:http rather than fetch: fetch loads undici on first use, which costs more than the call.
// Bounded twice: the connection (connectMs) and the whole exchange (answerMs). Without them a
// daemon that accepted and never answered (stopped with SIGSTOP, deadlocked) held the CLI, and
// every agent calling it, forever.
function post(
  url: string,
  token: string,
  payload: string,
  bounds: { connectMs: number; answerMs: number },
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    // Until the socket connects nothing can have reached the daemon; after, anything may have.
    let sent = false;
    const timers: NodeJS.Timeout[] = [];
    const settle = () => timers.forEach(clearTimeout);
    const fail = (e: Error, timedOut: 'connect' | 'answer' | null = null) => {
      settle();
      reject(new NotAnswered(sent, e, timedOut));
    };
    const giveUp = (which: 'connect' | 'answer') => () => {
      // Rejected before the destroy: its own error (ECONNRESET, 'aborted') must not say why.
      fail(new Error(`no ${which === 'connect' ? 'connection' : 'answer'} in time`), which);
      req.destroy();
    };
    timers.push(setTimeout(giveUp('answer'), bounds.answerMs));
    const req = request(
      url,
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          let body: Reply['body'];
          try {
            body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Reply['body'];
          } catch {
            body = null;
          }
          settle();
          resolve({ status: res.statusCode ?? 0, body });
        });
        res.on('error', (e) => fail(e));
      },
    );
    req.on('socket', (socket) => {
      // A kept-alive socket is connected already.
      if (!socket.connecting) sent = true;
      else {
        const connecting = setTimeout(giveUp('connect'), bounds.connectMs);
        timers.push(connecting);
        socket.once('connect', () => {
          sent = true;
          clearTimeout(connecting);
        });
      }
    });
    req.on('error', (e) => fail(e));
    req.end(payload);
  });
}
