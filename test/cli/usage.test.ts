import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { makeRepo } from '../helpers/temp-repo.js';
import { ERROR_CODES } from '../../src/errors.js';
import { exitCodesText } from '../../src/cli/usage.js';
import { toolOptions } from '../../src/cli/tool-options.js';
import type { ToolDef } from '../../src/tools/index.js';
import { z } from 'zod';

// The command line as a user meets it (issue 13.8): required flags marked and named when
// missing, numbers and choices explained, did-you-mean, --version, the full command list,
// exit codes documented from the one table, shell completion.

const ROOT = join(import.meta.dirname, '..', '..');
let repo: { dir: string; cleanup: () => void };
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  repo = makeRepo();
  env = cliEnv();
  expect((await zz(repo.dir, env, 'init')).code).toBe(0);
  expect((await zz(repo.dir, env, 'lane', 'propose', '--lane-id', 'x', '--title', 'X')).code).toBe(
    0,
  );
});
afterAll(() => repo.cleanup());

const run = (...argv: string[]) => zz(repo.dir, env, ...argv);

describe('flags', () => {
  it('--help marks required flags', async () => {
    const h = await run('ask', 'post', '--help');
    expect(h.code).toBe(0);
    // A flag's entry, with the lines its description wrapped onto.
    const line = (flag: string) => {
      const lines = h.stdout.split('\n');
      const i = lines.findIndex((l) => l.includes(`--${flag} `));
      const end = lines.findIndex((l, j) => j > i && /^\s+-/.test(l));
      return lines.slice(i, end).join(' ');
    };
    expect(line('kind')).toMatch(/\[required\]/);
    expect(line('title')).toMatch(/\[required\]/);
    expect(line('body')).not.toMatch(/\[required\]/);
  });

  it('a missing flag is named as the flag', async () => {
    const r = await run('ask', 'post', '--lane-id', 'x', '--title', 'T');
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('zz: missing required flag --kind\n');
    const two = await run('ask', 'post', '--lane-id', 'x');
    expect(two.stderr).toBe('zz: missing required flags --kind, --title\n');
    // --args may carry them instead.
    const viaArgs = await run('ask', 'post', '--args', '{"lane_id":"x","kind":"work","title":"T"}');
    expect(viaArgs.code).toBe(0);
  });

  it('a number flag says what it must be', async () => {
    const args = ['ask', 'post', '--lane-id', 'x', '--kind', 'work', '--title', 'T'];
    const word = await run(...args, '--priority', 'high');
    expect(word.code).toBe(2);
    expect(word.stderr).toBe('zz: --priority must be a whole number from 0 to 4\n');
    expect((await run(...args, '--priority', '9')).stderr).toBe(
      'zz: --priority must be a whole number from 0 to 4\n',
    );
    expect((await run(...args, '--priority', '1.5')).code).toBe(2);
    expect((await run(...args, '--priority', '4')).code).toBe(0);
  });

  it('unknown flags are named as typed, with the nearest known flag', async () => {
    const r = await run('lane', 'propose', '--lane-id', 'y', '--titel', 'Y');
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('zz: unknown flag --titel; did you mean --title?\n');
    const r2 = await run('lane', 'propose', '--lane-id', 'y', '--title', 'Y', '--some-thing', '1');
    expect(r2.stderr).toBe('zz: unknown flag --some-thing\n'); // never its camelCase twin
    // A word of another flag of the command is pointed at that flag.
    const r3 = await run('git', 'log', '--order', 'newest');
    expect(r3.stderr).toMatch(
      /^zz: --order must be one of .*"topo".* \(got "newest"\); did you mean --direction newest\?\n$/,
    );
    expect((await run('git', 'log', '--order', 'sideways')).stderr).not.toMatch(/did you mean/);
  });

  it('help and completion list each flag once; the snake_case spelling still works', async () => {
    const h = await run('ask', 'post', '--help');
    expect(h.stdout).toMatch(/^ +--lane-id +\[string\] \[required\]$/m);
    expect(h.stdout).not.toContain('lane_id');
    expect(h.stdout).not.toContain('idempotency_key');
    const flags = await run('--get-yargs-completions', 'zz', 'ask', 'post', '--');
    expect(flags.stdout.split('\n')).toContain('--depends-on');
    expect(flags.stdout).not.toContain('_');
    const snake = await run('ask', 'post', '--lane_id', 'x', '--kind', 'work', '--title', 'S');
    expect(snake.stderr).toBe('');
    expect(snake.code).toBe(0);
    // A misspelt snake_case flag is still named, and a value is never rewritten.
    const typo = await run('ask', 'post', '--lane_idd', 'x', '--kind', 'work', '--title', 'S');
    expect(typo.stderr).toBe('zz: unknown flag --lane-idd; did you mean --lane-id?\n');
    const value = await run(
      ...['ask', 'post', '--lane-id', 'x', '--kind', 'work', '--title=--not_a_flag', '--json'],
    );
    expect(value.json().ask.title).toBe('--not_a_flag');
  });

  it('a misspelt command gets a suggestion', async () => {
    const r = await run('lane', 'lsit');
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('zz: unknown command lsit; did you mean list?\n');
    expect((await run('lnae', 'list')).stderr).toBe(
      'zz: unknown command lnae; did you mean lane?\n',
    );
  });

  it('an unknown command far from any listed one is named, and hidden commands are not offered', async () => {
    // yargs offered `hook` (git's, hidden from help) for both, and dropped the word typed.
    for (const word of ['frob', 'hok']) {
      const r = await run(word);
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(`zz: unknown command ${word}; \`zz help\` lists the commands\n`);
    }
  });
});

