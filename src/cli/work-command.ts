import type { Argv } from 'yargs';
import { ZzError } from '../errors.js';
import type { CliIO } from './io.js';
import { jsonText, neutralize } from './terminal.js';
import type { Sandbox, WorkEvent as Event } from '../work/index.js';
import {
  DEFAULT_MAX_POSTS_PER_RUN,
  DEFAULT_TOKENS_PER_ASK,
  MAX_CALLS_PER_TURN,
  MAX_GENERATION,
  MAX_POSTS_PER_ASK,
  MAX_PROPOSALS_PER_ASK,
} from '../work/limits.js';

// `zz work`: runs the agent loop of src/work against the checkout's daemon, as the stored
// login or ZZ_TOKEN. Output: one line per step on a pipe, a live status line on a terminal
// (stderr) with the lasting lines on stdout, or one JSON event per line with --json.

// Text from the Lane (titles, reasons, model output) is shown, never obeyed by the terminal.
const clean = (s: string, max = 200): string => {
  const flat = neutralize(s);
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
};

function describe(e: Event, once: boolean): { line: string | null; status: string | null } {
  switch (e.type) {
    case 'start':
      return {
        line: `zz work: lane ${clean(e.lane_id)} as ${clean(e.actor ?? 'unknown')} with ${clean(e.model)}${e.kinds ? ` (kinds: ${e.kinds.map((k) => clean(k)).join(', ')})` : ''}`,
        status: null,
      };
    case 'idle':
      return {
        line: once
          ? `nothing to do in lane ${clean(e.lane_id)}`
          : `waiting for work in lane ${clean(e.lane_id)}`,
        status: null,
      };
    case 'claimed':
      return { line: `${e.ask_id} claimed (${clean(e.kind)}): ${clean(e.title)}`, status: null };
    case 'step':
      return {
        line: null,
        status: `${e.ask_id} ${e.step}${e.detail ? ` ${clean(e.detail, 120)}` : ''}`,
      };
    case 'tool':
      return {
        line: null,
        status: `${e.ask_id} ${clean(e.tool)} ${e.ok ? 'ok' : `failed: ${clean(e.detail ?? '', 120)}`}`,
      };
    case 'model_retry':
      return {
        line: null,
        status: `model retry ${e.attempt} in ${(e.delay_ms / 1000).toFixed(1)}s: ${clean(e.reason, 120)}`,
      };
    case 'answered': {
      const follow = e.follow_ups.map((f) => `${f.ask_id} (${clean(f.kind)})`).join(', ');
      return {
        line:
          `${e.ask_id} answered ${e.outcome} in ${(e.ms / 1000).toFixed(1)}s` +
          (e.changeset_id ? `, changeset ${e.changeset_id}` : '') +
          (follow ? `; follow-up ${follow}` : ''),
        status: null,
      };
    }
    case 'released':
      return { line: `${e.ask_id} released: ${clean(e.reason, 500)}`, status: null };
    case 'backoff':
      // No word of what comes next: the worker learns whether the Lane still hands out work
      // only from its next claim (a Lane closed meanwhile stops it, exit 9).
      return {
        line: e.parked
          ? `${e.ask_id} given back ${e.failures} times: this worker will not claim it again (it stays open for others; restart zz work to retry it)`
          : `${e.ask_id} waits ${(e.ms / 1000).toFixed(1)}s before this worker claims it again (given back ${e.failures} time${e.failures === 1 ? '' : 's'})`,
        status: null,
      };
    case 'error':
      return { line: `${e.ask_id ?? 'zz work'} error: ${clean(e.message, 500)}`, status: null };
    case 'passing_over':
      return {
        line: `zz work: passing over ${e.kinds.map((k) => clean(k)).join(' and ')} Asks in lane ${clean(e.lane_id)}: ${clean(e.reason, 500)}`,
        status: null,
      };
    case 'closed':
      // Said once, as the command's error (stderr, exit 9) after the done line: see below.
      return { line: null, status: null };
    case 'done':
      return {
        line:
          `done: ${e.asks} ask${e.asks === 1 ? '' : 's'} (${e.answered} answered, ${e.released} released); ` +
          `model usage ${e.usage.input_tokens} tokens in, ${e.usage.output_tokens} out, ${e.usage.calls} call${e.usage.calls === 1 ? '' : 's'}`,
        status: null,
      };
  }
}

