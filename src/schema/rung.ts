import { z } from 'zod';
import { ZzError } from '../errors.js';
import { actor } from './ids.js';
import { treePathProblem } from './tree-path.js';

// A rung is one Ladder entry, stored as `<path>.rung.json` on refs/zz/ladder (DESIGN §2, §6).
// Its path names a tree location, so it is validated before it can reach a tree or ref.

export const RUNG_KINDS = [
  'repo',
  'directory',
  'file',
  'release',
  'changeset',
  'issue',
  'pull_request',
  'contributor',
  'topic',
] as const;
export const rungKind = z.enum(RUNG_KINDS);
export type RungKind = z.infer<typeof rungKind>;

export const REPO_RUNG_PATH = '_repo';
export const RUNG_FILE_SUFFIX = '.rung.json';

// Where non-tree rungs live. A file or directory rung may still sit under these names (a repo
// may really have an `_issues/` folder); only the kinds below are pinned to their prefix.
export const RUNG_PATH_PREFIX = {
  release: '_releases/',
  changeset: '_changesets/',
  issue: '_issues/',
  pull_request: '_pulls/',
  contributor: '_people/',
  topic: '_topics/',
} as const satisfies Partial<Record<RungKind, string>>;

export const MAX_TITLE_CHARS = 300;
export const MAX_SUMMARY_BYTES = 4 * 1024;
export const MAX_DETAIL_BYTES = 256 * 1024;
export const MAX_RUNG_PATH_BYTES = 4096;
const MAX_COMPONENT_BYTES = 255;
const MAX_SYMBOLS = 200;

const utf8Bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

/** Why `path` cannot be a rung path, or null when it can. */
export function rungPathProblem(path: string): string | null {
  if (typeof path !== 'string' || path.length === 0) return 'is empty';
  if (utf8Bytes(path) > MAX_RUNG_PATH_BYTES) return `is longer than ${MAX_RUNG_PATH_BYTES} bytes`;
  // Control characters (NUL above all) cannot be stored in a tree or survive a commit message.
  if (/[\u0000-\u001f\u007f]/.test(path)) return 'contains a control character';
  if (path.includes('\\')) return 'contains a backslash';
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) return 'is absolute';
  if (path.startsWith('-')) return 'starts with "-"';
  // The tree-path policy the store enforces on every write (depth, bidi, C1 controls too).
  const tree = treePathProblem(path);
  if (tree !== null) return tree;
  for (const c of path.split('/')) {
    if (c.length === 0) return 'has an empty component';
    if (c === '.' || c === '..') return `has a "${c}" component`;
    // Case-insensitive: `.GIT` is `.git` on macOS and Windows checkouts.
    if (c.toLowerCase() === '.git') return 'has a ".git" component';
    if (c.toLowerCase().endsWith('.lock')) return 'has a component ending in ".lock"';
    if (utf8Bytes(c) > MAX_COMPONENT_BYTES)
      return `has a component longer than ${MAX_COMPONENT_BYTES} bytes`;
  }
  return null;
}

/** Throws ZzError invalid_argument naming the path when it is not a safe rung path. */
export function validateRungPath(path: string): string {
  const problem = rungPathProblem(path);
  if (problem !== null) {
    const shown = typeof path === 'string' ? JSON.stringify(path.slice(0, 200)) : String(path);
    throw new ZzError('invalid_argument', `rung path ${shown} ${problem}`, { field: 'path', path });
  }
  return path;
}

/** `src/index.js` → `src/index.js.rung.json`; `_repo` → `_repo.rung.json`. */
export function rungFilePath(path: string): string {
  return validateRungPath(path) + RUNG_FILE_SUFFIX;
}

