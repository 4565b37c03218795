import { spawn, type ChildProcess } from 'node:child_process';
import { ZzError } from '../errors.js';
import { withoutZzSecrets } from '../local/index.js';
import { quote } from './http-call.js';
import { parseArguments, tokenCount } from './json.js';
import { splitCommand } from './argv.js';
import { redactCutStart, redactSecrets } from '../schema/redact.js';
import { envSecrets } from './redact.js';
import type { ToolCall, Transport, WireRequest } from './types.js';

// `exec:<command>`: one process per call. The request (DESIGN §9) goes to stdin as one JSON
// object, the answer comes back on stdout as one JSON object. The command is split into argv
// by splitCommand and spawned without a shell. A call that outlives the timeout is killed
// (SIGTERM, then SIGKILL); a failed or silent process is not retried — a script's failure is
// not transient the way a 503 is.

const MAX_STDOUT = 32 * 1024 * 1024;
/** How much of a script's stderr is kept: its end, where a failure's error line is. */
const STDERR_KEPT = 16 * 1024;

// Model processes still running. A zz that exits (a signal ends a `zz ladder build` at once:
// cli/main.ts) ends them first: `kill` or `timeout` reaches zz alone, not its process group
// as a terminal's Ctrl-C does, and a model left running would work on for nobody until its
// own end.
const live = new Set<ChildProcess>();
let endOnExit = false;
function track(child: ChildProcess): void {
  live.add(child);
  child.once('close', () => live.delete(child));
  if (endOnExit) return;
  endOnExit = true;
  process.once('exit', () => {
    for (const c of live) c.kill('SIGTERM');
  });
}

