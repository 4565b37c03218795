// The one syntax policy for a path inside a tree zz writes (hardening 11.8): the user's code
// (changesets, direct commits) and zz's own entities (lanes, asks, rungs) alike. git/ enforces
// it on every tree it builds (ref-names.ts assertTreePath); schema and core call it to refuse a
// path where it enters, naming the problem.

/** Bounds on a path inside a tree we write (below every filesystem's and git's own limits). */
export const TREE_PATH_LIMITS = {
  /** UTF-8 bytes of the whole path. */
  pathBytes: 4096,
  /** UTF-8 bytes of one component (NAME_MAX on ext4, APFS, NTFS). */
  componentBytes: 255,
  /** Components: bounds every recursion over the path (the tree builder's included). */
  depth: 64,
};

// C0 and C1 controls and DEL (they can rewrite a terminal that prints the path), and the
// Unicode bidirectional controls (an override makes "txt.exe" display as "exe.txt").
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

const ENCODER = new TextEncoder();
/**
 * Whether `s` takes more than `max` UTF-8 bytes. A UTF-16 code unit is at most 3 bytes, so a
 * short string needs no encoding: checked on every path of every tree written (a Ladder build
 * checks each of its thousands of rung paths several times), encoding each one showed in
 * profiles.
 */
const overBytes = (s: string, max: number): boolean =>
  s.length * 3 > max && ENCODER.encode(s).length > max;

/** What is wrong with `path` as a path inside a tree, or null when it is fine. */
export function treePathProblem(path: unknown): string | null {
  if (typeof path !== 'string' || path.length === 0) return 'is empty';
  if (overBytes(path, TREE_PATH_LIMITS.pathBytes)) {
    return `is longer than ${TREE_PATH_LIMITS.pathBytes} bytes`;
  }
  if (CONTROL.test(path)) return 'contains a control character';
  if (BIDI.test(path)) return 'contains a bidirectional text control (e.g. U+202E)';
  if (path.startsWith('/') || /^[A-Za-z]:[\\/]/.test(path)) return 'is absolute';
  if (path.includes('\\')) return 'contains a backslash';
  if (path.startsWith('-')) return 'starts with "-"';
  const parts = path.split('/');
  if (parts.length > TREE_PATH_LIMITS.depth) {
    return `is deeper than ${TREE_PATH_LIMITS.depth} directories`;
  }
  for (const c of parts) {
    if (c === '') return 'has an empty component';
    if (c === '.' || c === '..') return `has a "${c}" component`;
    if (isDotGit(c)) return 'has a ".git" component';
    if (overBytes(c, TREE_PATH_LIMITS.componentBytes)) {
      return `has a component longer than ${TREE_PATH_LIMITS.componentBytes} bytes`;
    }
  }
  return null;
}

// Every spelling that git's fsck (is_ntfs_dotgit, is_hfs_dotgit) reads as `.git`: a tree
// holding one fails `git fsck`, is refused by hosts that check pushes, and is unsafe to check
// out on Windows or macOS.
const HFS_IGNORABLE = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g;
function isDotGit(component: string): boolean {
  // Every spelling has a "g" (checked first: this runs on every component of every path).
  if (!component.includes('g') && !component.includes('G')) return false;
  return (
    /^(\.git|git~1)[. ]*(:.*)?$/i.test(component) ||
    component.replace(HFS_IGNORABLE, '').toLowerCase() === '.git'
  );
}
