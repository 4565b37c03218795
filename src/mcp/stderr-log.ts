import type { Writable } from 'node:stream';
import { neutralize } from '../schema/control-chars.js';

// The log on stderr of `zz mcp`, bounded. Each bad input line and each failed tool call logs a
// line; a client that reads stdout (the protocol) and never stderr leaves stderr's pipe full,
// and every line written after that was queued in this process: 40,000 bad lines grew zz by
// 26 MB and rising. So while stderr has not drained, further lines are dropped and counted,
// and once it drains one line says how many: what is queued is the pipe's 64 KiB plus one
// line. Imports nothing of the SDK. (`zz serve`'s per-request log still queues without bound
// when its stderr is unread: moving it here hung a test of it in full CI runs, cause not found.)

/** Longest line logged, in characters: a stack that quotes a megabyte of input stays one
 * bounded line (and one line is all that may queue past the pipe). */
export const MAX_LOG_LINE = 16 * 1024;

/**
 * A logger of one line per call on `out`, `prefix` first, control characters neutralised in
 * the whole line (it quotes what callers and other machines wrote). Lines are dropped while
 * `out` is backed up (write() returned false, no 'drain' yet) and counted in a line at 'drain',
 * `notePrefix` first. One per stream: two would each see the other's backlog and count it
 * separately.
 */
export function droppingLog(
  out: Writable,
  prefix: string,
  notePrefix = prefix,
): (msg: string) => void {
  let dropped = 0;
  let watching = false;
  const line = (msg: string, first = prefix): string => {
    // Cut before neutralising (which copies, and may quadruple, the text), and after.
    const safe = neutralize(`${first}${msg}`.slice(0, MAX_LOG_LINE));
    return `${safe.length <= MAX_LOG_LINE ? safe : `${safe.slice(0, MAX_LOG_LINE - 1)}…`}\n`;
  };
  const watch = (): void => {
    if (watching) return;
    watching = true;
    out.once('drain', () => {
      watching = false;
      if (dropped === 0) return;
      const n = dropped;
      dropped = 0;
      write(
        line(
          `${n} log line${n > 1 ? 's' : ''} dropped while stderr was not being read`,
          notePrefix,
        ),
      );
    });
  };
  const write = (text: string): void => {
    if (!out.write(text)) watch();
  };
  return (msg) => {
    // A closed stderr only silences the log (main.ts: the client may close what it never reads).
    if (out.destroyed || out.writableEnded) return;
    if (out.writableNeedDrain) {
      dropped++;
      watch();
      return;
    }
    write(line(msg));
  };
}
