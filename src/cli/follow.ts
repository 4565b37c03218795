import type { Argv } from 'yargs';
import { displayWidth, jsonText, neutralize, padColumns } from './terminal.js';
import type { CliIO } from './io.js';

// `zz lane events --follow`: long-polls lane_events (wait_ms) in a loop and prints each event
// as it arrives, one line each (one JSON object a line with --json), until Ctrl-C. Through a
// daemon or in-process alike; Ctrl-C aborts the poll in flight.

const WAIT_MS = 25_000;

export function addFollowOption(c: Argv): Argv {
  return c.option('follow', {
    alias: 'f',
    type: 'boolean',
    describe: 'Keep printing new events as they happen, until Ctrl-C',
  });
}

/**
 * Columns for lines printed as they arrive: each as wide as the widest value seen so far (an
 * ISO time, a Lane id, an op name, an actor to start with), so that the lines of a stream line
 * up under the header as a table does; it printed `TIME  LANE_ID  OP  ACTOR  ASK_ID` above rows
 * each two spaces apart, which no column followed. A wider value widens its column from there.
 */
function columns(): { header: string; line(e: Record<string, unknown>): string } {
  const widths = [24, 12, 14, 24];
  const row = (vals: string[]) =>
    vals
      .map((v, i) => {
        if (i === vals.length - 1) return v;
        widths[i] = Math.max(widths[i]!, displayWidth(v));
        return padColumns(v, widths[i]!);
      })
      .join('  ');
  return {
    header: row(['TIME', 'LANE_ID', 'OP', 'ACTOR', 'ASK_ID']),
    line: (e) =>
      row(
        [e.time, e.lane_id, e.op, e.actor, e.ask_id ?? '-'].map((v) =>
          neutralize(String(v ?? '-')),
        ),
      ),
  };
}

export async function followEvents(
  io: CliIO,
  args: Record<string, unknown>,
  json: boolean,
): Promise<void> {
  // Loaded here, not with the command table (`zz lane --help` must not load zod and git).
  const { connect } = await import('./client.js');
  const client = await connect({ cwd: io.cwd, env: io.env });
  const abort = new AbortController();
  let stopped = false;
  void io.stopSignal?.then(() => {
    stopped = true;
    abort.abort();
  });
  let cursor = args.cursor as string | undefined;
  // Lanes that cannot be read are skipped by lane_events, which names them: said once each.
  const told = new Set<string>();
  let toldMore = 0;
  try {
    const table = columns();
    if (!json) io.stdout(table.header + '\n');
    while (!stopped) {
      let r: Record<string, unknown>;
      try {
        r = await client.call(
          'lane_events',
          { ...args, ...(cursor ? { cursor } : {}), wait_ms: args.wait_ms ?? WAIT_MS },
          { signal: abort.signal },
        );
      } catch (e) {
        if (stopped) break;
        throw e;
      }
      for (const c of (r.corrupt as Array<{ ref: string; error: string }> | undefined) ?? []) {
        if (told.has(c.ref)) continue;
        told.add(c.ref);
        io.stderr(
          `zz: skipped ${neutralize(c.ref)}, which cannot be read: ${neutralize(c.error)}\n`,
        );
      }
      // Past the first 50, lane_events only counts them: say so once per new count.
      const more = typeof r.corrupt_more === 'number' ? r.corrupt_more : 0;
      if (more > 0 && more !== toldMore) {
        toldMore = more;
        io.stderr(`zz: skipped ${more} more lane ref(s) that cannot be read\n`);
      }
      for (const e of (r.events as Array<Record<string, unknown>> | undefined) ?? []) {
        io.stdout(json ? jsonText(e, 0) + '\n' : table.line(e) + '\n');
      }
      cursor = r.next_cursor as string;
    }
  } finally {
    client.close();
  }
}