/** The inverse of rungFilePath: a ladder tree file back to its rung path (validated). */
export function rungPathFromFile(file: string): string {
  if (
    typeof file !== 'string' ||
    !file.endsWith(RUNG_FILE_SUFFIX) ||
    file.length === RUNG_FILE_SUFFIX.length
  ) {
    throw new ZzError(
      'invalid_argument',
      `${JSON.stringify(String(file).slice(0, 200))} is not a rung file`,
      {
        field: 'path',
        path: file,
      },
    );
  }
  return validateRungPath(file.slice(0, -RUNG_FILE_SUFFIX.length));
}

/** Why `kind` cannot live at `path` (e.g. a release outside `_releases/`), or null. */
export function rungKindProblem(path: string, kind: RungKind): string | null {
  if (kind === 'repo')
    return path === REPO_RUNG_PATH ? null : `a repo rung must be at "${REPO_RUNG_PATH}"`;
  if (path === REPO_RUNG_PATH) return `"${REPO_RUNG_PATH}" is reserved for the repo rung`;
  if (kind === 'file' || kind === 'directory') return null;
  const prefix = RUNG_PATH_PREFIX[kind];
  return path.startsWith(prefix) && path.length > prefix.length
    ? null
    : `a ${kind} rung must be under "${prefix}"`;
}

const hexOid = z.string().regex(/^(?:[0-9a-f]{40}|[0-9a-f]{64})$/, 'must be a full hex object id');

export const rungAnchor = z.strictObject({
  /** The commit the rung was written against. */
  commit: hexOid,
  /** The path's object at that commit (blob for a file, tree for a directory or the repo). */
  oid: hexOid,
});
export type RungAnchor = z.infer<typeof rungAnchor>;

export const GENERATOR_METHODS = ['extractive', 'model', 'human'] as const;

export const rungGenerator = z.strictObject({
  method: z.enum(GENERATOR_METHODS),
  model: z.string().min(1).max(200).optional(),
  version: z.string().min(1).max(64),
});
export type RungGenerator = z.infer<typeof rungGenerator>;

const boundedBytes = (min: number, max: number) =>
  z
    .string()
    .min(min)
    .refine((s) => utf8Bytes(s) <= max, `must be at most ${max / 1024} KB of UTF-8`);

/** Kinds whose rungs describe repository content and therefore must cite a commit. */
export const ANCHORED_KINDS: ReadonlySet<RungKind> = new Set([
  'repo',
  'directory',
  'file',
  'release',
  'changeset',
]);

export const rungPath = z.string().superRefine((p, ctx) => {
  const problem = rungPathProblem(p);
  if (problem !== null) ctx.addIssue({ code: 'custom', message: `rung path ${problem}` });
});

export const rungDoc = z
  .strictObject({
    path: rungPath,
    kind: rungKind,
    title: z.string().min(1).max(MAX_TITLE_CHARS),
    summary: boundedBytes(1, MAX_SUMMARY_BYTES),
    detail: boundedBytes(0, MAX_DETAIL_BYTES).optional(),
    symbols: z.array(z.string().min(1).max(200)).max(MAX_SYMBOLS).optional(),
    anchor: rungAnchor.optional(),
    /** Hash of exactly what the generator consumed; unchanged inputs → the rung is not rewritten. */
    inputs_hash: z.string().regex(/^[0-9a-f]{40,128}$/, 'inputs_hash must be a hex digest'),
    generator: rungGenerator,
    author: actor,
    written_at: z.iso.datetime({ offset: true }),
  })
  .superRefine((r, ctx) => {
    if (rungPathProblem(r.path) !== null) return;
    const problem = rungKindProblem(r.path, r.kind);
    if (problem !== null) ctx.addIssue({ code: 'custom', path: ['kind'], message: problem });
    if (r.anchor === undefined && ANCHORED_KINDS.has(r.kind)) {
      ctx.addIssue({
        code: 'custom',
        path: ['anchor'],
        message: `a ${r.kind} rung must cite a commit (anchor)`,
      });
    }
  });
export type Rung = z.infer<typeof rungDoc>;
