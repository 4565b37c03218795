import { ZzError, isZzError } from '../errors.js';
import { newIdempotencyKey } from '../schema/new-key.js';
import { connect, requestSent, type ToolClient } from './client.js';
import {
  NO_LADDER_HINT,
  NOT_INITIALISED_HINT,
  mayLackInit,
  mayLackLadder,
  print,
} from './format.js';
import { WHOLE_FILE_PAGE, wholeFileWanted, type CliIO } from './io.js';
import { LANE_FROM_ASK, type ToolOption } from './tool-args.js';
import { neutralize } from './terminal.js';
import type { ManifestTool, Resend } from './tool-manifest.js';

// Running a tool command once its command line is parsed (tool-commands.ts): its arguments
// from flags, files and `--args`, then the call, through the daemon or in-process. Loaded by
// the command's handler, not with the command table: connecting pulls in zod and git.

export async function readArgs(
  io: CliIO,
  argv: { args?: string; 'args-file'?: string },
): Promise<Record<string, unknown>> {
  let text: string | undefined = argv.args;
  if (argv['args-file'] !== undefined)
    text = await readInputFile(io, 'args-file', argv['args-file']);
  if (text === undefined) return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new ZzError('invalid_argument', `--args is not valid JSON: ${(e as Error).message}`);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v))
    throw new ZzError('invalid_argument', '--args must be a JSON object');
  return v as Record<string, unknown>;
}

/**
 * The text of the file a `--…-file` flag names (`-`: stdin), as UTF-8. With `maxBytes`, reads
 * no more than a chunk past it and throws `tooBig()` when there is more: a mistaken
 * `--body-file /dev/zero` or a 2 GB log is refused, not read into memory first.
 */
