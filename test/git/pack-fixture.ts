import { execFileSync } from 'node:child_process';
import { expect } from 'vitest';
import { hashObject, type ObjectType } from '../../src/git/index.js';
import { sh } from '../helpers/temp-repo.js';

// What the pack-writer tests (pack-writer*.test.ts) read back from a repository with git itself.

/** Every object reachable from `rev`, read by `git cat-file --batch`: type and body. */
export function catAll(dir: string, rev: string): Map<string, { type: string; body: Buffer }> {
  const oids = sh(dir, 'rev-list', '--objects', rev)
    .split('\n')
    .map((l) => l.slice(0, 40));
  const out = execFileSync('git', ['cat-file', '--batch'], {
    cwd: dir,
    input: oids.join('\n') + '\n',
    maxBuffer: 64 * 1024 * 1024,
  });
  const objects = new Map<string, { type: string; body: Buffer }>();
  let at = 0;
  while (at < out.length) {
    const nl = out.indexOf(10, at);
    const [oid, type, size] = out.subarray(at, nl).toString('latin1').split(' ');
    if (type === 'missing') throw new Error(`object ${oid} is missing`);
    const body = out.subarray(nl + 1, nl + 1 + Number(size));
    objects.set(oid!, { type: type!, body });
    at = nl + 1 + Number(size) + 1;
  }
  return objects;
}

/** Each object's content hashes to its name: what git read is what we wrote. */
export function expectSound(dir: string, rev: string): number {
  const all = catAll(dir, rev);
  for (const [oid, o] of all) expect(hashObject(o.type as ObjectType, o.body).oid).toBe(oid);
  return all.size;
}
