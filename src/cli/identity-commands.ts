import type { Argv } from 'yargs';
import { ZzError } from '../errors.js';
import { credentialsFile } from '../local/paths.js';
import { print } from './format.js';
import type { CliIO } from './io.js';
import { neutralize, oneLine } from './terminal.js';

// Who the CLI acts as, per repository: `zz login`, `zz logout`, `zz whoami` and the agent
// identities you[NAME] (`zz agent create|token|list|revoke`). Tokens are minted into this
// checkout's token store (<git common dir>/zz/tokens.json), which whatever daemon serves the
// checkout reads, and kept in credentials.json under this checkout's git dir. Minting never
// revokes another token: a running agent keeps working until its token is revoked by name
// (`zz agent revoke`, `zz logout`, `--rotate`).

/**
 * What the handlers use, loaded when one runs: the command table (`zz --help`) must not pull
 * in git/ and zod with it (test/e2e/cli-startup.test.ts).
 */
async function deps() {
  const [identity, client, credentials, envToken] = await Promise.all([
    import('../core/identity.js'),
    import('./client.js'),
    import('./credentials.js'),
    import('./env-token.js'),
  ]);
  return { ...identity, ...client, ...credentials, ...envToken };
}

const AGENT_NAME = /^[A-Za-z0-9._-]{1,64}$/;
const LOGIN = 'login';

async function here(io: CliIO) {
  const { locateRepository, normalizeServer } = await deps();
  const found = await locateRepository(io.cwd);
  const [{ TokenStore }, { readDaemonInfo }] = await Promise.all([
    import('../core/token-store.js'),
    import('../daemon/daemon-file.js'),
  ]);
  const info = await readDaemonInfo(found.gitdir);
  return {
    gitdir: found.gitdir,
    key: found.key,
    tokens: new TokenStore(found.gitdir),
    daemon: info ? normalizeServer(info.url) : null,
  };
}

/** Asks a daemon who `token` is there; null when it does not serve `key` with this store. */
async function actorAt(server: string, key: string, token: string): Promise<string | null> {
  let res: Response;
  try {
    res = await fetch(`${server}/api/repos/${key}/tools/repo_state`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{}',
    });
  } catch (e) {
    const code = (e as { cause?: { code?: unknown } }).cause?.code;
    throw new ZzError(
      'unavailable',
      `nothing answers at ${server}${typeof code === 'string' ? ` (${code})` : ''}`,
    );
  }
  const body = (await res.json().catch(() => null)) as { result?: { actor?: unknown } } | null;
  const actor = body?.result?.actor;
  return res.ok && typeof actor === 'string' ? actor : null;
}

function agentName(a: { name?: unknown }): string {
  const name = String(a.name);
  if (!AGENT_NAME.test(name))
    throw new ZzError(
      'invalid_argument',
      `agent name "${neutralize(name)}" must be 1-64 characters of [A-Za-z0-9._-]`,
    );
  return name;
}

const daemonLine = (daemon: string | null): string =>
  daemon
    ? `The daemon for this checkout runs at ${daemon}.`
    : 'No daemon runs for this checkout: commands run in-process (`zz serve` starts one).';

export function loginCommand(y: Argv, io: CliIO): Argv {
  return y.command(
    'login',
    'Get a token for your git identity (user.email) in this repository and store it',
    (c: Argv) =>
      c
        .option('rotate', {
          type: 'boolean',
          describe: 'Revoke your other login tokens in this repository and mint a new one',
        })
        .option('server', {
          type: 'string',
          describe: 'Check that the daemon at this URL serves this checkout',
        })
        .option('json', { type: 'boolean', describe: 'Print {actor, token, server, repo, id}' }),
    async (a) => {
      const { gitUserEmail, normalizeServer, readRepoCredentials, updateRepoCredentials } =
        await deps();
      const actor = await gitUserEmail(io.cwd, io.env);
      const { gitdir, key, tokens, daemon } = await here(io);
      const server = a.server === undefined ? daemon : normalizeServer(String(a.server));
      const stored = (await readRepoCredentials(io.env, gitdir))?.login;
      const valid =
        stored && stored.actor === actor && !a.rotate
          ? (await tokens.verify(stored.token))?.actor === actor
          : false;
      const login = valid
        ? stored!
        : await tokens.create(actor, LOGIN, { rotate: !!a.rotate }).then((t) => ({
            actor,
            token: t.token,
            name: LOGIN,
            id: t.id,
          }));
      if (a.server !== undefined && server) {
        // Never claim a login to a daemon that serves another repository (or another
        // checkout's token store): it must know this token as this actor.
        const seen = await actorAt(server, key, login.token);
        if (seen !== actor) {
          if (!valid) await tokens.revoke({ id: login.id });
          throw new ZzError(
            'precondition_failed',
            `the daemon at ${server} does not serve ${key} from this checkout; run \`zz serve\` here, or \`zz login\` in the checkout it serves`,
          );
        }
      }
      await updateRepoCredentials(io.env, gitdir, key, (e) => {
        e.login = login;
      });
      if (a.json)
        return print(
          io,
          { actor, token: login.token, server, repo: key, id: login.id, reused: valid },
          true,
        );
      io.stdout(
        [
          oneLine`${valid ? 'Already logged in' : 'Logged in'} to ${key} as ${actor} (token ${login.id}, in ${credentialsFile(io.env)}).`,
          oneLine`${daemonLine(server)}`,
        ].join('\n') + '\n',
      );
    },
  );
}

