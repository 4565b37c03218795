import { afterAll, describe, expect, it } from 'vitest';
import { openRepository } from '../../src/git/index.js';
import { GitStore } from '../../src/store/index.js';
import { prng, testSeed } from '../helpers/seeded.js';
import { fsckProblems, makeRepo, sh } from '../helpers/temp-repo.js';

// GitStore writes the next version of a large tree (64 entries or more: a Lane's `asks/`) from
// the last one's bytes when only ids change, writing the new ids in place (TreeImages in
// git-store.ts); anything else (a name added or removed, a file that becomes a directory or
// the reverse) serialises the tree afresh. Whichever way, every tree must be the one git
// makes: checked against a model of the files, read back through a fresh store and by git.

const { dir, cleanup } = makeRepo('zz-tree-images-');
afterAll(() => cleanup());

const REF = 'refs/zz/lanes/images';

describe('large trees written from the last version', () => {
  it('match the model across random updates, additions, removals and kind changes', async () => {
    const seed = testSeed('tree images');
    const rnd = prng(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const repo = await openRepository(dir);
    const store = new GitStore(repo);
    try {
      // `asks/` of 100 fan-out directories and `flat/` of 80 files: both large.
      const model = new Map<string, string>();
      for (let i = 0; i < 300; i++) {
        model.set(`asks/${(i % 100).toString(16).padStart(2, '0')}/a${i}.json`, `{"v":${i}}`);
      }
      for (let i = 0; i < 80; i++) model.set(`flat/f${i}.json`, `{"f":${i}}`);
      model.set('lane.json', '{}');
      let head = await store.commit(REF, {
        parent: null,
        changes: new Map(model),
        ops: [],
        summary: 'create',
      });
      for (let n = 0; n < 120; n++) {
        const changes = new Map<string, string | null>();
        const paths = [...model.keys()];
        for (let k = 1 + Math.floor(rnd() * 3); k > 0; k--) {
          const r = rnd();
          const path = pick(paths);
          if (r < 0.6) {
            changes.set(path, `{"n":${n},"r":${r}}`); // an id changes (the usual Lane op)
          } else if (r < 0.75) {
            const fan = Math.floor(rnd() * 140)
              .toString(16)
              .padStart(2, '0'); // maybe new
            changes.set(`asks/${fan}/new${n}-${k}.json`, `{"new":${n}}`);
          } else if (r < 0.88) {
            changes.set(path, null); // removed; its directory too once empty
          } else if (r < 0.94 && path.startsWith('flat/')) {
            changes.set(`${path}/inner.json`, `{"was":"a file"}`); // file -> directory
          } else if (path.startsWith('asks/')) {
            changes.set(path.split('/').slice(0, 2).join('/'), `{"was":"a directory"}`);
          }
        }
        // The model: a file replaces what was below its name, and a path below a file
        // replaces that file.
        for (const [path, content] of changes) {
          if (content === null) {
            model.delete(path);
            continue;
          }
          for (const p of [...model.keys()]) if (p.startsWith(`${path}/`)) model.delete(p);
          const parts = path.split('/');
          for (let i = 1; i < parts.length; i++) model.delete(parts.slice(0, i).join('/'));
          model.set(path, content);
        }
        // A change below a name that another change of the same commit writes as a file is
        // dropped by the store (the file wins, whatever the order): keep the model to what
        // this commit means. The file is put back too: applied after it, the dropped change
        // had removed it from the model (seed 259671: `asks/0f` then `asks/0f/a15.json`).
        for (const [path] of changes) {
          const parts = path.split('/');
          for (let i = 1; i < parts.length; i++) {
            const above = parts.slice(0, i).join('/');
            const file = changes.get(above);
            if (file != null) {
              model.delete(path);
              model.set(above, file);
            }
          }
        }
        head = await store.commit(REF, { parent: head, changes, ops: [], summary: `c${n}` });
        if (n % 20 === 19) {
          const fresh = new GitStore(repo);
          expect(await fresh.readAll(head), `commit ${n}, seed ${seed}`).toEqual(model);
        }
      }
      const listed = sh(dir, 'ls-tree', '-r', '--name-only', head).split('\n');
      expect(listed.sort(), `seed ${seed}`).toEqual([...model.keys()].sort());
      expect(fsckProblems(dir), `seed ${seed}`).toEqual([]);
    } finally {
      store.close();
      await repo.objects.close();
    }
  }, 120_000);
});
