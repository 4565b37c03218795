import { ZzError } from '../errors.js';
import { treePathProblem } from '../schema/tree-path.js';

export { TREE_PATH_LIMITS, treePathProblem } from '../schema/tree-path.js';

// Ref names and tree paths that reach git must be validated before use: a name with `..`, a
// leading `-`, a `.lock` suffix or a NUL could escape the namespace, be read by git as an
// option, or collide with git's lock files.

const BAD_COMPONENT = /^\.|\.lock$|^-|[\0-\x1f\x7f ~^:?*[\\]|\.\.|@\{/;

/**
 * Names found valid, so that the same ref is not split and matched again: a durable write
 * checks its ref four times (GitStore.commit, two reads, the CAS), ~0.7% of its CPU. Bounded:
 * cleared when full. Only valid names are kept; an invalid one is always checked (and refused).
 */
const VALID_REFS = new Set<string>();
const VALID_REFS_MAX = 4096;

export function assertRefName(ref: string): string {
  if (VALID_REFS.has(ref)) return ref;
  if (!ref.startsWith('refs/') || ref.endsWith('/') || ref.includes('//') || ref.length > 1024) {
    throw new ZzError('invalid_argument', `invalid ref name "${printable(ref)}"`);
  }
  for (const c of ref.split('/')) {
    if (c.length === 0 || BAD_COMPONENT.test(c) || c.endsWith('.')) {
      throw new ZzError('invalid_argument', `invalid ref name "${printable(ref)}"`);
    }
  }
  if (VALID_REFS.size >= VALID_REFS_MAX) VALID_REFS.clear();
  VALID_REFS.add(ref);
  return ref;
}

/** A path inside a tree we write: the one policy of schema/tree-path.ts, as an error. */
export function assertTreePath(path: string, what = 'path'): string {
  const problem = treePathProblem(path);
  if (problem !== null) {
    throw new ZzError(
      'invalid_argument',
      `${what} "${printable(String(path))}" is not allowed: it ${problem}`,
      { path: typeof path === 'string' ? path.slice(0, 200) : null },
    );
  }
  return path;
}

export function printable(s: string): string {
  return s
    .slice(0, 120)
    .replace(/[\0-\x1f\x7f-\x9f]/g, (ch) => `\\x${ch.charCodeAt(0).toString(16).padStart(2, '0')}`)
    .replace(
      /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g,
      (ch) => `\\u${ch.charCodeAt(0).toString(16)}`,
    );
}

export const OID_RE = /^[0-9a-f]{40}$/;

export function assertOid(oid: string, what = 'revision'): string {
  if (typeof oid !== 'string' || !OID_RE.test(oid)) {
    throw new ZzError('invalid_argument', `${what} must be a 40-character hex commit id`);
  }
  return oid;
}
