import { spawn } from 'node:child_process';
import type { Argv } from 'yargs';
import { ZzError } from '../errors.js';
import { withoutZzSecrets } from '../local/index.js';
import { envToken } from './env-token.js';
import { print } from './format.js';
import type { CliIO } from './io.js';

// `zz dashboard`: asks the checkout's daemon for a one-time login code (authenticating with the
// same token every other command uses) and prints — and, with a display, opens — the page URL
// carrying it. The code rides in the URL fragment, which browsers never send to a server, and
// works once within a minute; the page trades it (after asking) for an HttpOnly session
// cookie and a page key it keeps in sessionStorage.

interface CodeAnswer {
  actor: string;
  repo: string;
  path: string;
  expires_at: string;
}

/** A browser opener for this platform, or null when there is no display to open one on. */
function opener(env: NodeJS.ProcessEnv): { cmd: string; args: string[] } | null {
  if (process.platform === 'darwin') return { cmd: 'open', args: [] };
  if (process.platform === 'win32')
    return { cmd: 'rundll32', args: ['url.dll,FileProtocolHandler'] };
  if (env.DISPLAY || env.WAYLAND_DISPLAY) return { cmd: 'xdg-open', args: [] };
  return null;
}

function openBrowser(url: string, env: NodeJS.ProcessEnv): boolean {
  const o = opener(env);
  if (!o) return false;
  try {
    // No shell: the URL is one argument, whatever it contains. The opener (and the browser it
    // may start, which keeps its environment for good) gets no zz secret: not ZZ_TOKEN.
    const child = spawn(o.cmd, [...o.args, url], {
      detached: true,
      stdio: 'ignore',
      env: withoutZzSecrets(env),
    });
    child.on('error', () => {});
    child.unref();
    return true;
  } catch {
    return false;
  }
}

const printable = (s: string) => s.replace(/[\x00-\x1f\x7f-\x9f]/g, '?');

export function dashboardCommand(y: Argv, io: CliIO): Argv {
  return y.command(
    'dashboard',
    'Open the web dashboard of the running daemon (prints a one-time login URL)',
    (c: Argv) =>
      c
        .option('json', { type: 'boolean', describe: 'Print the URL and session details as JSON' })
        .option('open', {
          type: 'boolean',
          default: true,
          describe: 'Open the URL in a browser (--no-open to only print it)',
        }),
    async (a) => {
      // Loaded here, not with the command table (`zz --help` must not load git/ and zod).
      const [{ locateRepository }, { normalizeServer, readRepoCredentials }] = await Promise.all([
        import('../core/identity.js'),
        import('./credentials.js'),
      ]);
      const found = await locateRepository(io.cwd);
      const { readDaemonInfo } = await import('../daemon/daemon-file.js');
      const info = await readDaemonInfo(found.gitdir);
      if (!info)
        throw new ZzError(
          'unavailable',
          'no zz daemon is running for this checkout; start one with `zz serve`',
        );
      const server = normalizeServer(info.url);
      const token =
        envToken(io.env) ?? (await readRepoCredentials(io.env, found.gitdir))?.login?.token;
      if (!token)
        throw new ZzError(
          'unauthorized',
          `zz serve is running at ${server}; run \`zz login\` to get a token for it`,
        );
      let res: Response;
      try {
        res = await fetch(`${server}/auth/code`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ repo: found.key }),
        });
      } catch (e) {
        throw new ZzError(
          'unavailable',
          `cannot reach the zz daemon at ${server}: ${(e as Error).message}`,
        );
      }
      const body = (await res.json().catch(() => null)) as
        (Partial<CodeAnswer> & { error?: string; code?: string }) | null;
      if (!res.ok || !body || typeof body.path !== 'string') {
        if (res.status === 404 && body?.error?.startsWith('no route'))
          throw new ZzError('not_found', `the daemon at ${server} does not serve a dashboard`);
        throw new ZzError(
          res.status === 401 ? 'unauthorized' : 'unavailable',
          body?.error ?? `HTTP ${res.status} from ${server}`,
        );
      }
      const url = `${server}${body.path}`;
      const opened = a.open !== false && openBrowser(url, io.env);
      if (a.json)
        return print(
          io,
          { url, actor: body.actor, repo: body.repo, expires_at: body.expires_at, opened },
          true,
        );
      io.stdout(
        `${opened ? 'Opening' : 'Open'} ${url}\n` +
          `as ${printable(String(body.actor))} on ${printable(String(body.repo))}; the link works once, until ${printable(String(body.expires_at))}.\n`,
      );
    },
  );
}