/**
 * Exported for tests: how events become output. On a terminal the current step is one status
 * line on stderr, redrawn every `tickMs` with how long it has been running (a model may think
 * for minutes), and wiped before the next lasting line.
 */
export function workReporter(
  io: CliIO,
  json: boolean,
  once: boolean,
  tickMs = 1000,
): (e: Event) => void {
  if (json) return (e) => io.stdout(jsonText({ time: new Date().toISOString(), ...e }, 0) + '\n');
  const live = io.stderrIsTTY ?? io.isTTY;
  let shown: string | null = null;
  let since = 0;
  let ticker: NodeJS.Timeout | null = null;
  const fit = (s: string) => s.slice(0, Math.max(20, (process.stderr.columns || 100) - 1));
  const tick = () => {
    if (shown === null) return;
    io.stderr(`\r\x1b[K${fit(`${shown} (${Math.floor((Date.now() - since) / 1000)}s)`)}`);
  };
  return (e) => {
    const { line, status } = describe(e, once);
    if (live) {
      if (shown !== null) io.stderr('\r\x1b[K');
      shown = null;
      if (ticker) clearInterval(ticker);
      ticker = null;
      if (line) io.stdout(line + '\n');
      if (status) {
        io.stderr(fit(status));
        shown = status;
        since = Date.now();
        // unref: a status line never keeps the process alive.
        ticker = setInterval(tick, tickMs).unref();
      }
      return;
    }
    const text = line ?? status;
    if (text) io.stdout(text + '\n');
  };
}

const positiveInt = (v: unknown, flag: string): number | undefined => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new ZzError('invalid_argument', `${flag} must be a whole number ≥ 1`);
  return n;
};

