import { resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Argv } from 'yargs';
import { knownError, ZzError } from '../errors.js';
import { DEFAULT_HOST, DEFAULT_PORT, DEFAULT_PORT_TRIES } from '../local/paths.js';
import type { LadderBuildResult } from '../core/index.js';
import { letRemotesAskHere } from './sync-command.js';
import type { CliIO } from './io.js';
import { print } from './format.js';
import { neutralize } from './terminal.js';
import { runServe } from './serve.js';

// The commands that are not tools: setup, the daemon, identities, hooks, MCP.

/** The zz running now, for the hooks to run: this node and this build's main.js. */
function installedZz(): { node: string; main: string } {
  return { node: process.execPath, main: fileURLToPath(new URL('./main.js', import.meta.url)) };
}

export function initCommand(y: Argv, io: CliIO): Argv {
  return y.command(
    'init',
    'Set up zz in this checkout: fetch refs/zz/* from remotes, create or adopt the config and lane _repo, install hooks',
    (c: Argv) =>
      c
        .option('public', {
          type: 'boolean',
          describe: 'Let anyone read lane_list and ladder_tree without a token',
        })
        .option('fetch', {
          type: 'boolean',
          default: true,
          // yargs reads --no-fetch as fetch=false; an option named 'no-fetch' made strict mode
          // refuse it ("Unknown argument: fetch").
          describe: 'Fetch refs/zz/* from remotes first (--no-fetch to skip)',
        })
        .option('signed', {
          type: 'boolean',
          describe: 'Require every zz op to be signed by a key of its actor',
        })
        .option('json', { type: 'boolean', describe: 'Print the result as JSON' }),
    async (a) => {
      const [{ ZzRepo, zzInit }, { gitUserEmail }] = await Promise.all([
        import('../core/index.js'),
        import('../core/identity.js'),
      ]);
      const repo = await ZzRepo.open(io.cwd);
      if (a.fetch !== false) await letRemotesAskHere(io);
      try {
        const owner = await gitUserEmail(io.cwd, io.env);
        const { personKeyInfo, moreQuarantined, QUARANTINED_SHOWN } =
          await import('../core/sync/index.js');
        const signing = await personKeyInfo(owner, io.env, io.cwd);
        const report = await zzInit(repo, {
          owner,
          signingKey: signing.key,
          signed: !!a.signed,
          visibility: a.public ? 'public' : 'private',
          hookCommand: installedZz(),
          noFetch: a.fetch === false,
        });
        const signingKey = {
          file: signing.file,
          created: signing.created,
          source: signing.source,
          public_key: signing.key.publicKey,
          ...(signing.note ? { note: signing.note } : {}),
        };
        if (a.json) return print(io, { ...report, signing_key: signingKey }, true);
        const lines = [
          report.created_config
            ? `Initialised zz for ${report.repo} (owner ${owner}).`
            : report.adopted.includes('refs/zz/config')
              ? `Adopted the zz state of ${report.repo} from its remote.`
              : `zz is already initialised for ${report.repo}.`,
        ];
        for (const r of report.refspecs_added)
          lines.push(`Added ${`+refs/zz/*:refs/zz-remotes/${r}/*`} to remote ${r}.`);
        for (const f of report.fetch_failed)
          lines.push(`Could not fetch from ${f.remote}: ${f.error}`);
        lines.push(
          signing.created
            ? `Made a signing key for ${owner}: ${signing.file} (${signing.key.publicKey}).`
            : `Signing as ${owner} with ${signing.file}${signing.source === 'git' ? ' (git user.signingkey)' : ''}.`,
        );
        if (signing.note) lines.push(`Not signing with git's key: ${signing.note}.`);
        if (report.created_repo_lane && !report.created_config) lines.push('Created lane _repo.');
        if (report.signatures_turned_on || (report.created_config && a.signed))
          lines.push('Every zz op must now be signed.');
        for (const q of report.quarantined.slice(0, QUARANTINED_SHOWN))
          lines.push(
            `Quarantined ${q.ref.slice('refs/zz/'.length)} from a remote (commit ${q.commit.slice(0, 10)}: ${q.reason}); kept under refs/zz-quarantine/, not adopted.`,
          );
        const more = moreQuarantined(report);
        if (more) lines.push(more + '.');
        for (const h of report.hooks_installed) lines.push(`Installed hook ${h}.`);
        if (report.hook_command_updated && report.hooks_installed.length === 0)
          lines.push('Updated the zz the hooks run.');
        for (const h of report.hooks_skipped) lines.push(`Skipped hook ${h.hook}: ${h.reason}`);
        for (const n of report.notes) lines.push(n);
        if (report.nothing_changed) lines.push('Nothing to change.');
        // Paths and notes come from git config and the file system: shown, never executed.
        io.stdout(lines.map((l) => neutralize(l)).join('\n') + '\n');
      } finally {
        repo.close();
      }
    },
  );
}

export function serveCommand(y: Argv, io: CliIO): Argv {
  return y.command(
    'serve',
    'Run the zz daemon for this checkout in the foreground',
    (c: Argv) =>
      c
        .option('port', {
          type: 'number',
          describe: `Port (default ${DEFAULT_PORT}, or the next free one up to ${DEFAULT_PORT + DEFAULT_PORT_TRIES}; 0 picks any free one)`,
        })
        .option('host', {
          type: 'string',
          default: DEFAULT_HOST,
          describe: 'Interface to bind (loopback by default)',
        })
        .option('repo', { type: 'array', string: true, describe: 'Serve more checkouts' }),
    async (a) => {
      // The same as a plain `zz serve` takes from the fast path (fast-path.ts, serve.ts).
      await runServe(io, {
        ...(a.port !== undefined ? { port: a.port as number } : {}),
        host: a.host as string,
        repos: ((a.repo as string[] | undefined) ?? []).map(String),
      });
    },
  );
}

export function hookCommand(y: Argv, io: CliIO): Argv {
  // A module object: its `describe: false` hides the command from --help without a cast.
  return y.command({
    command: 'hook <name> [args..]',
    describe: false,
    // git decides what a hook is passed (post-merge: the squash flag; post-rewrite: "rebase"
    // or "amend"); accept all of it. A hook must never make `git pull` look failed: this
    // command reports on stderr and exits 0 whatever happens.
    builder: (c: Argv) =>
      c
        .positional('name', { type: 'string' })
        .positional('args', { type: 'string', array: true })
        .strict(false),
    handler: async (a) => {
      const name = String(a.name);
      if (name === 'post-rewrite' && (a.args as string[] | undefined)?.[0] !== 'rebase') return;
      if (name !== 'post-merge' && name !== 'post-rewrite') {
        io.stderr(`zz hook: ${neutralize(name)} is not a zz hook; nothing to do\n`);
        return;
      }
      try {
        const { ZzRepo, fastForwardFromRemotes } = await import('../core/index.js');
        const repo = await ZzRepo.open(io.cwd);
        try {
          const r = await fastForwardFromRemotes(repo);
          const moved = r.adopted.length + r.fast_forwarded.length;
          if (moved) io.stderr(`zz: brought ${moved} zz ref(s) up to date\n`);
          for (const x of r.refused) io.stderr(`zz: ${neutralize(x.message)}\n`);
          for (const q of r.quarantined)
            io.stderr(
              `zz: quarantined ${neutralize(q.ref)} (commit ${q.commit.slice(0, 10)}: ${neutralize(q.reason)}); not brought in\n`,
            );
          for (const x of r.newly_refused)
            io.stderr(
              `zz: ${neutralize(x.ref)}: op ${neutralize(x.op_id)} (${neutralize(x.op)} by ${neutralize(x.actor)}), written here and accepted before, is now refused (${neutralize(x.reason)})\n`,
            );
          if (r.diverged.length)
            io.stderr(
              `zz: ${r.diverged.length} zz ref(s) diverged from the remote and need a merge: ${r.diverged.join(', ')}\n`,
            );
        } finally {
          repo.close();
        }
      } catch (e) {
        io.stderr(`zz hook: ${neutralize((e as Error).message)}\n`);
      }
    },
  });
}

export function mcpCommand(y: Argv, io: CliIO): Argv {
  return y.command(
    'mcp',
    'Serve the zz tools over MCP on stdio (for Claude Code, Cursor, VS Code, Codex)',
    (c: Argv) =>
      c
        .option('toolsets', {
          type: 'array',
          string: true,
          describe:
            'Only these toolsets: git, ladder, lanes, asks, code, local, admin (comma-separated or repeated)',
        })
        .option('read-only', {
          type: 'boolean',
          describe: 'Only read-only tools are listed and callable',
        })
        .option('repo', {
          type: 'string',
          describe: 'The checkout to serve (default: the current directory)',
        }),
    async (a) => {
      const [{ ZzRepo }, { gitUserEmail }, { registry, runTool }, mcp, { connect }] =
        await Promise.all([
          import('../core/index.js'),
          import('../core/identity.js'),
          import('../tools/index.js'),
          import('../mcp/index.js'),
          import('./client.js'),
        ]);
      const cwd = a.repo ? resolvePath(io.cwd, String(a.repo)) : io.cwd;
      // Calls go to the checkout's daemon when one runs (acting as ZZ_TOKEN or the stored
      // login), else in-process as the local git identity. Local tools always run here.
      let client: Awaited<ReturnType<typeof connect>>;
      let repo: InstanceType<typeof ZzRepo>;
      try {
        client = await connect({ cwd, env: io.env });
        repo = await ZzRepo.open(cwd, { key: client.repoKey });
      } catch (e) {
        // Dying before the handshake shows the user only "connection closed": finish it and
        // report the problem through MCP; the usual one line on stderr follows at exit.
        const err = knownError(e);
        if (!err || err.code === 'internal') throw e;
        const handle = mcp.serveSetupError(err);
        await Promise.race([handle.closed, io.stopSignal ?? new Promise<void>(() => {})]);
        await handle.close();
        throw err;
      }
      // Local tools run here, but as the actor the daemon sees for our token (ZZ_TOKEN or the
      // stored login), never silently as the git identity: ask the daemon who that is.
      const remoteActor =
        client.mode === 'daemon'
          ? await client.call('repo_state', {}).then(
              (s) => (typeof s.actor === 'string' ? s.actor : null),
              () => null,
            )
          : null;
      const actor =
        remoteActor ?? client.actor ?? (await gitUserEmail(cwd, io.env).catch(() => null));
      const toolsets = a.toolsets
        ? mcp.parseToolsets((a.toolsets as unknown[]).map(String))
        : undefined;
      const handle = mcp.serveStdio({
        registry,
        ...(toolsets ? { toolsets } : {}),
        readOnly: !!a['read-only'],
        local: true,
        context: () => ({ repo, caller: actor ? { actor } : null, local: true }),
        execute: (tool, args, ctx) =>
          tool.local || client.mode === 'in-process'
            ? runTool(tool, args, ctx)
            : client.call(tool.name, args as Record<string, unknown>),
        // No onError: serveStdio's default logs a failed call through its bounded stderr log
        // (a client that never reads stderr must not grow zz), neutralised.
      });
      await Promise.race([handle.closed, io.stopSignal ?? new Promise<void>(() => {})]);
      await handle.close();
      if (handle.stdoutDropped) io.dropStdout?.();
      client.close();
      repo.close();
    },
  );
}

/** A one-line progress bar on stderr, redrawn at most ~10 times a second. */
function progressBar(io: CliIO): {
  update: (p: { phase: string; done: number; total: number; note?: string }) => void;
  clear: () => void;
} {
  let last = 0;
  let shown = false;
  const width = 28;
  return {
    update(p) {
      const now = Date.now();
      const final = p.done === p.total;
      if (now - last < 100 && !final) return;
      last = now;
      const what = p.phase === 'files' ? 'files' : p.phase === 'directories' ? 'folders' : p.phase;
      const frac = p.total > 0 ? p.done / p.total : 1;
      const fill = Math.round(frac * width);
      const counts = p.phase === 'history' || p.phase === 'commit' ? '' : ` ${p.done}/${p.total}`;
      const note = p.note ? ` ${p.note.replace(/[\x00-\x1f\x7f]/g, ' ')}` : '';
      io.stderr(
        `\r\x1b[KLadder [${'#'.repeat(fill)}${'-'.repeat(width - fill)}] ${what}${counts}${note}`,
      );
      shown = true;
    },
    clear() {
      if (shown) io.stderr('\r\x1b[K');
      shown = false;
    },
  };
}

/** The line `zz ladder build` ends with: what was written, kept and removed, and why. */
function buildSummary(key: string, r: LadderBuildResult): string {
  const secs = (r.ms / 1000).toFixed(1);
  // Rungs another generator wrote that this build left alone: said, with the way to replace them.
  const preserved = r.preserved
    ? ` (${r.preserved} written by another generator kept; --rebuild rewrites them)`
    : '';
  const skipped =
    r.prune_skipped === undefined
      ? ''
      : ` Rungs of commits no branch holds were not looked for: ${r.prune_skipped === 'shallow' ? 'this is a shallow clone' : 'part of the history is missing here'}.`;
  if (!r.committed) {
    return `Ladder of ${key} is up to date at ${r.head.slice(0, 12)}: ${r.unchanged} rungs unchanged${preserved}; nothing committed (${secs}s).${skipped}\n`;
  }
  return (
    `Ladder of ${key} built at ${r.head.slice(0, 12)}: ${r.written} rungs written` +
    (r.reanchored ? ` (${r.reanchored} re-anchored)` : '') +
    `, ${r.unchanged} unchanged${preserved}, ${r.removed} removed` +
    (r.pruned ? ` (${r.pruned} of commits no branch or tag holds any more)` : '') +
    `; ${r.files} ${r.files === 1 ? 'file' : 'files'} in ${secs}s (revision ${r.revision?.slice(0, 12)}).${skipped}\n`
  );
}

export function ladderBuildCommand(g: Argv, io: CliIO): Argv {
  return g.command(
    'build',
    'Build or refresh the Ladder: extractive summaries of every file, folder, the repo, tags and recent commits (offline)',
    (c: Argv) =>
      c
        .option('json', { type: 'boolean', describe: 'Print the result as JSON (no progress bar)' })
        .option('model', {
          type: 'string',
          describe:
            'Write file summaries with a model: openai:<model>, anthropic:<model> or exec:<command>; bare --model: git config zz.model (extractive on any failure)',
        })
        .option('max-files', {
          type: 'number',
          describe: 'With --model: most files the model writes in this build',
        })
        .option('rebuild', {
          type: 'boolean',
          describe:
            'Also rewrite rungs another generator wrote from unchanged files: with --model, those of another model; without, model-written ones go back to extractive text (a human-written rung always stands)',
        })
        .option('changesets', {
          type: 'number',
          describe: 'How many recent commits get a changeset rung (default 20)',
        })
        .option('github', {
          type: 'boolean',
          describe:
            'Also issues, pull requests, release notes and contributors from GitHub (GH_TOKEN, GITHUB_TOKEN or gh auth token)',
        }),
    async (a) => {
      // A cap on model calls means nothing to an extractive build: refused rather than
      // ignored, so that a forgotten --model is not mistaken for a capped model build.
      if (a['max-files'] !== undefined && a.model === undefined) {
        throw new ZzError(
          'invalid_argument',
          '--max-files caps the files a model summarises, so it needs --model (without it the build is extractive and makes no model calls)',
        );
      }
      // Runs in-process even when a daemon serves this checkout: the build moves
      // refs/zz/ladder by compare-and-swap and the daemon's ref watcher reindexes it.
      const [{ ZzRepo, ladderBuild }, { gitUserEmail }] = await Promise.all([
        import('../core/index.js'),
        import('../core/identity.js'),
      ]);
      const repo = await ZzRepo.open(io.cwd);
      const bar = !a.json && (io.stderrIsTTY ?? io.isTTY) ? progressBar(io) : null;
      try {
        const actor = await gitUserEmail(io.cwd, io.env);
        // Signed as the daemon's writes are (a signed repository quarantines unsigned ones).
        const { signInProcess } = await import('../core/sync/authenticity.js');
        signInProcess(repo, actor, io.env);
        const changesets = a.changesets as number | undefined;
        if (changesets !== undefined && (!Number.isInteger(changesets) || changesets < 0)) {
          throw new ZzError('invalid_argument', '--changesets must be a whole number ≥ 0');
        }
        // A bare --model takes the default `zz work` uses (git config zz.model).
        const model =
          a.model === undefined || String(a.model)
            ? (a.model as string | undefined)
            : await (await import('../models/index.js')).defaultModelSpec(undefined, io.cwd);
        const result = await ladderBuild(repo, {
          actor,
          ...(model === undefined ? {} : { model: String(model) }),
          ...(changesets === undefined ? {} : { changesetsLimit: changesets }),
          ...(a.github || a.model !== undefined ? { env: io.env } : {}),
          ...(a.github ? { github: true } : {}),
          ...(a['max-files'] === undefined ? {} : { maxFiles: a['max-files'] as number }),
          ...(a.rebuild ? { rebuild: true } : {}),
          ...(bar ? { onProgress: bar.update } : {}),
        });
        bar?.clear();
        if (a.json) return print(io, result, true);
        if (result.model) {
          const m = result.model;
          // The failure is a model endpoint's text: C1 controls and bidi marks as well as C0
          // are shown, never obeyed (stripping C0 alone let the rest reach the terminal).
          io.stdout(
            neutralize(
              `Model ${m.spec}: ${m.written} files written, ${m.cached} from cache, ${m.fallback} extractive; ${m.input_tokens} input + ${m.output_tokens} output tokens in ${m.calls} calls.` +
                (m.last_error ? ` Last failure: ${m.last_error}` : ''),
            ) + '\n',
          );
        }
        io.stdout(neutralize(buildSummary(repo.key, result), { multiline: true }));
      } finally {
        bar?.clear();
        repo.close();
      }
    },
  );
}
