// After the build: the tool commands' names, summaries and flags as plain JSON
// (src/cli/tool-manifest.ts), so that the CLI's command table and its fast path to a daemon
// are built without loading zod or the tool registry.
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');
const { toolManifest } = await import(pathToFileURL(join(dist, 'cli', 'tool-manifest.js')).href);
const tools = await toolManifest();
writeFileSync(join(dist, 'cli', 'tool-manifest.json'), JSON.stringify({ tools }) + '\n');
