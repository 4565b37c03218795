import { readFileSync } from 'node:fs';

/** This zz's version, from its package.json (two levels above this file in src/cli/ and dist/cli/). */
export function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}
