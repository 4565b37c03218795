import { basename } from 'node:path';
import { ZzError } from '../errors.js';
import { CatFile } from './cat-file.js';
import { findCheckoutAt, type Checkout } from './discover.js';
import { readGitConfig, type GitConfig } from './git-config.js';
import { ObjectWriter } from './objects.js';
import { RefStore } from './ref-store.js';

// Repository discovery and the handles every higher layer uses. gitdir is always the
// *common* dir (`git rev-parse --git-common-dir`): refs and objects live there, so a linked
// worktree and the main checkout see the same refs/zz/*.

export interface GitRepository {
  /** The checkout's top level; null for a bare repository. */
  workTree: string | null;
  /** The common git dir (shared by linked worktrees). */
  gitdir: string;
  /** The per-worktree git dir (HEAD, index of this checkout). */
  worktreeGitdir: string;
  objects: ObjectWriter;
  refs: RefStore;
  catFile: CatFile;
  close(): void;
}

export interface OpenOptions {
  /** fsync refs (and objects, unless fsyncObjects says otherwise). Default true. */
  fsync?: boolean;
  /** fsync objects before they can be referenced; default: as `fsync`. Benchmarks only. */
  fsyncObjects?: boolean;
  lockTimeoutMs?: number;
}

/**
 * The checkout around `cwd` (remembered per process: discover.ts), refusing a repository zz
 * cannot work in.
 */
export async function discoverRepository(cwd: string): Promise<Checkout> {
  const repo = await findCheckoutAt(cwd);
  assertSupported(await readGitConfig(cwd));
  return repo;
}

function assertSupported(config: GitConfig): void {
  const refStorage = config.get('extensions.refStorage')?.trim().toLowerCase();
  if (refStorage && refStorage !== 'files') {
    throw new ZzError(
      'unsupported_repository',
      `this repository stores refs as "${refStorage}" (extensions.refStorage); zz supports only the "files" ref backend so far`,
    );
  }
  const objectFormat = config.get('extensions.objectFormat')?.trim().toLowerCase();
  if (objectFormat && objectFormat !== 'sha1') {
    throw new ZzError(
      'unsupported_repository',
      `this repository uses ${objectFormat} object ids (extensions.objectFormat); zz supports only sha1 repositories so far`,
    );
  }
}

export async function openRepository(cwd: string, opts: OpenOptions = {}): Promise<GitRepository> {
  const found = await discoverRepository(cwd);
  const refs = new RefStore(found.gitdir, {
    ...(opts.fsync === undefined ? {} : { fsync: opts.fsync }),
    ...(opts.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: opts.lockTimeoutMs }),
  });
  // Full ref names resolve from the ref files without a git spawn (the common case: tools
  // default to refs/heads/<default branch>); anything else goes through `git rev-parse`.
  const catFile = new CatFile(found.gitdir, (ref) => refs.read(ref));
  // Objects are as durable as refs: every object a ref points to is on disk before the ref
  // moves (README, "Durability").
  const objects = new ObjectWriter(found.gitdir, {
    fsync: opts.fsyncObjects ?? opts.fsync ?? true,
  });
  return {
    ...found,
    objects,
    refs,
    catFile,
    close: () => {
      catFile.close();
      refs.close();
      // A merge of small packs already running finishes on its own (crash-safe if it cannot).
      void objects.close();
    },
  };
}

/**
 * `<owner>/<repo>`: `git config zz.repo`, else the origin URL, else `local/<folder>`. `cwd`: the
 * directory the checkout was found from, whose config snapshot (git-config.ts) is then reused.
 */
export async function repoKeyOf(
  repo: {
    gitdir: string;
    workTree: string | null;
  },
  cwd: string = repo.workTree ?? repo.gitdir,
): Promise<string> {
  const config = await readGitConfig(cwd);
  const cfg = (key: string) => config.get(key)?.trim() ?? '';
  const explicit = cfg('zz.repo');
  if (explicit) return normalizeRepoKey(explicit);
  const origin = cfg('remote.origin.url');
  const fromUrl = origin ? repoKeyFromUrl(origin) : null;
  if (fromUrl) return fromUrl;
  const folder = repo.workTree
    ? basename(repo.workTree)
    : basename(repo.gitdir.replace(/\/\.git$/, ''));
  return normalizeRepoKey(`local/${keyPartOf(folder.replace(/\.git$/, ''))}`);
}

/**
 * A folder name as a key part: "My Project" → "My-Project", "dépôt" → "depot". Names that are
 * already valid come out unchanged (keys, tokens and daemon routes depend on them); before
 * this, a checkout without a remote in a folder with a space failed every command with
 * "invalid repo key".
 */
function keyPartOf(folder: string): string {
  const part = folder
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[^A-Za-z0-9_]+/, '')
    .slice(0, 100)
    .replace(/\.lock$/, '-lock');
  return part || 'repo';
}

export function repoKeyFromUrl(url: string): string | null {
  const m = /[:/]([^/:]+)\/([^/]+?)(?:\.git)?\/?$/.exec(url.trim());
  if (!m) return null;
  try {
    return normalizeRepoKey(`${m[1]}/${m[2]}`);
  } catch {
    return null;
  }
}

const KEY_PART = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$/;

export function normalizeRepoKey(key: string): string {
  const parts = key.split('/');
  if (parts.length !== 2 || !parts.every((p) => KEY_PART.test(p) && !p.endsWith('.lock'))) {
    throw new ZzError(
      'invalid_argument',
      `invalid repo key "${key.slice(0, 100)}": expected <owner>/<repo>`,
    );
  }
  return key;
}