export function execTransport(
  command: string,
  opts: { cwd?: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Transport {
  const argv = splitCommand(command);
  const label = `exec:${argv[0]}`;
  // What the script prints may hold the keys it was given (a `curl -H x-api-key:$KEY` that
  // failed, a traceback quoting its config): every message below is redacted of them, since it
  // becomes an ask_release's reason, stored in the Lane and synced.
  // The script gets the caller's environment (its own API keys, PATH) minus zz's token: the
  // model proposes, zz acts, so the model process has no business holding the agent's identity.
  const env = withoutZzSecrets(opts.env);
  const secrets = envSecrets(env);
  return (req: WireRequest) => {
    const request = {
      model: command,
      system: req.system,
      messages: req.messages,
      ...(req.tools?.length ? { tools: req.tools } : {}),
      ...(req.responseSchema ? { response_schema: req.responseSchema.schema } : {}),
    };
    return new Promise((resolve, reject) => {
      req.signal?.throwIfAborted();
      const child = spawn(argv[0]!, argv.slice(1), {
        cwd: opts.cwd,
        env,
        stdio: ['pipe', 'pipe', 'pipe'],
        shell: false,
      });
      track(child);
      const out: Buffer[] = [];
      let outLen = 0;
      let err = '';
      let errCut = false;
      let why: string | null = null;
      const kill = (reason: string) => {
        why ??= reason;
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 2000).unref();
      };
      const timer = setTimeout(() => kill(`no answer within ${opts.timeoutMs} ms`), opts.timeoutMs);
      const onAbort = () => kill('cancelled');
      req.signal?.addEventListener('abort', onAbort, { once: true });
      child.stdout.on('data', (b: Buffer) => {
        outLen += b.length;
        if (outLen > MAX_STDOUT) kill('more than 32 MiB on stdout');
        else out.push(b);
      });
      // Its last STDERR_KEPT: a failure's error line comes at the end, after whatever it logged.
      child.stderr.on('data', (b: Buffer) => {
        err += b.toString('utf8');
        if (err.length > 2 * STDERR_KEPT) {
          err = err.slice(-STDERR_KEPT);
          errCut = true;
        }
      });
      // A script that exits without reading stdin makes our write fail with EPIPE; the exit
      // status says what happened, so the write error itself is not the story.
      child.stdin.on('error', () => {});
      child.on('error', (e) => {
        clearTimeout(timer);
        reject(
          new ZzError(
            'unavailable',
            `${label} could not start: ${redactSecrets(e.message, secrets)}`,
          ),
        );
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        req.signal?.removeEventListener('abort', onAbort);
        if (why === 'cancelled' && req.signal?.aborted) return reject(req.signal.reason);
        if (why) return reject(new ZzError('unavailable', `${label}: ${why}`));
        if (code !== 0) {
          // The tail kept may begin inside a key the script printed: its end no longer
          // matches the key whole, so the cut's own backstop takes it off.
          const last = err.slice(-STDERR_KEPT);
          const cut = errCut || err.length > STDERR_KEPT;
          const gist = stderrGist(cut ? redactCutStart(last, secrets) : last);
          const tail = gist ? `: ${quote(gist, 300, secrets)}` : '';
          return reject(
            new ZzError('unavailable', `${label} exited ${code ?? signal}${tail}`, { code }),
          );
        }
        try {
          resolve(fromAnswer(Buffer.concat(out).toString('utf8'), label, secrets));
        } catch (e) {
          reject(e);
        }
      });
      child.stdin.end(JSON.stringify(request));
    });
  };
}

// An error line as runtimes print them: "TypeError: …", "Error [ERR_MODULE_NOT_FOUND]: …",
// "ModuleNotFoundError: …", "error: …".
const ERROR_LINE = /^(?:[\w$.]*(?:Error|Exception)|error|fatal)(?: \[[\w-]+\])?:/i;

/**
 * What a failed script's stderr says, in a line. An uncaught exception ends in noise after its
 * error line (node: the stack, `}` and "Node.js v20…"), so the last error line is named when
 * there is one (python's traceback ends with it anyway); otherwise its last three lines.
 */
function stderrGist(err: string): string {
  const lines = err
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  for (let i = lines.length - 1; i >= 0; i--) if (ERROR_LINE.test(lines[i]!)) return lines[i]!;
  return lines.slice(-3).join(' ');
}

function fromAnswer(text: string, label: string, secrets: readonly string[]) {
  let a: unknown;
  try {
    a = JSON.parse(text);
  } catch {
    throw new ZzError(
      'unavailable',
      `${label} printed something that is not one JSON object: ${quote(text, 300, secrets) || '(nothing)'}`,
    );
  }
  if (!a || typeof a !== 'object' || Array.isArray(a)) {
    throw new ZzError(
      'unavailable',
      `${label} must print a JSON object, got ${quote(text, 300, secrets)}`,
    );
  }
  const ans = a as {
    content?: unknown;
    tool_calls?: unknown;
    object?: unknown;
    usage?: { input_tokens?: unknown; output_tokens?: unknown };
  };
  if (ans.content !== undefined && ans.content !== null && typeof ans.content !== 'string') {
    throw new ZzError('unavailable', `${label}: "content" must be a string`);
  }
  if (ans.tool_calls !== undefined && !Array.isArray(ans.tool_calls)) {
    throw new ZzError('unavailable', `${label}: "tool_calls" must be an array`);
  }
  const tool_calls: ToolCall[] = ((ans.tool_calls ?? []) as unknown[]).map((c, i) => {
    const call = (c ?? {}) as { id?: unknown; name?: unknown; arguments?: unknown };
    if (typeof call.name !== 'string' || !call.name) {
      throw new ZzError('unavailable', `${label}: tool_calls[${i}] has no "name"`);
    }
    return {
      id: typeof call.id === 'string' && call.id ? call.id : `call_${i}`,
      name: call.name,
      ...parseArguments(call.arguments),
    };
  });
  return {
    content: (ans.content as string | undefined) ?? '',
    tool_calls,
    ...(ans.object !== undefined ? { object: ans.object } : {}),
    usage: {
      input_tokens: tokenCount(ans.usage?.input_tokens),
      output_tokens: tokenCount(ans.usage?.output_tokens),
    },
  };
}
