import yargs, { type Argv } from 'yargs';
import { ZzError } from '../errors.js';
import { reportFailure } from './failure.js';
import type { CliIO } from './io.js';
import {
  exitCodesEpilogue,
  exitCodesText,
  kebabFlags,
  nearest,
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
import { addToolCommands } from './tool-commands.js';
import { loadToolManifest } from './tool-manifest.js';
import { version } from './version.js';

// The command table, inside the error boundary (failure.ts).

export async function run(typedArgv: string[], io: CliIO): Promise<number> {
  const argv = stdinDashes(kebabFlags(typedArgv));
  // The tool commands come from the manifest, not the registry (tool-manifest.ts says why):
  // every command line gets the whole table, so usage and suggestions read the same for all.
  const manifest = await loadToolManifest();
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
      const { callTool, readArgs } = await import('./tool-calls.js');
      const args = await readArgs(io, a as { args?: string; 'args-file'?: string });
      const tool = String(a.tool);
      const known = manifest.find((t) => t.name === tool);
      await callTool(io, tool, args, true, {
        local: !!known?.local,
        ...(known ? { resend: known.resend } : {}),
      }).catch((e: unknown) => {
        // A misspelt tool name was answered `unknown tool "lane_lsit"` alone.
        const near = known
          ? null
          : nearest(
              tool,
              manifest.map((t) => t.name),
            );
        if (
          near &&
          e instanceof ZzError &&
          e.code === 'not_found' &&
          /^unknown tool/.test(e.message)
        )
          throw new ZzError('not_found', `${e.message}; did you mean ${near}?`, e.details);
        throw e;
      });
    },
  );
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
  y = addToolCommands(y, io, manifest, argvHasArgs, {
    ladder: { subs: ['build'], add: ladderBuildCommand },
  });
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
    return reportFailure(io, e);
  }
}
