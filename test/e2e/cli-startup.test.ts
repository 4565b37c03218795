import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import module from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo } from '../helpers/temp-repo.js';
import { ensureBuilt, killAll, privateEnv, serve, zz } from './zz-process.js';

// Lean start-up: every CLI invocation pays for what main.js loads before it does anything, so
// the heavy packages (the MCP SDK, search, file watching, GitHub, isomorphic-git) must load
// only on the paths that use them. The guard here is which modules a command loads (exact, from
// a module hook); wall times are measured in bench/cli-startup.ts, not asserted in tests.

const HEAVY = ['@modelcontextprotocol', 'minisearch', 'chokidar', '@octokit', 'isomorphic-git'];
/** What only the daemon, search, models, GitHub, MCP and the dashboard use. */
const SERVICES = [
  ...HEAVY,
  'ai',
  '@ai-sdk',
  'preact',
  'htm',
  'dist/daemon',
  'dist/search',
  'dist/models',
  'dist/github',
  'dist/web',
  'dist/mcp',
];

let hookDir: string;
let hookImport: string;

beforeAll(() => {
  ensureBuilt();
  // A resolve hook that appends every module URL to $ZZ_LOAD_LOG. Hooks run off the main
  // thread, so it writes synchronously: main.js exits with process.exit().
  hookDir = mkdtempSync(join(tmpdir(), 'zz-startup-hook-'));
  writeFileSync(
    join(hookDir, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';
let file;
export function initialize(data) { file = data.file; }
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  appendFileSync(file, r.url + '\\n');
  return r;
}
`,
  );
  writeFileSync(
    join(hookDir, 'register.mjs'),
    `import { register } from 'node:module';
register(${JSON.stringify(pathToFileURL(join(hookDir, 'hooks.mjs')).href)}, { data: { file: process.env.ZZ_LOAD_LOG } });
`,
  );
  hookImport = pathToFileURL(join(hookDir, 'register.mjs')).href;
}, 180_000);

afterAll(() => rmSync(hookDir, { recursive: true, force: true }));

const cleanups: Array<() => void> = [];
afterEach(async () => {
  await killAll();
  for (const c of cleanups.splice(0)) c();
});

/** A fresh load log and the environment that makes a zz process write it. */
function logged(env: NodeJS.ProcessEnv, name: string) {
  const log = join(hookDir, `load-${name.replace(/\W+/g, '_')}-${Date.now()}.txt`);
  writeFileSync(log, '');
  return { log, env: { ...env, ZZ_LOAD_LOG: log, NODE_OPTIONS: `--import=${hookImport}` } };
}

/** The node_modules packages (and dist folders) `zz ARGS` loads. */
async function loaded(
  cwd: string,
  env: NodeJS.ProcessEnv,
  args: string[],
  exit = 0,
): Promise<string[]> {
  const l = logged(env, args.join('-'));
  const r = await zz(cwd, l.env, args);
  expect(r.code, r.stderr).toBe(exit);
  return packagesIn(l.log);
}

function packagesIn(log: string): string[] {
  const urls = readFileSync(log, 'utf8').split('\n').filter(Boolean);
  expect(urls.some((u) => u.endsWith('/dist/cli/main.js'))).toBe(true); // the hook saw the entry
  const names = urls.flatMap((u) => {
    // The daemon's address file is read by every client: it is not the daemon.
    if (u.endsWith('/dist/daemon/daemon-file.js')) return [];
    const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u);
    if (m) return [m[1]!];
    const d = /\/dist\/([^/]+)\//.exec(u);
    // core by file too: which use cases a command loads.
    if (d?.[1] === 'core') return ['dist/core', u.slice(u.lastIndexOf('/dist/core/') + 1)];
    return d ? [`dist/${d[1]}`] : [];
  });
  return [...new Set(names)].sort();
}

/** Those of `pkgs` that are `names` or under them (`@ai-sdk` holds `@ai-sdk/openai`). */
const among = (pkgs: string[], names: string[]): string[] =>
  pkgs.filter((p) => names.some((n) => p === n || p.startsWith(`${n}/`)));

describe('CLI start-up (spawned dist/cli/main.js)', { timeout: 120_000 }, () => {
  it('--version loads no package and help loads neither zod nor the tool registry', async () => {
    // Agents run `zz --version` and `zz … --help` to find their way: the tool registry (zod,
    // core, git) cost ~0.6 s of CPU there. The command table comes from the manifest
    // (src/cli/tool-manifest.ts) and each handler loads what it uses.
    const r = makeRepo('zz-startup-help-');
    cleanups.push(r.cleanup);
    const env = privateEnv();
    const version = await loaded(r.dir, env, ['--version']);
    expect(version, 'zz --version loads only dist/cli and dist/local').toEqual(
      ['dist/cli', 'dist/local'].filter((d) => version.includes(d)),
    );
    const lean = ['zod', 'dist/tools', 'dist/core', 'dist/store', 'dist/search', ...HEAVY];
    const helps = [['--help'], ['lane', '--help'], ['lane', 'list', '--help'], ['work', '--help']];
    for (const args of helps) {
      const pkgs = await loaded(r.dir, env, args);
      expect(pkgs, `zz ${args.join(' ')} takes the command table`).toContain('yargs');
      for (const heavy of lean) {
        expect(
          pkgs.filter((p) => p.startsWith(heavy)),
          `zz ${args.join(' ')} must not load ${heavy}`,
        ).toEqual([]);
      }
    }
  });

  it('commands that need no daemon, search or model load none; a parsed tool command loads no yargs', async () => {
    // A module imported at the top of a file these commands load (the daemon, the search
    // index, the model clients) makes every `zz` pay for it: this list goes red first.
    // A tool command whose flags parse runs without the command table (fast-path.ts), in-process
    // when no daemon serves the checkout.
    const r = makeRepo('zz-startup-lean-');
    cleanups.push(r.cleanup);
    const env = privateEnv();
    // Not initialised yet: `lane list` answers and hints at `zz init`.
    const fresh = await loaded(r.dir, env, ['lane', 'list']);
    expect((await zz(r.dir, env, ['init', '--no-fetch'])).code).toBe(0);
    const report: Record<string, string[]> = {
      'lane list (not initialised)': fresh,
      'init --no-fetch': await loaded(r.dir, env, ['init', '--no-fetch']),
      'lane list': await loaded(r.dir, env, ['lane', 'list']),
      'ask list --json': await loaded(r.dir, env, ['ask', 'list', '--json']),
      'ask post': await loaded(r.dir, env, [
        'ask',
        'post',
        '--lane-id',
        '_repo',
        '--kind',
        'work',
        '--title',
        'cold start',
      ]),
      whoami: await loaded(r.dir, env, ['whoami']),
      // No remote: nothing to sync with, said as an error; it still must not load them.
      sync: await loaded(r.dir, env, ['sync'], 4),
      help: await loaded(r.dir, env, ['help']),
    };
    for (const [cmd, pkgs] of Object.entries(report)) {
      expect(among(pkgs, SERVICES), `zz ${cmd} must load no daemon, search or models`).toEqual([]);
    }
    for (const cmd of ['lane list (not initialised)', 'lane list', 'ask list --json', 'ask post'])
      expect(among(report[cmd]!, ['yargs']), `zz ${cmd} runs without yargs`).toEqual([]);
    // The registry loads each tool's use cases with its first call (src/tools/*-tools.ts): a
    // Lane or Ask command loads neither the Ladder's builder nor the sandbox nor git's readers.
    const elsewhere = [
      'dist/core/ladder/build.js',
      'dist/core/ladder/extract',
      'dist/core/changesets-sandbox.js',
      'dist/core/git-reads.js',
    ];
    for (const cmd of ['lane list', 'ask list --json', 'ask post'])
      expect(among(report[cmd]!, elsewhere), `zz ${cmd} loads only its use cases`).toEqual([]);
  });

  it("keeps Node's compile cache in the user's cache dir, else a temp dir only this user can write", async () => {
    // Node ≥ 22.1 has module.enableCompileCache (src/cli/compile-cache.ts); Node 20 does not,
    // and there zz must write nothing. The spawned zz runs on this same Node.
    const has =
      typeof (module as { enableCompileCache?: unknown }).enableCompileCache === 'function';
    const r = makeRepo('zz-startup-cache-');
    cleanups.push(r.cleanup);
    const tmp = mkdtempSync(join(tmpdir(), 'zz-startup-tmp-'));
    cleanups.push(() => rmSync(tmp, { recursive: true, force: true }));
    const env = privateEnv({ TMPDIR: tmp });
    expect((await zz(r.dir, env, ['--version'])).code).toBe(0);
    const cache = join(env.XDG_CACHE_HOME!, 'zz', 'node-compile-cache');
    expect(existsSync(cache), cache).toBe(has);
    if (has) expect(readdirSync(cache).length).toBeGreaterThan(0);
    // A cache home that cannot be made (a file in its way): a directory of our own in TMPDIR.
    writeFileSync(join(tmp, 'not-a-dir'), '');
    const blocked = { ...env, XDG_CACHE_HOME: join(tmp, 'not-a-dir') };
    expect((await zz(r.dir, blocked, ['--version'])).code).toBe(0);
    const own = join(tmp, `zz-node-compile-cache-${process.getuid!()}`);
    expect(existsSync(own), own).toBe(has);
    if (!has) return;
    expect(statSync(own).mode & 0o777).toBe(0o700);
    // One that others could write to is code they would run as us: not used, and no failure.
    rmSync(own, { recursive: true });
    mkdirSync(own);
    chmodSync(own, 0o777);
    expect((await zz(r.dir, blocked, ['--version'])).code).toBe(0);
    expect(readdirSync(own)).toEqual([]);
    // The same for the user's own cache dir (`sudo -E zz` reads the user's): one others can
    // write to is passed over for ours in TMPDIR.
    rmSync(own, { recursive: true });
    rmSync(cache, { recursive: true });
    mkdirSync(cache);
    chmodSync(cache, 0o777);
    expect((await zz(r.dir, env, ['--version'])).code).toBe(0);
    expect(readdirSync(cache)).toEqual([]);
    expect(readdirSync(own).length).toBeGreaterThan(0);
    // A relative XDG_CACHE_HOME is ignored (the XDG spec): never a cache inside the checkout.
    rmSync(cache, { recursive: true });
    expect((await zz(r.dir, { ...env, XDG_CACHE_HOME: 'rel' }, ['--version'])).code).toBe(0);
    expect(existsSync(join(r.dir, 'rel')), 'cache in the checkout').toBe(false);
    const home = join(env.HOME!, '.cache', 'zz', 'node-compile-cache');
    expect(readdirSync(home).length).toBeGreaterThan(0);
  });

  it('loads no heavy package for --help or lane list, in-process or through a daemon', async () => {
    const r = makeRepo('zz-startup-');
    cleanups.push(r.cleanup);
    const env = privateEnv();
    expect((await zz(r.dir, env, ['init'])).code).toBe(0);
    const report: Record<string, string[]> = {};
    report['--help'] = await loaded(r.dir, env, ['--help']);
    report['lane list (in-process)'] = await loaded(r.dir, env, ['lane', 'list']);
    report['mcp --help'] = await loaded(r.dir, env, ['mcp', '--help']);
    await serve(r.dir, env);
    expect((await zz(r.dir, env, ['login'])).code).toBe(0);
    report['lane list (daemon)'] = await loaded(r.dir, env, ['lane', 'list']);
    const post = ['ask', 'post', '--lane-id', '_repo', '--kind', 'work', '--title', 'a'];
    report['ask post (daemon)'] = await loaded(r.dir, env, post);
    // Through the daemon a tool command is one HTTP request: no schema, no core, no yargs.
    for (const cmd of ['lane list (daemon)', 'ask post (daemon)']) {
      expect(
        among(report[cmd]!, ['zod', 'yargs', 'dist/core', 'dist/tools', ...SERVICES]),
        `zz ${cmd} takes the fast path`,
      ).toEqual([]);
    }
    // The guard sees lazy imports too: `zz mcp` (stdin closed at once) loads the SDK.
    expect(await loaded(r.dir, env, ['mcp'])).toContain('@modelcontextprotocol/server');
    for (const [cmd, pkgs] of Object.entries(report)) {
      console.log(`zz ${cmd} loads: ${pkgs.join(' ')}`);
      for (const heavy of HEAVY) {
        expect(
          pkgs.filter((p) => p.startsWith(heavy)),
          `zz ${cmd} must not load ${heavy}`,
        ).toEqual([]);
      }
    }
  });

  it('zz serve loads the GitHub, model, MCP and page packages only when a request needs them', async () => {
    // Each is megabytes of RSS in a daemon that never uses it (octokit ~2.5, the AI SDK ~7,
    // the MCP SDK ~4.4; see README "Where the daemon's memory goes").
    const r = makeRepo('zz-serve-load-');
    cleanups.push(r.cleanup);
    const env = privateEnv();
    expect((await zz(r.dir, env, ['init'])).code).toBe(0);
    expect((await zz(r.dir, env, ['login'])).code).toBe(0);
    const l = logged(env, 'serve');
    const d = await serve(r.dir, l.env);
    const res = await fetch(`${d.url}/healthz`);
    expect(res.status).toBe(200);
    expect((await zz(r.dir, env, ['lane', 'list'])).code).toBe(0);
    const pkgs = packagesIn(l.log);
    expect(pkgs).toContain('minisearch'); // the hook saw the daemon's own imports
    // yargs and the command table: a plain `zz serve` starts from the fast path (serve.ts).
    const lazies = ['@octokit', 'ai', '@ai-sdk', '@modelcontextprotocol', 'preact', 'htm', 'yargs'];
    for (const lazy of lazies) {
      expect(
        pkgs.filter((p) => p === lazy || p.startsWith(`${lazy}/`)),
        `zz serve must not load ${lazy} before it is used`,
      ).toEqual([]);
    }
  });
});