async function readInputFile(
  io: CliIO,
  flag: string,
  path: string,
  maxBytes = Infinity,
  tooBig?: () => ZzError,
): Promise<string> {
  const { createReadStream } = await import('node:fs');
  const { resolve } = await import('node:path');
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    const from = path === '-' ? process.stdin : createReadStream(resolve(io.cwd, path));
    for await (const c of from) {
      chunks.push(c as Buffer);
      size += (c as Buffer).length;
      if (size > maxBytes) break;
    }
  } catch (e) {
    const why = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    throw new ZzError('invalid_argument', `--${flag}: cannot read ${path.slice(0, 200)} (${why})`);
  }
  if (size > maxBytes && tooBig) throw tooBig();
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Fills `args` from the `--…-file` flags given (toolOptions' `file`), each refused past the
 * bound the tool's schema sets on its field, in that bound's own unit.
 */
export async function readTextFiles(
  io: CliIO,
  options: readonly ToolOption[],
  parsed: Record<string, unknown>,
  args: Record<string, unknown>,
): Promise<void> {
  for (const o of options) {
    const path = o.file && parsed[o.file.flag];
    if (!o.file || typeof path !== 'string') continue;
    const { flag, maxBytes, maxChars } = o.file;
    // A UTF-16 code unit takes at most 3 bytes of UTF-8 (4 bytes are 2 units).
    const limit = Math.min(maxBytes ?? Infinity, maxChars === undefined ? Infinity : 3 * maxChars);
    const bound =
      maxBytes !== undefined
        ? `${maxBytes % 1024 === 0 ? `${maxBytes / 1024} KiB` : `${maxBytes} bytes`} of UTF-8`
        : `${maxChars} characters`;
    const tooBig = () =>
      new ZzError(
        'invalid_argument',
        `--${flag}: ${path === '-' ? 'stdin' : path.slice(0, 200)} holds more than ${bound}, the most --${o.flag} may be`,
      );
    const text = await readInputFile(io, flag, path, limit, tooBig);
    if (maxChars !== undefined && text.length > maxChars) throw tooBig();
    args[o.key] = text;
  }
}

async function withLaneOfAsk(
  client: ToolClient,
  tool: string,
  args: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  if (!LANE_FROM_ASK.has(tool) || args.lane_id !== undefined || typeof args.ask_id !== 'string')
    return args;
  const got = (await client.call('ask_get', { ask_id: args.ask_id })) as {
    ask: { lane_id: string };
  };
  return { ...args, lane_id: got.ask.lane_id };
}

/**
 * A tool command's call, the one both routes to it make: its handler in the command table
 * (tool-commands.ts) and the fast path, which parses the flags itself (fast-path.ts).
 */
export function callToolCommand(
  io: CliIO,
  tool: ManifestTool,
  args: Record<string, unknown>,
  json: boolean,
): Promise<void> {
  return callTool(io, tool.name, args, json, {
    laneFromAsk: true,
    local: tool.local,
    resend: tool.resend,
  });
}

export async function callTool(
  io: CliIO,
  tool: string,
  args: Record<string, unknown>,
  json: boolean,
  opts: { laneFromAsk?: boolean; local?: boolean; resend?: Resend } = {},
): Promise<void> {
  const client = await connect({ cwd: io.cwd, env: io.env });
  // Through a daemon an answer can be lost after the write was made. The call is sent once,
  // but with a key, so that the user can repeat it safely: lostAnswer says how.
  if (client.mode === 'daemon' && opts.resend === 'keyed' && args.idempotency_key === undefined)
    args = { ...args, idempotency_key: newIdempotencyKey('cli') };
  // A local tool (run_in_sandbox) runs here, its command in a process group of its own that a
  // terminal's Ctrl-C does not reach: a signal ends the run and removes its checkout before
  // zz exits (reading stopSignal is what keeps main.ts from exiting at once).
  const local = opts.local ? new AbortController() : null;
  if (local) {
    void io.stopSignal?.then(() =>
      local.abort(new ZzError('unavailable', `${tool} was stopped by a signal`)),
    );
  }
  try {
    const callArgs = opts.laneFromAsk ? await withLaneOfAsk(client, tool, args) : args;
    let result: Record<string, unknown>;
    try {
      // A whole file is asked for in the largest pages (one call for most files).
      const first = wholeFileWanted(io, tool, json, args)
        ? { ...callArgs, limit: WHOLE_FILE_PAGE }
        : callArgs;
      result = await client.call(tool, first, local ? { signal: local.signal } : undefined);
    } catch (e) {
      if (isZzError(e) && e.code === 'not_found' && tool.startsWith('ladder_'))
        await hintLadderBuild(io, client);
      // (A local tool runs here, not in the daemon: its errors say what happened.)
      if (client.mode === 'daemon' && !local && isZzError(e))
        throw lostAnswer(e, tool, args, opts.resend);
      throw e;
    }
    // `zz git show-file > f` with no page asked for writes the whole file, page after page at
    // the commit the first page resolved (a branch moving meanwhile changes nothing): one page
    // of a file past the page size, with exit 0 and a note on stderr, read as the whole file.
    if (wholeFileWanted(io, tool, json, args)) {
      while (typeof result.next_offset === 'number' && typeof result.commit === 'string') {
        const offset = Number(result.offset);
        const next = result.next_offset;
        // A page must move on, at the same commit: anything else (a daemon's bug) would loop
        // and write for ever.
        if (!(next > offset))
          throw new ZzError('internal', `git_show_file answered next_offset ${next} at ${offset}`);
        print(io, { ...result, next_offset: null }, json, tool);
        await io.drain?.();
        try {
          // The largest page: past 4 MiB the daemon streams the blob from its start for every
          // page, so 1 MiB pages made a file of n MiB cost ~n²/2 MiB of reading (a 72 MB file:
          // 10.4 s through the daemon, 3.8 s in 16 MiB pages).
          result = await client.call(tool, {
            ...callArgs,
            commit: result.commit,
            offset: next,
            limit: WHOLE_FILE_PAGE,
          });
        } catch (e) {
          if (!isZzError(e)) throw e;
          throw new ZzError(
            e.code,
            `${e.message}; bytes 0–${next - 1} were written: the rest with zz git show-file --path ${neutralize(String(args.path))} --commit ${result.commit} --offset ${next}`,
            e.details,
          );
        }
      }
    }
    print(io, result, json, tool);
    if (mayLackLadder(tool, args, result)) await hintLadderBuild(io, client);
    if (mayLackInit(tool, result)) await hintInit(io, client);
  } finally {
    client.close();
  }
}

/**
 * A write through the daemon that failed as `unavailable` after its request may have reached
 * the daemon (requestSent) may have been applied: the error says so, and how to repeat it so
 * that it acts at most once. Anything else is `e` as it is.
 */
function lostAnswer(
  e: ZzError,
  tool: string,
  args: Record<string, unknown>,
  resend: Resend | undefined,
): ZzError {
  if (e.code !== 'unavailable' || !requestSent(e) || resend === undefined || resend === 'safe')
    return e;
  const how =
    resend === 'keyed'
      ? `repeat the command with --idempotency-key ${String(args.idempotency_key)}, which cannot apply it twice`
      : 'check before running it again';
  return new ZzError(
    'unavailable',
    `${e.message}; ${tool} may or may not have been applied: ${how}`,
    e.details,
  );
}

/** When this repository has no Ladder yet (no `_repo` rung), says how to build one. */
async function hintLadderBuild(io: CliIO, client: ToolClient): Promise<void> {
  const built = await client.call('ladder_read', { path: '_repo', limit: 1 }).then(
    () => true,
    (e: unknown) => !(isZzError(e) && e.code === 'not_found'),
  );
  if (!built) io.stderr(NO_LADDER_HINT);
}

/** When zz was never initialised in this checkout, says how to start (or adopt the remote's). */
async function hintInit(io: CliIO, client: ToolClient): Promise<void> {
  const state = await client.call('repo_state', {}).catch(() => null);
  if (state?.initialised === false) io.stderr(NOT_INITIALISED_HINT);
}
