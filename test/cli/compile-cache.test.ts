import { chmodSync, existsSync, mkdirSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileCacheDirs } from '../../src/cli/compile-cache.js';
import { cacheDir, configDir } from '../../src/local/paths.js';
import { tempDir } from '../helpers/temp-dirs.js';

// Where Node's compile cache may go (src/cli/compile-cache.ts). Node runs what it finds there,
// so a directory someone else can write to is code they run as us: the user's own cache dir is
// checked as the temp one is. Unit-tested: on Node 20 (no compile cache) the spawned zz does
// nothing, and test/e2e/cli-startup.test.ts checks only what it can there.

const uid = process.getuid!();

function setup() {
  const home = tempDir('zz-cc-home-');
  const tmp = tempDir('zz-cc-tmp-');
  const env = { HOME: home, XDG_CACHE_HOME: join(home, 'cache') };
  return {
    env,
    tmp,
    own: join(home, 'cache', 'zz', 'node-compile-cache'),
    shared: join(tmp, `zz-node-compile-cache-${uid}`),
  };
}

describe('the compile cache directory', () => {
  it("is the user's cache dir, made 0700, with the temp one made only if that is refused", () => {
    const { env, tmp, own, shared } = setup();
    expect(compileCacheDirs(env, uid, tmp).next().value).toBe(own);
    expect(statSync(own).mode & 0o777).toBe(0o700);
    expect(existsSync(shared)).toBe(false);
    expect([...compileCacheDirs(env, uid, tmp)]).toEqual([own, shared]);
  });

  it('passes over a main directory that is a link, group/other-writable or not ours', () => {
    for (const spoil of ['link', 'group', 'other', 'owner'] as const) {
      const { env, tmp, own, shared } = setup();
      mkdirSync(join(own, '..'), { recursive: true });
      let asUid = uid;
      if (spoil === 'link') {
        const elsewhere = tempDir('zz-cc-target-');
        chmodSync(elsewhere, 0o700);
        symlinkSync(elsewhere, own);
      } else {
        mkdirSync(own, { mode: 0o700 });
        if (spoil === 'group') chmodSync(own, 0o770);
        if (spoil === 'other') chmodSync(own, 0o757);
        // Owned by someone else (`sudo -E zz`: root, the user's cache): seen from another uid.
        if (spoil === 'owner') asUid = uid + 1;
      }
      const dirs = [...compileCacheDirs(env, asUid, tmp)];
      expect(dirs, spoil).not.toContain(own);
      // The temp one made here is the running uid's, so from another uid it is refused too.
      expect(dirs, spoil).toEqual(spoil === 'owner' ? [] : [shared]);
    }
    // Readable by all is fine: only writing is someone else's code.
    const { env, tmp, own } = setup();
    mkdirSync(own, { recursive: true, mode: 0o755 });
    chmodSync(own, 0o755);
    expect(compileCacheDirs(env, uid, tmp).next().value).toBe(own);
  });

  it('ignores a relative XDG_CACHE_HOME (and XDG_CONFIG_HOME), as the XDG spec says', () => {
    const home = tempDir('zz-cc-home-');
    const rel = { HOME: home, XDG_CACHE_HOME: 'cache', XDG_CONFIG_HOME: 'config' };
    expect(cacheDir(rel)).toBe(join(home, '.cache', 'zz'));
    expect(configDir(rel)).toBe(join(home, '.config', 'zz'));
    expect(compileCacheDirs(rel, uid, tempDir()).next().value).toBe(
      join(home, '.cache', 'zz', 'node-compile-cache'),
    );
    expect(cacheDir({ HOME: home, XDG_CACHE_HOME: '/abs/c' })).toBe('/abs/c/zz');
  });
});
