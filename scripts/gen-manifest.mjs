// After the build: the tool commands' names and flags as plain JSON, so that the CLI's fast
// path can send `zz lane list` to a running daemon without loading zod, yargs or the registry.
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');
const { ALL_TOOLS } = await import(join(dist, 'tools', 'registry.js'));
const { toolOptions, commandPath } = await import(join(dist, 'cli', 'tool-options.js'));
const tools = ALL_TOOLS.filter((t) => !t.local).map((t) => {
  const [group, sub] = commandPath(t.name);
  return {
    name: t.name,
    group,
    sub,
    options: toolOptions(t).map(({ key, flag, kind, required, choices, min, max, int }) => ({
      key,
      flag,
      kind,
      ...(required ? { required } : {}),
      ...(choices ? { choices } : {}),
      ...(min === undefined ? {} : { min }),
      ...(max === undefined ? {} : { max }),
      ...(int ? { int } : {}),
    })),
  };
});
writeFileSync(join(dist, 'cli', 'tool-manifest.json'), JSON.stringify({ tools }) + '\n');
