import { readFileSync } from 'node:fs';
import yargs, { type Argv } from 'yargs';
import { ZzError, knownError } from '../errors.js';
import { neutralize } from './terminal.js';
import type { CliIO } from './io.js';
import {
  exitCodesEpilogue,
  exitCodesText,
  kebabFlags,
  rewriteParseFailure,
  stdinDashes,
} from './usage.js';
import { agentCommand, loginCommand, logoutCommand, whoamiCommand } from './identity-commands.js';
import {
  initCommand,
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

function version(): string {
  // package.json sits two levels above this file both in src/cli/ and in dist/cli/.
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

// Commands that are not tools and never reach the tool registry from their handlers (those
// that need it import it themselves). Their command line is parsed without the tool commands:
// loading the registry (every tool's zod schema, core) costs ~0.5 s of CPU, more than the
// whole of `zz whoami`. Help, completion and anything unsure take the full table, so usage and
// suggestions read as before; strict parsing of one of these commands needs only its own flags.
const SETUP_COMMANDS = new Set([
  'init',
  'serve',
  'login',
  'logout',
  'whoami',
  'agent',
  'hook',
  'mcp',
  'dashboard',
  'work',
  'sync',
]);

function needsToolTable(argv: string[]): boolean {
  if (argv.some((a) => a === '--help' || a === '-h' || a === 'completion' || a === '--version'))
    return true;
  return !SETUP_COMMANDS.has(argv[0] ?? '');
}

export async function run(typedArgv: string[], io: CliIO): Promise<number> {
  const argv = stdinDashes(kebabFlags(typedArgv));
  const toolTable = needsToolTable(argv) ? await import('./tool-commands.js') : null;
  const argvHasArgs = argv.some((a) => /^--args(-file)?(=|$)/.test(a));
  let y = yargs(argv)
    .scriptName('zz')
    .usage('zz — git-native coordination for coding agents\n\nUsage: zz <command> [options]')
    .exitProcess(false)
    .strict()
    // Unknown flags are reported as typed: no camelCase twins nobody wrote.
    .parserConfiguration({ 'camel-case-expansion': false })
    .recommendCommands()
    .help()
    .alias('h', 'help')
    .version('version', 'Show the version of zz', version())
    .completion('completion', 'Print a bash/zsh completion script (zz completion >> ~/.bashrc)')
    .epilogue(exitCodesEpilogue())
    .wrap(Math.min(110, process.stdout.columns || 100))
    .fail((msg: string | null, err: Error | undefined) => {
      if (err) throw err;
      // yargs narrows its options to the command being parsed: the flags it knows there.
      // as unknown as: getOptions() exists at runtime in yargs 18 but @types/yargs omits it.
      const known = (
        y as unknown as {
          getOptions(): { key: Record<string, unknown>; choices: Record<string, string[]> };
        }
      ).getOptions();
      const flags = Object.keys(known.key);
      throw new ZzError(
        'invalid_argument',
        rewriteParseFailure(msg ?? 'invalid command line', flags, argv, known.choices),
      );
    });
  y = initCommand(y, io);
  y = serveCommand(y, io);
  y = loginCommand(y, io);
  y = logoutCommand(y, io);
  y = whoamiCommand(y, io);
  y = agentCommand(y, io);
  y = hookCommand(y, io);
  y = mcpCommand(y, io);
  y = dashboardCommand(y, io);
  y = workCommand(y, io);
  y = syncCommand(y, io);
  // `zz call` and the tool commands come with the tool table (needsToolTable above).
  if (toolTable) {
    const { callTool, readArgs } = toolTable;
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
  }
  y = y.command(
    'help [topic]',
    'Show help, or a topic: exit-codes',
    // No `choices` on the positional: yargs' refusal of an unknown topic reads as a flag
    // (`--topic must be one of …`), and `zz help lane` deserves a pointer to `zz lane --help`.
    (c: Argv) => c.positional('topic', { type: 'string', describe: 'exit-codes' }),
    async (a) => {
      const topic = a.topic === undefined ? undefined : String(a.topic);
      if (topic === 'exit-codes') io.stdout(`Exit codes of zz:\n${exitCodesText()}\n`);
      else if (topic === undefined) io.stdout((await y.getHelp()) + '\n');
      else {
        throw new ZzError(
          'invalid_argument',
          `no help topic "${topic.slice(0, 60)}"; the topics are: exit-codes. A command's help: zz <command> --help (e.g. zz lane --help)`,
        );
      }
    },
  );
  if (toolTable) {
    y = toolTable.addToolCommands(y, io, argvHasArgs, {
      ladder: { subs: ['build'], add: ladderBuildCommand },
    });
  }
  y = y.demandCommand(1, 'choose a command (zz --help lists them)');
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
    // A full disk or a read-only repository is one line too, not a stack (knownError names it).
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
