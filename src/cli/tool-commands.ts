import type { Argv } from 'yargs';
import { addFollowOption, followEvents } from './follow.js';
import type { CliIO } from './io.js';
import { LANE_FROM_ASK, argsFromOptions } from './tool-args.js';
import type { ManifestTool } from './tool-manifest.js';

// One subcommand per tool (`lane_propose` → `zz lane propose`), its flags from the tool
// manifest (tool-manifest.ts: the tool's schema as plain data), and `zz call TOOL --args JSON`
// for any tool. Groups may add their own subcommands (`zz ladder build`); they are named in
// the group's line of `zz --help`. Building the table loads neither the registry nor zod:
// a handler loads what its call needs (tool-calls.ts) once yargs has chosen it.

export type GroupExtension = { subs: string[]; add: (g: Argv, io: CliIO) => Argv };

/**
 * Adds the tool commands. `argvHasArgs`: the command line passes `--args`, which may hold the
 * required fields, so yargs must not demand them as flags (the tool's schema still checks).
 */
export function addToolCommands(
  y: Argv,
  io: CliIO,
  manifest: readonly ManifestTool[],
  argvHasArgs: boolean,
  extensions: Record<string, GroupExtension> = {},
): Argv {
  const groups = new Map<string, ManifestTool[]>();
  for (const t of manifest) groups.set(t.group, [...(groups.get(t.group) ?? []), t]);
  for (const [group, tools] of groups) {
    const ext = extensions[group];
    const subs = [...tools.map((t) => t.sub), ...(ext?.subs ?? [])];
    y = y.command(group, subs.join(', '), (g: Argv) => {
      for (const tool of tools) {
        g = g.command(
          tool.sub,
          tool.summary,
          (c: Argv) => {
            const laneFromAsk = LANE_FROM_ASK.has(tool.name);
            for (const o of tool.options) {
              const optional = laneFromAsk && o.key === 'lane_id';
              c = c.option(o.flag, {
                describe: optional ? 'Default: the Lane of --ask-id' : o.describe || undefined,
                type: o.kind === 'json' ? 'string' : o.kind,
                // An array flag's elements are strings: without this yargs made
                // `--command 0x1f` the argument "31" (test/cli/fast-path-parity.test.ts).
                ...(o.kind === 'array' ? { string: true } : {}),
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
            if (tool.name === 'git_show_file')
              c = c.epilog(
                'On a terminal the content is shown with control characters escaped; into a pipe or a file (`> f`) it is written as its exact bytes, binary files included.',
              );
            return c
              .option('args', {
                type: 'string',
                describe: 'Arguments as a JSON object (flags override)',
              })
              .option('json', { type: 'boolean', describe: 'Print JSON' });
          },
          async (argv) => {
            const calls = await import('./tool-calls.js');
            const base = await calls.readArgs(io, argv as { args?: string });
            const args = argsFromOptions(tool.options, argv as Record<string, unknown>, base);
            await calls.readTextFiles(io, tool.options, argv as Record<string, unknown>, args);
            if (argv.follow) return followEvents(io, args, !!argv.json);
            await calls.callToolCommand(io, tool, args, !!argv.json);
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
