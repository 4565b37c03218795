import type { Argv } from 'yargs';
import { ZzError, isZzError } from '../errors.js';
import { ALL_TOOLS, registry } from '../tools/registry.js';
import type { ToolDef } from '../tools/define-tool.js';
import { connect, type ToolClient } from './client.js';
import {
  NO_LADDER_HINT,
  NOT_INITIALISED_HINT,
  mayLackInit,
  mayLackLadder,
  print,
} from './format.js';
import { addFollowOption, followEvents } from './follow.js';
import type { CliIO } from './io.js';
import { argsFromOptions, commandPath, toolOptions } from './tool-options.js';

// One subcommand per tool (`lane_propose` → `zz lane propose`), its flags from the tool's
// schema, and `zz call TOOL --args JSON` for any tool. Groups may add their own subcommands
// (`zz ladder build`); they are named in the group's line of `zz --help`.

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
async function readTextFiles(
  io: CliIO,
  tool: ToolDef,
  parsed: Record<string, unknown>,
  args: Record<string, unknown>,
): Promise<void> {
  for (const o of toolOptions(tool)) {
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

/**
 * `zz ask claim|release|answer|cancel --ask-id X` without `--lane-id`: the Ask's own Lane, as
 * `zz ask get --ask-id X` finds it (ask ids are unique across Lanes). The tools themselves keep
 * lane_id required; the CLI asks first, so a typo in the id is a not_found naming it.
 */
export const LANE_FROM_ASK = new Set(['ask_claim', 'ask_release', 'ask_answer', 'ask_cancel']);

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

export async function callTool(
  io: CliIO,
  tool: string,
  args: Record<string, unknown>,
  json: boolean,
  opts: { laneFromAsk?: boolean } = {},
): Promise<void> {
  const client = await connect({ cwd: io.cwd, env: io.env });
  // A local tool (run_in_sandbox) runs here, its command in a process group of its own that a
  // terminal's Ctrl-C does not reach: a signal ends the run and removes its checkout before
  // zz exits (reading stopSignal is what keeps main.ts from exiting at once).
  const local = registry.get(tool)?.local ? new AbortController() : null;
  if (local) {
    void io.stopSignal?.then(() =>
      local.abort(new ZzError('unavailable', `${tool} was stopped by a signal`)),
    );
  }
  try {
    let result: Record<string, unknown>;
    try {
      result = await client.call(
        tool,
        opts.laneFromAsk ? await withLaneOfAsk(client, tool, args) : args,
        local ? { signal: local.signal } : undefined,
      );
    } catch (e) {
      if (isZzError(e) && e.code === 'not_found' && tool.startsWith('ladder_'))
        await hintLadderBuild(io, client);
      throw e;
    }
    print(io, result, json, tool);
    if (mayLackLadder(tool, args, result)) await hintLadderBuild(io, client);
    if (mayLackInit(tool, result)) await hintInit(io, client);
  } finally {
    client.close();
  }
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

export type GroupExtension = { subs: string[]; add: (g: Argv, io: CliIO) => Argv };

/**
 * Adds the tool commands. `argvHasArgs`: the command line passes `--args`, which may hold the
 * required fields, so yargs must not demand them as flags (the tool's schema still checks).
 */
export function addToolCommands(
  y: Argv,
  io: CliIO,
  argvHasArgs: boolean,
  extensions: Record<string, GroupExtension> = {},
): Argv {
  const groups = new Map<string, ToolDef[]>();
  for (const t of ALL_TOOLS) {
    const [g] = commandPath(t.name);
    groups.set(g, [...(groups.get(g) ?? []), t]);
  }
  for (const [group, tools] of groups) {
    const ext = extensions[group];
    const subs = [...tools.map((t) => commandPath(t.name)[1]), ...(ext?.subs ?? [])];
    y = y.command(group, subs.join(', '), (g: Argv) => {
      for (const tool of tools) {
        const [, sub] = commandPath(tool.name);
        g = g.command(
          sub,
          tool.summary,
          (c: Argv) => {
            const laneFromAsk = LANE_FROM_ASK.has(tool.name);
            for (const o of toolOptions(tool)) {
              const optional = laneFromAsk && o.key === 'lane_id';
              c = c.option(o.flag, {
                describe: optional ? 'Default: the Lane of --ask-id' : o.describe || undefined,
                type: o.kind === 'json' ? 'string' : o.kind,
                ...(o.choices ? { choices: o.choices } : {}),
                ...(o.required && !optional && !argvHasArgs && !o.file
                  ? { demandOption: true }
                  : {}),
              });
              if (o.file) {
                c = c
                  .option(o.file.flag, {
                    type: 'string',
                    describe: `Read --${o.flag} from a file (- for stdin)`,
                  })
                  .conflicts(o.flag, o.file.flag);
              }
            }
            if (tool.name === 'lane_events') c = addFollowOption(c);
            return c
              .option('args', {
                type: 'string',
                describe: 'Arguments as a JSON object (flags override)',
              })
              .option('json', { type: 'boolean', describe: 'Print JSON' });
          },
          async (argv) => {
            const base = await readArgs(io, argv as { args?: string });
            const args = argsFromOptions(tool, argv as Record<string, unknown>, base);
            await readTextFiles(io, tool, argv as Record<string, unknown>, args);
            if (argv.follow) return followEvents(io, args, !!argv.json);
            await callTool(io, tool.name, args, !!argv.json, { laneFromAsk: true });
          },
        );
      }
      if (ext) g = ext.add(g, io);
      const article = /^[aeiou]/.test(group) ? 'an' : 'a';
      return g.demandCommand(1, `choose ${article} ${group} command: ${subs.join(', ')}`);
    });
  }
  return y;
}