export function logoutCommand(y: Argv, io: CliIO): Argv {
  return y.command(
    'logout',
    "Revoke and forget this repository's stored login token (agents keep theirs)",
    (c: Argv) => c.option('json', { type: 'boolean', describe: 'Print the result as JSON' }),
    async (a) => {
      const { readRepoCredentials, updateRepoCredentials } = await deps();
      const { gitdir, key, tokens } = await here(io);
      const stored = (await readRepoCredentials(io.env, gitdir))?.login;
      const revoked = stored ? await tokens.revoke({ id: stored.id }) : 0;
      if (stored)
        await updateRepoCredentials(io.env, gitdir, key, (e) => {
          delete e.login;
        });
      if (a.json) return print(io, { repo: key, logged_out: !!stored, revoked }, true);
      io.stdout(
        (stored
          ? oneLine`Logged out of ${key}: token ${stored.id} of ${stored.actor} revoked. Your agents' tokens still work (zz agent list).`
          : oneLine`Not logged in to ${key}; nothing to do.`) + '\n',
      );
    },
  );
}

export function whoamiCommand(y: Argv, io: CliIO): Argv {
  return y.command(
    'whoami',
    'The identity and daemon this checkout’s CLI acts as',
    (c: Argv) => c.option('json', { type: 'boolean', describe: 'Print the result as JSON' }),
    async (a) => {
      const { envToken, gitUserEmail, readRepoCredentials } = await deps();
      const { gitdir, key, tokens, daemon } = await here(io);
      let actor: string;
      let via: string;
      let tokenId: string | null = null;
      const fromEnv = envToken(io.env);
      if (fromEnv !== undefined) {
        const who = await tokens.verify(fromEnv);
        if (!who)
          throw new ZzError('unauthorized', `ZZ_TOKEN is not a valid token for ${key} here`);
        [actor, via, tokenId] = [who.actor, 'ZZ_TOKEN', who.id];
      } else if (!daemon) {
        // Without a daemon, commands run in-process as the git identity; a stored login is
        // what they send once `zz serve` runs (saying "stored login" here contradicted the
        // "in-process" line below it).
        [actor, via] = [await gitUserEmail(io.cwd, io.env), 'git identity (in-process)'];
      } else {
        const stored = (await readRepoCredentials(io.env, gitdir))?.login;
        const who = stored ? await tokens.verify(stored.token) : null;
        if (stored && !who)
          throw new ZzError(
            'unauthorized',
            `the stored login token for ${key} was revoked; run \`zz login\``,
          );
        if (!who)
          throw new ZzError(
            'unauthorized',
            `not logged in to ${key} (its daemon runs at ${daemon}); run \`zz login\``,
          );
        [actor, via, tokenId] = [who.actor, 'stored login', who.id];
      }
      // The daemon's MCP endpoint for this repository, for a client configured by URL
      // (walkthrough §10): its port and repo key are this machine's, not the docs' example.
      const mcpUrl = daemon ? `${daemon}/api/repos/${key}/mcp` : null;
      const out = { actor, via, token_id: tokenId, repo: key, gitdir, daemon, mcp_url: mcpUrl };
      if (a.json) return print(io, out, true);
      // Every part, each as one line: the git dir is a path of this machine's, the actor a
      // git config value (which may hold a newline).
      const lines = [
        oneLine`${actor}`,
        oneLine`  repository: ${key} (${gitdir})`,
        oneLine`  acting as: ${via}${tokenId ? ` (token ${tokenId})` : ''}`,
        oneLine`  ${daemonLine(daemon)}`,
        ...(mcpUrl ? [oneLine`  MCP over HTTP: ${mcpUrl}`] : []),
      ];
      io.stdout(lines.join('\n') + '\n');
    },
  );
}

