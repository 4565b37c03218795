import { ZzError } from '../errors.js';

// Ref names and tree paths that reach git must be validated before use: a name with `..`, a
// leading `-`, a `.lock` suffix or a NUL could escape the namespace, be read by git as an
// option, or collide with git's lock files.

const BAD_COMPONENT = /^\.|\.lock$|^-|[\0-\x1f\x7f ~^:?*[\\]|\.\.|@\{/;

export function assertRefName(ref: string): string {
  if (!ref.startsWith('refs/') || ref.endsWith('/') || ref.includes('//') || ref.length > 1024) {
    throw new ZzError('invalid_argument', `invalid ref name "${printable(ref)}"`);
  }
  for (const c of ref.split('/')) {
    if (c.length === 0 || BAD_COMPONENT.test(c) || c.endsWith('.')) {
      throw new ZzError('invalid_argument', `invalid ref name "${printable(ref)}"`);
    }
  }
  return ref;
}

/** A path inside a tree we write: relative, no `..`/`.`/`.git` components, no NUL. */
export function assertTreePath(path: string, what = 'path'): string {
  const bad = (why: string) =>
    new ZzError('invalid_argument', `${what} "${printable(path)}" is not allowed: ${why}`);
  if (typeof path !== 'string' || path.length === 0) throw bad('empty');
  if (path.length > 4096) throw bad('too long');
  if (path.includes('\0')) throw bad('contains NUL');
  if (path.startsWith('/') || /^[A-Za-z]:[\\/]/.test(path)) throw bad('absolute');
  if (path.includes('\\')) throw bad('contains a backslash');
  if (path.startsWith('-')) throw bad('starts with "-"');
  for (const c of path.split('/')) {
    if (c === '') throw bad('empty component');
    if (c === '.' || c === '..') throw bad('contains "." or ".."');
    if (isDotGit(c)) throw bad('contains ".git"');
  }
  return path;
}

// Every spelling that git's fsck (is_ntfs_dotgit, is_hfs_dotgit) reads as `.git`: a tree
// holding one fails `git fsck`, is refused by hosts that check pushes, and is unsafe to check
// out on Windows or macOS.
const HFS_IGNORABLE = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g;
function isDotGit(component: string): boolean {
  return (
    /^(\.git|git~1)[. ]*(:.*)?$/i.test(component) ||
    component.replace(HFS_IGNORABLE, '').toLowerCase() === '.git'
  );
}

export function printable(s: string): string {
  return s
    .slice(0, 120)
    .replace(/[\0-\x1f\x7f]/g, (ch) => `\\x${ch.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

export const OID_RE = /^[0-9a-f]{40}$/;

export function assertOid(oid: string, what = 'revision'): string {
  if (typeof oid !== 'string' || !OID_RE.test(oid)) {
    throw new ZzError('invalid_argument', `${what} must be a 40-character hex commit id`);
  }
  return oid;
}
