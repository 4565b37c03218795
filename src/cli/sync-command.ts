import type { Argv } from 'yargs';
import { ZzError } from '../errors.js';
import type { SyncReport } from '../core/sync/index.js';
import type { CliIO } from './io.js';

// `zz sync [REMOTE] [--json]`: one round of DESIGN §7's sync, said in a few lines. Offline is
// one line on stderr and exit code 7 (ZzError 'unavailable'); nothing local changes then.

/** Control characters (ANSI escapes in an actor name, say) are shown, never executed. */
const safe = (s: string): string =>
  s.replace(/[\0-\x1f\x7f\x9b]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
const short = (ref: string): string => safe(ref.replace(/^refs\/zz\//, ''));

export function formatSyncReport(r: SyncReport): string {
  const lines: string[] = [];
  const fetched = r.adopted.length + r.fast_forwarded.length;
  const parts = [
    `fetched ${fetched} ref(s)${fetched ? ` (${r.adopted.length} new, ${r.fast_forwarded.length} fast-forwarded)` : ''}`,
    `merged ${r.merged.length}`,
    r.authoritative ? `pushed ${r.pushed.length}` : 'fetch-only remote, nothing pushed',
  ];
  lines.push(`Synced with ${safe(r.remote)}: ${parts.join(', ')}.`);
  for (const m of r.merged) {
    lines.push(
      `  merged ${short(m.ref)} (${m.local_ops} local op(s) after the remote's) as ${m.commit.slice(0, 10)}`,
    );
  }
  for (const ref of r.recreated) {
    lines.push(`  ${short(ref)} was missing on ${safe(r.remote)} and has been pushed back`);
  }
  for (const c of r.claims_lost) {
    lines.push(
      `  claim lost: ${safe(c.ask_id ?? '?')} in ${short(c.ref)} — ${safe(c.loser)} lost to ${safe(c.winner ?? 'an earlier answer')}`,
    );
  }
  for (const x of r.rejected) {
    lines.push(
      `  refused: ${safe(x.op)} by ${safe(x.actor)} in ${short(x.ref)} (${x.reason}${x.needed ? `: needs ${x.needed}` : ''})`,
    );
  }
  for (const q of r.quarantined) {
    lines.push(
      `  quarantined ${short(q.ref)}: commit ${q.commit.slice(0, 10)} ${safe(q.reason)} (kept as refs/zz-quarantine/${safe(r.remote)}/${short(q.ref)})`,
    );
  }
  for (const h of r.held_back) {
    lines.push(
      `  not pushed: ${short(h.ref)}: commit ${h.commit.slice(0, 10)} ${safe(h.reason)}; every other machine would quarantine it, so it stays here (\`zz key list\` shows the registered keys)`,
    );
  }
  for (const d of r.diverged)
    lines.push(`  left alone: ${short(d)} differs here and on the remote`);
  if (r.attempts > 1) lines.push(`  (${r.attempts} attempts: lost a race with another pusher)`);
  return lines.join('\n') + '\n';
}

export function syncCommand(y: Argv, io: CliIO): Argv {
  return y.command(
    'sync [remote]',
    'Share zz state through a git remote: fetch, merge what diverged, push (DESIGN §7)',
    (c: Argv) =>
      c
        .positional('remote', {
          type: 'string',
          describe: 'Remote to sync with (default: git config zz.remote, else origin)',
        })
        .option('json', { type: 'boolean', describe: 'Print the report as JSON' })
        .option('allow-unrelated', {
          type: 'boolean',
          describe:
            "Merge even when the remote's zz state names another project's root commits (as git merge --allow-unrelated-histories)",
        }),
    async (a) => {
      const { ZzRepo } = await import('../core/index.js');
      const { ownersLostNotices, syncRepo } = await import('../core/sync/index.js');
      const repo = await ZzRepo.open(io.cwd);
      // Each ref moves in one step (an update-ref transaction after its objects are in), so
      // an interrupted round leaves every ref as it was or as synced, never half-written;
      // the next round finishes the job (tests: convergence and a clean fsck after Ctrl-C).
      io.setInterruptNote?.(
        'zz: sync interrupted; local zz state is intact (each ref is as it was or as synced), run zz sync again to finish',
      );
      try {
        const report = await syncRepo(
          repo,
          a.remote === undefined ? undefined : String(a.remote),
          a['allow-unrelated'] === true ? { allowUnrelated: true } : {},
        );
        if (a.json) io.stdout(JSON.stringify(report, null, 2) + '\n');
        if (report.offline !== null) {
          throw new ZzError(
            'unavailable',
            `cannot reach ${report.remote} (${safe(report.offline)}); nothing was lost, run zz sync again when it is reachable`,
          );
        }
        if (!a.json) io.stdout(formatSyncReport(report));
        for (const line of ownersLostNotices(repo.key, report)) io.stderr(`zz: ${safe(line)}\n`);
      } finally {
        repo.close();
      }
    },
  );
}
