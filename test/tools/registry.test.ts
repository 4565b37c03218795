import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ZzError } from '../../src/errors.js';
import { ALL_TOOLS, parseArgs, registry, TOOLSETS } from '../../src/tools/index.js';

// Conventions every tool in the registry keeps (DESIGN §3, §8), and a snapshot of the JSON
// Schemas clients see, so that a schema change is a reviewed change and never an accident.
//
// To accept schema changes (e.g. after adding tools):
//   UPDATE_SNAPSHOTS=1 npx vitest run test/tools/registry.test.ts
// and commit test/tools/__snapshots__/tool-schemas.json.

const SNAPSHOT = join(
  dirname(fileURLToPath(import.meta.url)),
  '__snapshots__',
  'tool-schemas.json',
);
const UPDATE_HINT =
  'run `UPDATE_SNAPSHOTS=1 npx vitest run test/tools/registry.test.ts` and commit ' +
  'test/tools/__snapshots__/tool-schemas.json';

const envOn = (v: string | undefined): boolean =>
  v !== undefined && v !== '' && v !== '0' && v.toLowerCase() !== 'false';

const ANNOTATION_KEYS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'];

describe.each(ALL_TOOLS.map((t) => [t.name, t] as const))('tool %s', (name, tool) => {
  it('has a snake_case name, a one-line summary and a known toolset', () => {
    expect(name).toMatch(/^[a-z]+(_[a-z]+)+$/);
    expect(registry.get(name)).toBe(tool);
    expect(tool.summary.trim()).toBe(tool.summary);
    expect(tool.summary).not.toMatch(/[\r\n]/);
    expect(tool.summary.length).toBeGreaterThan(0);
    expect(tool.summary.length).toBeLessThanOrEqual(120);
    expect(TOOLSETS).toContain(tool.toolset);
  });

  it('declares all four annotations explicitly, and they agree with each other', () => {
    expect(Object.keys(tool.annotations).sort()).toEqual([...ANNOTATION_KEYS].sort());
    for (const k of ANNOTATION_KEYS) {
      expect(typeof (tool.annotations as unknown as Record<string, unknown>)[k]).toBe('boolean');
    }
    // A read-only tool destroys nothing (MCP clients auto-approve on this combination).
    if (tool.annotations.readOnlyHint) expect(tool.annotations.destructiveHint).toBe(false);
  });

  it('has zod object input and output schemas; the input is strict', () => {
    expect(tool.input).toBeInstanceOf(z.ZodObject);
    expect(tool.output).toBeInstanceOf(z.ZodObject);
    const e = (() => {
      try {
        parseArgs(tool.input, { zz_unknown_field: 1 });
      } catch (x) {
        return x;
      }
      return null;
    })();
    expect(e, `${name} accepted an unknown field`).toBeInstanceOf(ZzError);
    expect((e as ZzError).code).toBe('invalid_argument');
    const issues = (e as ZzError).details as { issues: Array<{ code: string; keys?: string[] }> };
    expect(
      issues.issues.some(
        (i) => i.code === 'unrecognized_keys' && i.keys?.includes('zz_unknown_field'),
      ),
    ).toBe(true);
    expect(z.toJSONSchema(tool.input, { io: 'input' }).additionalProperties).toBe(false);
  });

  it('converts both schemas to JSON Schema', () => {
    expect(() => z.toJSONSchema(tool.input, { io: 'input' })).not.toThrow();
    expect(() => z.toJSONSchema(tool.output, { io: 'output' })).not.toThrow();
  });
});

describe('registry', () => {
  it('names are unique', () => {
    const names = ALL_TOOLS.map((t) => t.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it('JSON Schemas match the reviewed snapshot', () => {
    const current: Record<string, { input: unknown; output: unknown }> = {};
    for (const t of ALL_TOOLS) {
      current[t.name] = {
        input: z.toJSONSchema(t.input, { io: 'input' }),
        output: z.toJSONSchema(t.output, { io: 'output' }),
      };
    }
    const text = JSON.stringify(current, null, 2) + '\n';
    const write = () => {
      mkdirSync(dirname(SNAPSHOT), { recursive: true });
      writeFileSync(SNAPSHOT, text);
    };
    if (envOn(process.env.UPDATE_SNAPSHOTS)) {
      write();
      return;
    }
    // A missing snapshot fails everywhere: it is written only by an explicit update.
    if (!existsSync(SNAPSHOT)) {
      throw new Error(`tool schema snapshot ${SNAPSHOT} is missing; ${UPDATE_HINT}`);
    }
    const stored = JSON.parse(readFileSync(SNAPSHOT, 'utf8')) as Record<string, unknown>;
    const added = Object.keys(current).filter((n) => !(n in stored));
    const removed = Object.keys(stored).filter((n) => !(n in current));
    const changed = Object.keys(current).filter(
      (n) => n in stored && JSON.stringify(stored[n]) !== JSON.stringify(current[n]),
    );
    const summary = [
      added.length ? `added: ${added.join(', ')}` : '',
      removed.length ? `removed: ${removed.join(', ')}` : '',
      changed.length ? `changed: ${changed.join(', ')}` : '',
    ]
      .filter(Boolean)
      .join('; ');
    expect(
      current,
      `tool schemas differ from the snapshot (${summary}); if intended, ${UPDATE_HINT}`,
    ).toEqual(stored);
  });
});
