import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { parseToolFlags } from '../../src/cli/fast-path.js';
import { run } from '../../src/cli/index.js';
import { toolManifest, type ManifestTool } from '../../src/cli/tool-manifest.js';
import type { ToolOption } from '../../src/cli/tool-args.js';
import type * as ToolCalls from '../../src/cli/tool-calls.js';

// The CLI reads a tool command's flags twice over: the fast path (fast-path.ts parseToolFlags,
// no yargs) and the command table (yargs). Over every tool in the registry and generated
// command lines, whatever the fast path takes must be what the command table would have sent:
// the same arguments and the same --json, or the fast path must refuse the line (null) and
// leave it to the command table. They met in callToolCommand, which is recorded here instead of
// called.

const calls: { tool: string; args: Record<string, unknown>; json: boolean }[] = [];
vi.mock('../../src/cli/tool-calls.js', async (importOriginal) => ({
  ...(await importOriginal<typeof ToolCalls>()),
  callToolCommand: (
    _io: unknown,
    tool: ManifestTool,
    args: Record<string, unknown>,
    json: boolean,
  ) => {
    calls.push({ tool: tool.name, args, json });
    return Promise.resolve();
  },
}));

/** Strings a flag's value may be, the awkward ones often. */
const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom(
    '',
    ' ',
    '-',
    '-x',
    '--',
    '--x',
    '-1',
    '1',
    '0x1f',
    '1e3',
    'true',
    'false',
    '=',
    'a=b',
    '[]',
    '{}',
    'null',
    '"s"',
  ),
);
const numberText = fc.oneof(
  fc.integer({ min: -5, max: 2_000_000 }).map(String),
  fc.double({ noNaN: true }).map(String),
  fc.constantFrom('', ' 1', '1 ', '1.5', '-0', '0x10', '1e2', 'Infinity', 'NaN', 'abc', '--1'),
);
const jsonText = fc.oneof(fc.json({ maxDepth: 2 }), text);

function valueOf(o: ToolOption): fc.Arbitrary<string> {
  if (o.choices) return fc.oneof(fc.constantFrom(...o.choices), text);
  if (o.kind === 'number') return numberText;
  if (o.kind === 'json') return jsonText;
  return text;
}

/** One flag as a user may type it: `--flag v`, `--flag=v`, by key, a boolean bare or valued. */
function flagOf(o: ToolOption): fc.Arbitrary<string[]> {
  const name = fc.constantFrom(o.flag, o.key);
  if (o.kind === 'boolean')
    return fc
      .tuple(name, fc.constantFrom(null, 'true', 'false', 'yes', ''))
      .map(([n, v]) => (v === null ? [`--${n}`] : [`--${n}=${v}`]));
  return fc
    .tuple(name, valueOf(o), fc.boolean())
    .map(([n, v, inline]) => (inline ? [`--${n}=${v}`] : [`--${n}`, v]));
}

const extra: fc.Arbitrary<string[]> = fc.oneof(
  fc.constant<string[]>(['--json']),
  fc.constant<string[]>(['--json=true']),
  fc.constant<string[]>(['--nope', 'x']),
  fc.constant<string[]>(['--']),
  fc.constant<string[]>(['stray']),
  fc.constant<string[]>(['-j']),
  fc
    .dictionary(
      fc.constantFrom('lane_id', 'title', 'ask_id', 'limit', 'x'),
      fc.jsonValue({ maxDepth: 1 }),
      {
        maxKeys: 3,
      },
    )
    .map((o) => ['--args', JSON.stringify(o)]),
);

function lineOf(tool: ManifestTool): fc.Arbitrary<string[]> {
  // Required flags usually present, so that most lines get past the fast path's own check.
  const required = tool.options.filter((o) => o.required);
  const all = tool.options.length ? tool.options.map(flagOf) : [extra];
  return fc
    .tuple(
      fc.tuple(...(required.length ? required.map(flagOf) : [fc.constant([] as string[])])),
      fc.array(
        fc.oneof({ weight: 4, arbitrary: fc.oneof(...all) }, { weight: 1, arbitrary: extra }),
        {
          maxLength: 5,
        },
      ),
    )
    .chain(([req, more]) => fc.shuffledSubarray([...req, ...more], { minLength: req.length }))
    .map((parts) => parts.flat());
}

async function viaCommandTable(tool: ManifestTool, rest: string[]) {
  calls.length = 0;
  let stderr = '';
  const code = await run([tool.group, tool.sub, ...rest], {
    stdout: () => {},
    stderr: (s) => void (stderr += s),
    env: { HOME: '/nonexistent', PATH: process.env.PATH },
    cwd: '/nonexistent',
    isTTY: false,
  });
  return { code, stderr, sent: calls.length ? calls[0]! : null, count: calls.length };
}

describe('the fast path and the command table', () => {
  it('send the same arguments for every line the fast path takes, over every tool', async () => {
    const tools = await toolManifest();
    expect(tools.length).toBeGreaterThan(30);
    let taken = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...tools).chain((t) => fc.tuple(fc.constant(t), lineOf(t))),
        async ([tool, rest]) => {
          const fast = parseToolFlags(tool, rest);
          if (fast === null) return;
          taken++;
          const table = await viaCommandTable(tool, rest);
          expect(table.stderr, `the command table refused what the fast path took`).toBe('');
          expect(table.count).toBe(1);
          expect(table.sent).toEqual({ tool: tool.name, args: fast.args, json: fast.json });
        },
      ),
      { numRuns: 400 },
    );
    // The property said something: most lines got past the fast path.
    expect(taken).toBeGreaterThan(100);
  }, 240_000);
});
