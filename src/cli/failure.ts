import { knownError } from '../errors.js';
import type { CliIO } from './io.js';
import { neutralize } from './terminal.js';

// The CLI's error boundary: every failure becomes one line on stderr and an exit code from the
// error table; nothing else in the CLI decides exit codes. Its own module, so that a command
// run without the command table (fast-path.ts) reports failures in the same words as one run
// through it (run.ts), without loading yargs.

/** Reports `e` on stderr; answers the exit status. */
export function reportFailure(io: CliIO, e: unknown): number {
  // A full disk or a read-only repository is one line too, not a stack (knownError names it).
  const err = knownError(e);
  if (err) {
    io.stderr(`zz: ${neutralize(err.message)}\n`);
    return err.exitCode;
  }
  io.stderr(
    `zz: internal error: ${neutralize((e as Error)?.stack ?? String(e), { multiline: true })}\n`,
  );
  return 1;
}