describe('options from a schema', () => {
  it('a list of words is a repeatable flag with choices (ask list --state open --state claimed)', () => {
    const tool = {
      input: z.strictObject({
        state: z.array(z.enum(['open', 'claimed'])).optional(),
        kind: z.array(z.string()).optional(),
        payload: z.array(z.object({ a: z.number() })).optional(),
      }),
    } as unknown as ToolDef;
    const byKey = Object.fromEntries(toolOptions(tool).map((o) => [o.key, o]));
    expect(byKey.state).toMatchObject({ kind: 'array', choices: ['open', 'claimed'] });
    expect(byKey.kind).toMatchObject({ kind: 'array' });
    expect(byKey.kind!.choices).toBeUndefined();
    expect(byKey.payload).toMatchObject({ kind: 'json' });
  });
});

describe('help, version, exit codes, completion', () => {
  it('zz --version exits 0 with the version of package.json', async () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const r = await run('--version');
    expect(r).toMatchObject({ code: 0, stdout: `${pkg.version}\n`, stderr: '' });
  });

  it('top-level help lists every command, ladder build included, and the exit codes', async () => {
    const r = await run('--help');
    expect(r.code).toBe(0);
    for (const c of ['init', 'serve', 'login', 'agent', 'mcp', 'call', 'help', 'completion'])
      expect(r.stdout).toMatch(new RegExp(`^  zz ${c}\\b`, 'm'));
    expect(r.stdout).toMatch(/^ {2}zz ladder +read, .*\bbuild\b/m);
    expect(r.stdout).toMatch(/Exit codes: 0 success, 1 internal error, 2 invalid/);
    expect((await run('ladder', '--help')).stdout).toMatch(/zz ladder build/);
  });

  it('zz help exit-codes prints every exit code of the error table', async () => {
    const r = await run('help', 'exit-codes');
    expect(r.code).toBe(0);
    for (const [code, { exit }] of Object.entries(ERROR_CODES)) {
      expect(r.stdout).toMatch(new RegExp(`^  ${exit}  [^\\n]*\\n     \\([^)]*\\b${code}\\b`, 'm'));
    }
  });

  it("the README's exit-code table is the one in the source", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const m = /<!-- exit-codes:begin[^>]*-->\n([\s\S]*?)\n<!-- exit-codes:end -->/.exec(readme);
    expect(m, 'README.md has the exit-codes block').not.toBeNull();
    const norm = (s: string) => s.replace(/ +/g, ' ').replace(/-{3,}/g, '---').trim();
    expect(
      norm(m![1]!),
      `README.md's exit-code table is stale (errors.ts changed); paste this between the markers:\n${exitCodesText(true)}\n`,
    ).toBe(norm(exitCodesText(true)));
  });

  it('zz completion prints a script, and completes commands and flags', async () => {
    const script = await run('completion');
    expect(script.code).toBe(0);
    expect(script.stdout).toContain('--get-yargs-completions');
    const subs = await run('--get-yargs-completions', 'zz', 'lane', '');
    expect(subs.stdout.split('\n')).toEqual(expect.arrayContaining(['propose', 'list', 'get']));
    const flags = await run('--get-yargs-completions', 'zz', 'lane', 'propose', '--');
    expect(flags.stdout.split('\n')).toEqual(expect.arrayContaining(['--title', '--lane-id']));
  });

  it('zz help with an unknown topic names the topics, not a --topic flag', async () => {
    const r = await run('help', 'nope');
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      'zz: no help topic "nope"; the topics are: exit-codes. A command\'s help: zz <command> --help (e.g. zz lane --help)\n',
    );
    expect((await run('help')).stdout).toMatch(/^Commands:/m);
  });

  it('ladder build --max-files without --model is refused, not ignored', async () => {
    const r = await run('ladder', 'build', '--max-files', '3');
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      'zz: --max-files caps the files a model summarises, so it needs --model (without it the build is extractive and makes no model calls)\n',
    );
  });

  it('every flag of the hand-written commands says what it does in --help', async () => {
    const commands = [
      ['init'],
      ['serve'],
      ['login'],
      ['logout'],
      ['whoami'],
      ['agent', 'create'],
      ['agent', 'token'],
      ['agent', 'list'],
      ['agent', 'revoke'],
      ['mcp'],
      ['dashboard'],
      ['work'],
      ['sync'],
      ['ladder', 'build'],
    ];
    for (const c of commands) {
      const h = await run(...c, '--help');
      expect(h.code).toBe(0);
      // A flag followed by nothing but its [type]: no description.
      const bare = h.stdout.split('\n').filter((l) => /^\s+(?:-\w, )?--[\w-]+\s+\[\w+\]/.test(l));
      expect(bare, `zz ${c.join(' ')} --help`).toEqual([]);
    }
  });
});

describe("refused arguments, in the caller's terms", () => {
  it("says what is wrong with the value, not zod's check, and names the field once", async () => {
    const post = ['ask', 'post', '--kind', 'work'];
    const empty = await run(...post, '--lane-id', 'x', '--title', '');
    expect(empty.code).toBe(2);
    expect(empty.stderr).toBe('zz: title: must not be empty\n');
    const badLane = await run(...post, '--lane-id', 'No Such', '--title', 'T');
    expect(badLane.stderr).toBe(
      'zz: lane_id must match [a-z0-9][a-z0-9._-]{0,62} (or be "_repo")\n',
    );
    const call = (args: object) => run('call', 'ask_list', '--args', JSON.stringify(args));
    expect((await call({ state: ['nope'] })).stderr).toBe(
      'zz: state.0: must be one of "open", "claimed", "answered", "cancelled"\n',
    );
    expect((await call({ limit: 0 })).stderr).toBe('zz: limit: must be at least 1\n');
    expect((await call({ limit: 1.5 })).stderr).toBe(
      'zz: limit: must be a whole number (got a fraction)\n',
    );
    expect((await call({ lane_id: 5 })).stderr).toBe(
      'zz: lane_id: must be a string (got a number)\n',
    );
  });
});