export function workCommand(y: Argv, io: CliIO): Argv {
  return y.command(
    'work',
    'Run an agent against the daemon: claim Asks in a Lane, work them with a model, answer, repeat',
    (c: Argv) =>
      c
        .option('lane', {
          type: 'string',
          demandOption: true,
          describe: 'The Lane to take work from',
        })
        .option('model', {
          type: 'string',
          describe:
            'openai:<model> | anthropic:<model> | exec:<command> (default: git config zz.model)',
        })
        .option('kinds', {
          type: 'array',
          string: true,
          describe: 'Only Asks of these kinds (comma-separated or repeated)',
        })
        .option('max-turns', {
          type: 'number',
          describe:
            'Model turns per Ask for kinds without a built-in flow (default 20); a turn runs at ' +
            `most ${MAX_CALLS_PER_TURN} tool calls, and one Ask may post at most ` +
            `${MAX_POSTS_PER_ASK} Asks and propose at most ${MAX_PROPOSALS_PER_ASK} Lanes`,
        })
        .option('max-posts', {
          type: 'number',
          describe:
            `Asks and Lanes the model may post in this run, in all (default ${DEFAULT_MAX_POSTS_PER_RUN}; 0: none). ` +
            `Each Ask posted records the Ask it came from; none is posted or worked more than ` +
            `${MAX_GENERATION} generations down from a person's Ask`,
        })
        .option('max-tokens-per-ask', {
          type: 'number',
          describe: `Model tokens (input + output, as the endpoint reports them) one Ask may spend before it is given back (default ${DEFAULT_TOKENS_PER_ASK})`,
        })
        .option('once', { type: 'boolean', describe: 'Work one Ask (or none) and exit' })
        .option('test-cmd', {
          type: 'string',
          describe:
            'Test each change with this command in a sandbox checkout (split like a shell, run without one). ' +
            'WARNING: it runs code the model wrote, with your rights: it can read your files, ' +
            'tokens and keys (the sandbox is a clean checkout, not a security boundary). ' +
            'Use it only inside a container or VM you can throw away',
        })
        .option('test-rounds', {
          type: 'number',
          describe: 'Test-and-fix rounds per change (default 3)',
        })
        .option('json', { type: 'boolean', describe: 'One JSON event per line' }),
    async (a) => {
      const [{ connect }, models, work] = await Promise.all([
        import('./client.js'),
        import('../models/index.js'),
        import('../work/index.js'),
      ]);
      const kinds = ((a.kinds as string[] | undefined) ?? [])
        .flatMap((k) => String(k).split(','))
        .map((k) => k.trim())
        .filter(Boolean);
      const maxTurns = positiveInt(a['max-turns'], '--max-turns');
      const testRounds = positiveInt(a['test-rounds'], '--test-rounds');
      const maxTokensPerAsk = positiveInt(a['max-tokens-per-ask'], '--max-tokens-per-ask');
      const maxPosts = a['max-posts'] === undefined ? undefined : Number(a['max-posts']);
      if (maxPosts !== undefined && !(Number.isInteger(maxPosts) && maxPosts >= 0))
        throw new ZzError('invalid_argument', '--max-posts must be a whole number ≥ 0');
      const testCmd =
        a['test-cmd'] === undefined
          ? undefined
          : models.splitCommand(String(a['test-cmd']), '--test-cmd');
      const emit = workReporter(io, !!a.json, !!a.once);
      const spec = await models.defaultModelSpec(a.model as string | undefined, io.cwd);
      const model = models.createModel(spec, {
        env: io.env,
        cwd: io.cwd,
        onRetry: (r) =>
          emit({ type: 'model_retry', attempt: r.attempt, delay_ms: r.delayMs, reason: r.reason }),
      });
      const client = await connect({ cwd: io.cwd, env: io.env });
      const stop = new AbortController();
      void io.stopSignal?.then(() => stop.abort(new Error('interrupted')));
      let sandbox: Sandbox | undefined;
      try {
        const state = await client.call('repo_state', {});
        const actor = typeof state.actor === 'string' ? state.actor : (client.actor ?? null);
        if (testCmd) {
          if (!actor)
            throw new ZzError(
              'unauthorized',
              '--test-cmd needs to know who you are: run `zz login`',
            );
          sandbox = await work.localSandbox({
            cwd: io.cwd,
            repoKey: client.repoKey,
            actor,
            command: testCmd,
          });
        }
        const summary = await work.runWorker({
          call: (tool, args) => client.call(tool, args),
          model,
          laneId: String(a.lane),
          repo: client.repoKey,
          actor,
          ...(kinds.length ? { kinds } : {}),
          ...(maxTurns ? { maxTurns } : {}),
          ...(testRounds ? { testRounds } : {}),
          ...(maxPosts !== undefined ? { maxPosts } : {}),
          ...(maxTokensPerAsk ? { maxTokensPerAsk } : {}),
          // Keys in this environment (a test command may read them) are kept out of answers.
          secrets: models.envSecrets(io.env),
          once: !!a.once,
          ...(sandbox ? { sandbox } : {}),
          signal: stop.signal,
          onEvent: emit,
        });
        if (summary.interrupted) io.stderr('zz work: stopped\n');
        // A closed Lane is not "nothing to do": a script or supervisor must not start the
        // worker again (exit 9, lane_closed), and a person must learn who closed it and why.
        else if (summary.closed) {
          const c = summary.closed;
          throw new ZzError(
            'lane_closed',
            `lane ${clean(String(a.lane))} was closed by ${clean(c.by)} at ${clean(c.at)}${c.reason ? ` (${clean(c.reason, 500)})` : ''}: it hands out no new work, so zz work stopped`,
          );
        }
        // --once is for scripts: an Ask taken and given back is a failure they must see (the
        // exit code of the error behind it), not the 0 of "worked one Ask".
        else if (a.once && summary.failure) {
          const f = summary.failure;
          throw new ZzError(
            f.code,
            f.taken
              ? `${f.ask_id} was not done (${f.reason}) and is no longer yours: ${clean(f.taken, 500)}`
              : f.held === null
                ? `${f.ask_id} was not done and is released: ${f.reason}`
                : `${f.ask_id} was not done (${f.reason}) and could not be released (${f.held}): it stays claimed by you until its lease runs out at ${f.lease_expires_at ?? 'its end'}; \`zz ask release --ask-id ${f.ask_id}\` gives it back`,
          );
        }
      } finally {
        sandbox?.close();
        client.close();
      }
    },
  );
}
