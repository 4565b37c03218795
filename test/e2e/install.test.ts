import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, ZZ_MAIN, ensureBuilt } from './zz-process.js';

// Getting `zz` onto PATH (issue 13.1): `npm link` puts the checkout's zz on PATH without
// rebuilding a fresh dist/ (`prepare` builds only when dist/ is stale), and the MCP snippets
// run the installed `zz`, never `npx zz`.

const prefix = mkdtempSync(join(tmpdir(), 'zz-npm-prefix-'));
beforeAll(ensureBuilt);
afterAll(() => rmSync(prefix, { recursive: true, force: true }));

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

describe('install', () => {
  it('prepare leaves a fresh build alone', () => {
    const before = statSync(ZZ_MAIN).mtimeMs;
    const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'prepare.mjs')], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/building/);
    expect(statSync(ZZ_MAIN).mtimeMs).toBe(before);
    expect(existsSync(join(ROOT, 'node_modules', '.bin', 'zz'))).toBe(true);
  });

  it('npm link puts zz on PATH; zz --version runs the checkout', () => {
    const before = statSync(ZZ_MAIN).mtimeMs;
    // A private global prefix: the machine's own global packages are never touched.
    const env = { ...process.env, npm_config_prefix: prefix, npm_config_update_notifier: 'false' };
    const link = spawnSync('npm', ['link', '--offline', '--no-audit', '--no-fund'], {
      cwd: ROOT,
      env,
      encoding: 'utf8',
    });
    expect(link.status, link.stderr).toBe(0);
    const bin = join(prefix, 'bin', 'zz');
    expect(existsSync(bin)).toBe(true);
    const v = spawnSync(bin, ['--version'], { encoding: 'utf8' });
    expect(v.status, v.stderr).toBe(0);
    expect(v.stdout).toBe(`${pkg.version}\n`);
    expect(statSync(ZZ_MAIN).mtimeMs).toBe(before);
  });

  it('the MCP snippets and the README run an installed zz, never npx zz', () => {
    const docs = ['README.md', 'docs/walkthrough.md'].map((f) =>
      readFileSync(join(ROOT, f), 'utf8'),
    );
    for (const text of docs) {
      for (const block of text.match(/```[\s\S]*?```/g) ?? []) {
        expect(block).not.toMatch(/npx zz|"command": "npx"|command = "npx"/);
      }
    }
  });
});
