import { ZzError } from '../errors.js';
import type { DropHeldReport } from '../core/sync/index.js';
import type { CliIO } from './io.js';
import { jsonText, neutralize } from './terminal.js';

// `zz sync --drop-held <ref> [--json]`: the way out for a ref this clone's pushes hold back
// (core/sync/drop-held.ts). Runs in-process like `zz sync`, daemon or not: the ref moves by
// compare-and-swap, and a daemon's writer that loses that race re-reads and retries.

const short = (ref: string): string => neutralize(ref.replace(/^refs\/zz\//, ''));

export function formatDropReport(r: DropHeldReport): string {
  const lines: string[] = [];
  const remote = neutralize(r.remote);
  const on =
    r.remote_tip === null
      ? `what was last synced to ${remote} (${r.base.slice(0, 10)}; the ref was deleted there)`
      : `${remote}'s tip ${r.remote_tip.slice(0, 10)}`;
  lines.push(
    `Rebuilt ${short(r.ref)} on ${on}: re-applied ${r.reapplied.length} op(s), dropped ${r.dropped.length}.`,
  );
  lines.push(`  it was held back: ${neutralize(r.held_back_reason)}`);
  for (const o of r.reapplied) {
    const refused = o.refused
      ? ` (kept in the log, refused by the fold: ${neutralize(o.refused)})`
      : '';
    lines.push(
      `  re-applied: ${neutralize(o.op)} by ${neutralize(o.actor)} (op ${neutralize(o.id)})${refused}`,
    );
  }
  for (const o of r.dropped) {
    lines.push(
      `  dropped: ${neutralize(o.op)} by ${neutralize(o.actor)} (op ${neutralize(o.id)}): ${neutralize(o.reason)}`,
    );
  }
  lines.push(
    `  the old tip ${r.old_tip.slice(0, 10)} is kept as ${neutralize(r.backup)} (git log ${neutralize(r.backup)} shows every dropped op)`,
  );
  if (r.backups_removed.length > 0) {
    lines.push(`  removed ${r.backups_removed.length} older backup(s) of ${short(r.ref)}`);
  }
  lines.push(
    r.pushed
      ? `  ${short(r.ref)} is on ${remote} now.`
      : `  not pushed yet (${neutralize(r.push_problem ?? '?')}): run zz sync to push it`,
  );
  return lines.join('\n') + '\n';
}

export async function dropHeldCommand(
  io: CliIO,
  a: { remote?: unknown; json?: unknown; 'drop-held'?: unknown; 'allow-unrelated'?: unknown },
): Promise<void> {
  if (a.remote !== undefined) {
    throw new ZzError(
      'invalid_argument',
      '--drop-held works against the authoritative remote (git config zz.remote, default origin): name no remote',
    );
  }
  const [{ ZzRepo }, { dropHeld, signInProcess }, { gitUserEmail }] = await Promise.all([
    import('../core/index.js'),
    import('../core/sync/index.js'),
    import('../core/identity.js'),
  ]);
  const repo = await ZzRepo.open(io.cwd);
  io.setInterruptNote?.(
    'zz: drop interrupted; the ref and its backup move in one step, so each is as it was or as rebuilt; run zz sync to finish',
  );
  try {
    // Re-applied ops are signed as the daemon signs this person's writes (and their agents').
    const person = await gitUserEmail(io.cwd, io.env).catch(() => null);
    if (person) signInProcess(repo, person, io.env);
    const report = await dropHeld(repo, String(a['drop-held']));
    io.stdout(a.json ? jsonText(report) + '\n' : formatDropReport(report));
  } finally {
    repo.close();
  }
}
