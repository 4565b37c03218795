import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { ZzError } from '../../src/errors.js';
import { LadderSearch, type IndexRung, type SearchHit } from '../../src/search/index.js';

// The LadderSearch tests' testbed (ladder-index*.test.ts): two small repositories' rungs (API,
// WEB), a fresh cache directory per case under one temporary root, and every index opened
// closed before that root goes.

export const oid = (n: number): string => n.toString(16).padStart(40, '0');
export const anchor = (n: number) => ({ commit: oid(1000 + n), oid: oid(2000 + n) });

export const API: IndexRung[] = [
  {
    path: '_repo',
    kind: 'repo',
    title: 'acme/api',
    summary: 'HTTP API server for the Acme store: configuration, routing and persistence.',
    anchor: anchor(1),
  },
  {
    path: 'src',
    kind: 'directory',
    title: 'src/',
    summary: 'Source of the API server. 12 files and 3 folders.',
    anchor: anchor(2),
  },
  {
    path: 'src/config/parse-config.ts',
    kind: 'file',
    title: 'parse-config.ts',
    summary: 'Reads the YAML configuration file and validates it against the schema.',
    symbols: ['parseConfigFile', 'ConfigError', 'DEFAULT_PORT'],
    anchor: anchor(3),
  },
  {
    path: 'src/http/server.ts',
    kind: 'file',
    title: 'server.ts',
    summary: 'Starts the HTTP server, binds 127.0.0.1 and mounts the router.',
    symbols: ['startServer', 'HttpServer'],
    anchor: anchor(4),
  },
  {
    path: 'src/db/migrate.py',
    kind: 'file',
    title: 'migrate.py',
    summary: 'Applies database migrations in order.',
    symbols: ['run_migrations', 'MigrationError'],
    anchor: anchor(5),
  },
  {
    path: 'docs/guide.md',
    kind: 'file',
    title: 'Operator guide',
    summary: 'How to parse the config, start the server and rotate credentials.',
    anchor: anchor(6),
  },
  {
    path: '_releases/v1.2.0',
    kind: 'release',
    title: 'v1.2.0',
    summary: 'v1.2.0: 14 commits since v1.1.0. Features: configuration reload without restart.',
    anchor: anchor(7),
  },
  {
    path: '_changesets/' + oid(77),
    kind: 'changeset',
    title: 'fix(config): accept an empty configuration file',
    summary:
      'fix(config): accept an empty configuration file. 2 files changed (+20 −3), in src/config (2).',
    anchor: { commit: oid(77), oid: oid(77) },
  },
  {
    path: '_issues/12',
    kind: 'issue',
    title: 'Server crashes on empty config',
    summary: 'Server crashes on empty config.',
  },
];

export const WEB: IndexRung[] = [
  {
    path: '_repo',
    kind: 'repo',
    title: 'acme/web',
    summary: 'Storefront web client rendering the catalogue and the checkout.',
    anchor: anchor(11),
  },
  {
    path: 'src/config.ts',
    kind: 'file',
    title: 'config.ts',
    summary: 'Client configuration: API base URL and feature flags.',
    symbols: ['loadClientConfig'],
    anchor: anchor(12),
  },
  {
    path: 'src/checkout/cart.tsx',
    kind: 'file',
    title: 'cart.tsx',
    summary: 'Shopping cart component with quantity editing.',
    symbols: ['CartView', 'useCart'],
    anchor: anchor(13),
  },
];

let root: string;
let n = 0;
export const freshDir = async () => mkdtemp(join(root, `case-${n++}-`));

// Every index a test opened, closed before the directory goes: one left open may still be
// persisting a shard into it (ENOTEMPTY from rm, seen in CI).
export const opened: LadderSearch[] = [];
export function openSearch(opts: ConstructorParameters<typeof LadderSearch>[0]): LadderSearch {
  const ls = new LadderSearch(opts);
  opened.push(ls);
  return ls;
}

export async function twoRepos(dir?: string): Promise<LadderSearch> {
  const ls = openSearch({ cacheDir: dir ?? (await freshDir()), persistDelayMs: 0 });
  await ls.setRepo('acme/api', oid(1), API);
  await ls.setRepo('acme/web', oid(2), WEB);
  return ls;
}

export const paths = (hits: SearchHit[]) => hits.map((h) => `${h.repo}:${h.path}`);

export function expectInvalid(fn: () => unknown, field?: string): void {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(ZzError);
  expect((err as ZzError).code).toBe('invalid_argument');
  if (field) expect((err as ZzError).details).toMatchObject({ field });
}

/** Call once at the top of the file: the temporary root made before its tests, removed after. */
export function ladderSearchTestbed(): void {
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'zz-search-test-'));
  });
  afterAll(async () => {
    // splice: the module outlives the file in the shared process; the next file's opened anew.
    await Promise.allSettled(opened.splice(0).map((ls) => ls.close()));
    await rm(root, { recursive: true, force: true, maxRetries: 5 });
  });
}
