import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { toolManifest } from '../../src/cli/tool-manifest.js';
import { ROOT, ensureBuilt } from '../e2e/zz-process.js';

// The built CLI takes its tool commands — help text, flags, which tools run locally — from
// dist/cli/tool-manifest.json rather than the registry (src/cli/tool-manifest.ts). It must say
// exactly what the registry says, or `zz lane list --help` and the flags would drift from the
// tools' schemas.

describe('the tool manifest', () => {
  it('the built JSON is the registry, field for field', async () => {
    ensureBuilt();
    const built = JSON.parse(
      readFileSync(join(ROOT, 'dist', 'cli', 'tool-manifest.json'), 'utf8'),
    ) as { tools: unknown[] };
    const fromRegistry = await toolManifest();
    expect(built.tools).toEqual(fromRegistry);
    // Every tool, with its summary and its flags' help (the command table needs them).
    expect(fromRegistry.map((t) => t.name)).toContain('run_in_sandbox');
    expect(fromRegistry.find((t) => t.name === 'run_in_sandbox')?.local).toBe(true);
    expect(fromRegistry.every((t) => t.summary !== '')).toBe(true);
    expect(fromRegistry.some((t) => t.options.some((o) => o.describe !== ''))).toBe(true);
  });
});
