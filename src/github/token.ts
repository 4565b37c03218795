import { execFile } from 'node:child_process';

// Where a GitHub token comes from: GH_TOKEN, then GITHUB_TOKEN (what `gh` and Actions set),
// then `gh auth token` when the GitHub CLI is installed and logged in. The token is never
// logged or written anywhere; callers only learn where it came from.

export interface ResolvedToken {
  token: string | null;
  source: 'GH_TOKEN' | 'GITHUB_TOKEN' | 'gh auth token' | null;
}

/** Asks `gh auth token` (argv, no shell, 5 s); null when gh is missing or not logged in. */
function ghAuthToken(env: NodeJS.ProcessEnv): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(
      'gh',
      ['auth', 'token'],
      { env, timeout: 5000, maxBuffer: 64 * 1024, windowsHide: true },
      (err, stdout) => {
        const t = String(stdout ?? '').trim();
        resolve(err || !/^[\w.-]{20,255}$/.test(t) ? null : t);
      },
    );
  });
}

export async function resolveToken(
  env: NodeJS.ProcessEnv = process.env,
  opts: { useGh?: boolean } = {},
): Promise<ResolvedToken> {
  if (env.GH_TOKEN?.trim()) return { token: env.GH_TOKEN.trim(), source: 'GH_TOKEN' };
  if (env.GITHUB_TOKEN?.trim()) return { token: env.GITHUB_TOKEN.trim(), source: 'GITHUB_TOKEN' };
  if (opts.useGh !== false) {
    const t = await ghAuthToken(env);
    if (t) return { token: t, source: 'gh auth token' };
  }
  return { token: null, source: null };
}
