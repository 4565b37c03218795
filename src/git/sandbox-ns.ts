import { execFile } from 'node:child_process';

// run_in_sandbox inside a PID namespace (hardening 11.9). The process sweep (process-sweep.ts)
// finds what left the process group by its environment, directory, output pipes or parentage;
// a double-forked `setsid` daemon that scrubbed its environment, left the directory and
// redirected every fd matches none of them. In a PID namespace the kernel kills every process
// of the namespace when its init (pid 1) dies, whatever it did: so the command runs under
//   unshare [--user --map-current-user] --pid --fork --kill-child node -e INIT ENV file args…
// where unshare's forked child (SIGKILLed should unshare die: --kill-child) is the namespace's
// init, a small node program that starts the command and reports how it ended.
//
// Why an init of our own rather than the command as pid 1: pid 1 of a namespace receives only
// the signals it installed a handler for (SIGKILL from outside excepted), so `sleep 30` as pid
// 1 would ignore the timeout's SIGTERM, and a command killed by a signal could not be reported
// as such (unshare re-raises the child's signal on itself, which pid 1 ignores too). The init
// installs no handler either, so the group's SIGTERM passes it by and reaches the command (pid
// 2, in the same process group) with ordinary semantics; the command's exit code or signal goes
// to us on fd 3, and its exit (or death) takes the whole namespace down.
//
// Not available everywhere: unprivileged user namespaces may be disabled (sysctl, AppArmor),
// a container's seccomp profile may refuse unshare(2), util-linux may be older than 2.38 (no
// --map-current-user), or the OS is not Linux. A probe (once per process) decides; without a
// namespace the run falls back to its process group plus the sweep.

export type Isolation = 'pid-namespace' | 'process-group';

/** Set to "process-group" to never use a namespace (tests, hosts where it misbehaves). */
export const ISOLATION_ENV = 'ZZ_SANDBOX_ISOLATION';
const PROBE_TIMEOUT_MS = 5_000;

function unshareArgs(): string[] {
  // root needs no user namespace (and one would show other users' files as nobody's).
  const user = process.getuid?.() === 0 ? [] : ['--user', '--map-current-user'];
  return [...user, '--pid', '--fork', '--kill-child'];
}

// The command's environment travels in the init's, each name prefixed: not in its arguments,
// which any local user can read in /proc/<pid>/cmdline (an environment only its owner can), and
// not as itself, so a NODE_OPTIONS or the like meant for the command cannot change the init.
const ENV_PREFIX = 'ZZ_SANDBOX_ENV_';

// The init, as CommonJS for `node -e`. argv: the command. The command's fd 3 is /dev/null, not
// our report pipe. It exits with the command's code (128+n after a signal) so unshare's own
// status stays meaningful should fd 3 be lost.
const INIT = `
const fs = require('node:fs'), cp = require('node:child_process'), os = require('node:os');
const env = {};
for (const [k, v] of Object.entries(process.env))
  if (k.startsWith('${ENV_PREFIX}')) env[k.slice(${ENV_PREFIX.length})] = v;
const [file, ...args] = process.argv.slice(1);
const report = (s) => { try { fs.writeSync(3, s); } catch {} };
let nul = 'ignore';
try { nul = fs.openSync('/dev/null', 'r'); } catch {}
const c = cp.spawn(file, args, { env, stdio: ['inherit', 'inherit', 'inherit', nul] });
c.on('error', (e) => { if (c.pid === undefined) { report('error ' + (e.code || e.message)); process.exit(127); } });
c.on('exit', (code, sig) => {
  report(sig ? 'signal ' + sig : 'exit ' + code);
  process.exit(sig ? 128 + (os.constants.signals[sig] || 0) : code);
});
`;

/** How to start `command` with `env` inside a fresh PID namespace (fd 3: the init's report). */
export function namespaceLaunch(
  command: readonly string[],
  env: Record<string, string>,
): { file: string; args: string[]; env: Record<string, string> } {
  const initEnv: Record<string, string> = {
    // PATH finds unshare; nothing else of the init's own.
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
  };
  for (const [k, v] of Object.entries(env)) initEnv[ENV_PREFIX + k] = v;
  return {
    file: 'unshare',
    args: [...unshareArgs(), process.execPath, '--no-warnings', '-e', INIT, ...command],
    env: initEnv,
  };
}

export type InitReport =
  | { kind: 'exit'; code: number }
  | { kind: 'signal'; signal: string }
  | { kind: 'error'; code: string };

/** Parses what the init wrote on fd 3 (null: nothing, it was killed first). */
export function parseInitReport(text: string): InitReport | null {
  const m = /^(exit|signal|error) (.+)$/.exec(text.trim());
  if (!m) return null;
  if (m[1] === 'exit') return /^\d+$/.test(m[2]!) ? { kind: 'exit', code: Number(m[2]) } : null;
  if (m[1] === 'signal') return { kind: 'signal', signal: m[2]! };
  return { kind: 'error', code: m[2]! };
}

let probed: Promise<boolean> | null = null;

/**
 * Whether this process can run commands in a PID namespace (probed by running the init; a
 * definite answer is kept for the process's life). A probe that timed out (a loaded machine)
 * answers no for that run only, and the next run probes again: kept, one slow moment left a
 * daemon on the weaker process-group isolation until it restarted.
 */
export function namespaceAvailable(timeoutMs = PROBE_TIMEOUT_MS): Promise<boolean> {
  if (process.env[ISOLATION_ENV] === 'process-group') return Promise.resolve(false);
  if (process.platform !== 'linux') return Promise.resolve(false);
  if (probed) return probed;
  const probe = new Promise<boolean>((resolve) => {
    const l = namespaceLaunch(['true'], { PATH: process.env.PATH ?? '/usr/bin:/bin' });
    execFile(l.file, l.args, { env: l.env, timeout: timeoutMs, killSignal: 'SIGKILL' }, (err) => {
      if (err?.killed && probed === probe) probed = null;
      resolve(err === null);
    });
  });
  probed = probe;
  return probe;
}
