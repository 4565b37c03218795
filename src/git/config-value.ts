import { runGit } from './native-git.js';

/** One `git config --get` value as the checkout at `cwd` sees it, or null when unset. */
export async function gitConfigValue(cwd: string, key: string): Promise<string | null> {
  const r = await runGit(['config', '--get', key], { cwd, okCodes: [1] });
  const v = r.stdout.toString('utf8').trim();
  return v === '' ? null : v;
}