export function agentCommand(y: Argv, io: CliIO): Argv {
  const named = (c: Argv) =>
    c
      .positional('name', {
        type: 'string',
        demandOption: true,
        describe: 'Agent name, e.g. claude',
      })
      .option('json', { type: 'boolean', describe: 'Print the result as JSON' });
  const agent = async (a: { name?: unknown }) => {
    const name = agentName(a);
    const person = await (await deps()).gitUserEmail(io.cwd, io.env);
    return { name, actor: `${person}[${name}]`, ...(await here(io)) };
  };
  return y.command('agent', 'Agent identities you[NAME] and their tokens', (g: Argv) =>
    g
      .command(
        'create <name>',
        'Mint a token for agent you[NAME] and store it (earlier tokens keep working)',
        (c: Argv) =>
          named(c).option('rotate', {
            type: 'boolean',
            describe: "Revoke the agent's earlier tokens",
          }),
        async (a) => {
          const { updateRepoCredentials } = await deps();
          const { name, actor, tokens, gitdir, key } = await agent(a);
          const t = await tokens.create(actor, name, { rotate: !!a.rotate });
          await updateRepoCredentials(io.env, gitdir, key, (e) => {
            e.agents[name] = { actor, token: t.token, name, id: t.id };
          });
          if (a.json)
            return print(io, { actor, token: t.token, id: t.id, revoked: t.revoked }, true);
          io.stdout(
            [
              oneLine`Created a token for ${actor} in ${key} (id ${t.id})${t.revoked ? `; revoked ${t.revoked} earlier token(s)` : ''}.`,
              oneLine`Use it with: ZZ_TOKEN=$(zz agent token ${name})`,
            ].join('\n') + '\n',
          );
        },
      )
      .command(
        'token <name>',
        "Print the agent's stored token, exactly (fails if there is none; never creates one)",
        named,
        async (a) => {
          const { readRepoCredentials } = await deps();
          const { name, actor, tokens, gitdir, key } = await agent(a);
          const stored = (await readRepoCredentials(io.env, gitdir))?.agents[name];
          if (!stored)
            throw new ZzError(
              'not_found',
              `no agent ${name} (${actor}) in ${key} here; create it with \`zz agent create ${name}\``,
            );
          if ((await tokens.verify(stored.token))?.actor !== stored.actor)
            throw new ZzError(
              'unauthorized',
              `the stored token of agent ${name} (${stored.actor}) was revoked; mint one with \`zz agent create ${name}\``,
            );
          if (a.json) print(io, { actor: stored.actor, token: stored.token }, true);
          else io.stdout(`${stored.token}\n`);
        },
      )
      .command(
        'list',
        'Your agents in this repository, with how many live tokens each has',
        (c: Argv) => c.option('json', { type: 'boolean', describe: 'Print the result as JSON' }),
        async (a) => {
          const { gitUserEmail, readRepoCredentials } = await deps();
          const person = await gitUserEmail(io.cwd, io.env);
          const { tokens, gitdir } = await here(io);
          const stored = (await readRepoCredentials(io.env, gitdir))?.agents ?? {};
          const byActor = new Map<string, { created: string; used: string | null; n: number }>();
          for (const t of await tokens.list()) {
            if (!t.actor.startsWith(`${person}[`)) continue;
            const cur = byActor.get(t.actor);
            byActor.set(t.actor, {
              created: cur && cur.created < t.created_at ? cur.created : t.created_at,
              used:
                [cur?.used ?? null, t.last_used_at]
                  .filter((x): x is string => !!x)
                  .sort()
                  .pop() ?? null,
              n: (cur?.n ?? 0) + 1,
            });
          }
          const agents = [...byActor].map(([actor, v]) => {
            const name = actor.slice(person.length + 1, -1);
            return {
              name,
              actor,
              tokens: v.n,
              created_at: v.created,
              last_used_at: v.used,
              stored_here: !!stored[name],
            };
          });
          print(io, { agents }, !!a.json);
        },
      )
      .command(
        'revoke <name>',
        'Revoke every token of agent you[NAME] at once and forget the stored one',
        named,
        async (a) => {
          const { readRepoCredentials, updateRepoCredentials } = await deps();
          const { name, actor, tokens, gitdir, key } = await agent(a);
          const revoked = await tokens.revoke(actor);
          const had = !!(await readRepoCredentials(io.env, gitdir))?.agents[name];
          if (had)
            await updateRepoCredentials(io.env, gitdir, key, (e) => {
              delete e.agents[name];
            });
          if (!revoked && !had)
            throw new ZzError('not_found', `no agent ${name} (${actor}) in ${key}`);
          if (a.json) return print(io, { actor, revoked }, true);
          io.stdout(oneLine`Revoked ${revoked} token(s) of ${actor}.` + '\n');
        },
      )
      .demandCommand(1, 'choose an agent command: create, token, list, revoke'),
  );
}
