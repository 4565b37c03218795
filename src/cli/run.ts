import yargs, { type Argv } from 'yargs';
import { ZzError, isZzError } from '../errors.js';
import { ALL_TOOLS } from '../tools/registry.js';
import type { ToolDef } from '../tools/define-tool.js';
import { connect } from './client.js';
import { print } from './format.js';
import { neutralize } from './terminal.js';
import type { CliIO } from './io.js';
import { argsFromOptions, commandPath, toolOptions } from './tool-options.js';
import {
  agentCommand,
  initCommand,
  loginCommand,
  hookCommand,
  serveCommand,
  mcpCommand,
  ladderBuildCommand,
} from './commands.js';
import { dashboardCommand } from './dashboard-command.js';
import { workCommand } from './work-command.js';
import { syncCommand } from './sync-command.js';

// The command table and the error boundary: every failure becomes one line on stderr and an
// exit code from the error table; nothing else in the CLI decides exit codes.

async function readArgs(
  io: CliIO,
  argv: { args?: string; 'args-file'?: string },
): Promise<Record<string, unknown>> {
  let text: string | undefined = argv.args;
  if (argv['args-file'] !== undefined) {
    const { readFile } = await import('node:fs/promises');
    const { resolve } = await import('node:path');
    text =
      argv['args-file'] === '-'
        ? await readStdin()
        : await readFile(resolve(io.cwd, argv['args-file']), 'utf8');
  }
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

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function callTool(
  io: CliIO,
  tool: string,
  args: Record<string, unknown>,
  json: boolean,
): Promise<void> {
  const client = await connect({ cwd: io.cwd, env: io.env });
  try {
    print(io, await client.call(tool, args), json, tool);
  } finally {
    client.close();
  }
}

function addToolCommands(y: Argv, io: CliIO): Argv {
  const groups = new Map<string, ToolDef[]>();
  for (const t of ALL_TOOLS) {
    const [g] = commandPath(t.name);
    groups.set(g, [...(groups.get(g) ?? []), t]);
  }
  for (const [group, tools] of groups) {
    if (group === 'ladder' || group === 'git') {
      // merged below with their extra subcommands
    }
    y = y.command(group, `${tools.map((t) => commandPath(t.name)[1]).join(', ')}`, (g: Argv) => {
      for (const tool of tools) {
        const [, sub] = commandPath(tool.name);
        g = g.command(
          sub,
          tool.summary,
          (c: Argv) => {
            for (const o of toolOptions(tool)) {
              c = c.option(o.flag, {
                describe: o.describe || undefined,
                type: o.kind === 'json' ? 'string' : o.kind,
                ...(o.choices ? { choices: o.choices } : {}),
                ...(o.key !== o.flag ? { alias: o.key } : {}),
              });
            }
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
            await callTool(io, tool.name, args, !!argv.json);
          },
        );
      }
      if (group === 'ladder') g = ladderBuildCommand(g, io);
      return g.demandCommand(1, `choose a ${group} command`);
    });
  }
  return y;
}

export async function run(argv: string[], io: CliIO): Promise<number> {
  let y = yargs(argv)
    .scriptName('zz')
    .usage('zz — git-native coordination for coding agents\n\nUsage: zz <command> [options]')
    .exitProcess(false)
    .strict()
    .help()
    .alias('h', 'help')
    .version(false)
    .wrap(Math.min(110, process.stdout.columns || 100))
    .fail((msg: string | null, err: Error | undefined) => {
      throw err ?? new ZzError('invalid_argument', msg ?? 'invalid command line');
    });
  y = initCommand(y, io);
  y = serveCommand(y, io);
  y = loginCommand(y, io);
  y = agentCommand(y, io);
  y = hookCommand(y, io);
  y = mcpCommand(y, io);
  y = dashboardCommand(y, io);
  y = workCommand(y, io);
  y = syncCommand(y, io);
  y = y.command(
    'call <tool>',
    'Call any tool with JSON arguments and print the JSON result',
    (c: Argv) =>
      c
        .positional('tool', { type: 'string', demandOption: true })
        .option('args', { type: 'string', describe: 'Arguments as a JSON object' })
        .option('args-file', {
          type: 'string',
          describe: 'Read the arguments from a file (- for stdin)',
        }),
    async (a) => {
      const args = await readArgs(io, a as { args?: string; 'args-file'?: string });
      await callTool(io, String(a.tool), args, true);
    },
  );
  y = addToolCommands(y, io).demandCommand(1, 'choose a command (zz --help lists them)');
  let helpShown = false;
  try {
    const out: string[] = [];
    await y.parseAsync(argv, {}, (_err: Error | undefined, _parsed: unknown, output: string) => {
      if (output) out.push(output);
    });
    if (out.length) {
      helpShown = true;
      io.stdout(out.join('\n') + '\n');
    }
    return 0;
  } catch (e) {
    if (helpShown) return 0;
    const err = isZzError(e) ? e : null;
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
