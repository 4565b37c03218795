import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * A module of another checkout of zz (its sources, through the same tsx loader), for a baseline
 * measured in this process beside this checkout's code (ZZ_BENCH_STORE_BASELINE,
 * ZZ_LOAD_BASELINE). A module of its own: the store bench needs it without the daemon util.ts
 * loads.
 */
export function importFromCheckout<T>(root: string, path: string): Promise<T> {
  return import(pathToFileURL(join(root, path)).href) as Promise<T>;
}
