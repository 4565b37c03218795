import type { Argv } from 'yargs';
import { ZzError } from '../errors.js';
import type { SyncReport } from '../core/sync/index.js';
// That leaf module alone (no core): sync-command.ts loads with every command (cli/run.ts).
import { moreQuarantined, QUARANTINED_SHOWN } from '../schema/quarantine-shown.js';
import { dropHeldCommand } from './drop-held-command.js';
import type { CliIO } from './io.js';
import { jsonText, neutralize } from './terminal.js';

// `zz sync [REMOTE] [--json]`: one round of DESIGN §7's sync, said in a few lines. Offline is
// one line on stderr and exit code 7 (ZzError 'unavailable'); nothing local changes then.

/**
 * A person at a terminal runs this sync or init: let git talking to remotes ask there (an ssh
 * key's passphrase, an unknown host key), as plain git would. Without it git runs in a session
 * of its own (so a stalled remote's helpers die with it) where ssh cannot ask, and such a key
 * failed as a permission error. Loaded on demand: git/ is not needed by every command.
 */
export async function letRemotesAskHere(io: CliIO): Promise<void> {
  if (!io.stdinIsTTY || !(io.stderrIsTTY ?? io.isTTY)) return;
  (await import('../git/zz-transport.js')).letRemotesAskOnTerminal();
}

const short = (ref: string): string => neutralize(ref.replace(/^refs\/zz\//, ''));

/**
 * How many refs each thing happened to, for the summary line and `--json`'s `counts` alike.
 * A ref fetched is one the remote changed here: new, fast-forwarded or merged (a merged ref
 * was fetched too: the summary once said "fetched 0" for a ref it had fetched and merged).
 * Quarantined refs were fetched and kept aside, held-back ones not pushed; neither is in
 * `fetched` or `pushed`.
 */
export interface SyncCounts {
  fetched: number;
  new: number;
  fast_forwarded: number;
  merged: number;
  pushed: number;
  held_back: number;
  quarantined: number;
  /** Refs with local work not pushed because the remote's tip is quarantined. */
  not_pushed: number;
}

export function syncCounts(r: SyncReport): SyncCounts {
  return {
    fetched: r.adopted.length + r.fast_forwarded.length + r.merged.length,
    new: r.adopted.length,
    fast_forwarded: r.fast_forwarded.length,
    merged: r.merged.length,
    pushed: r.pushed.length,
    held_back: r.held_back.length,
    // Names outside zz's layout past the first few are counted, not listed (remote-names.ts).
    quarantined: r.quarantined.length + hiddenOutside(r),
    not_pushed: r.not_pushed.length,
  };
}

export function formatSyncReport(r: SyncReport): string {
  const lines: string[] = [];
  const n = syncCounts(r);
  const how = [
    n.new ? `${n.new} new` : '',
    n.fast_forwarded ? `${n.fast_forwarded} fast-forwarded` : '',
    n.merged ? `${n.merged} merged` : '',
  ].filter(Boolean);
  const parts = [
    `fetched ${n.fetched} ref(s)${how.length ? ` (${how.join(', ')})` : ''}`,
    r.authoritative ? `pushed ${n.pushed}` : 'fetch-only remote, nothing pushed',
    ...(n.held_back ? [`held back ${n.held_back}`] : []),
    ...(n.quarantined ? [`quarantined ${n.quarantined}`] : []),
    ...(n.not_pushed ? [`not pushed ${n.not_pushed}`] : []),
  ];
  lines.push(`Synced with ${neutralize(r.remote)}: ${parts.join(', ')}.`);
  for (const m of r.merged) {
    const synced = m.rewritten?.synced.slice(0, 10);
    const how = !m.rewritten
      ? `${m.local_ops} local op(s) after the remote's`
      : `${m.rewritten.wrapped ? `remote folds a rival history before what was synced at ${synced}` : `remote rewritten (not a descendant of what was synced at ${synced})`}: its ${m.rewritten.remote_ops} op(s) after what was published`;
    lines.push(`  merged ${short(m.ref)} (${how}) as ${m.commit.slice(0, 10)}`);
  }
  for (const ref of r.recreated) {
    lines.push(`  ${short(ref)} was missing on ${neutralize(r.remote)} and has been pushed back`);
  }
  for (const c of r.claims_lost) {
    const to =
      c.reason === 'lane_closed'
        ? `refused: the Lane was closed first (by ${neutralize(c.closed_by ?? '?')}) and hands out no new claims`
        : c.reason === 'dependency_unresolved'
          ? `refused: it is blocked by ${neutralize((c.blocked_by ?? []).join(', ') || '?')}`
          : `lost to ${neutralize(c.winner ?? 'an earlier answer')}`;
    lines.push(
      `  claim lost: ${neutralize(c.ask_id ?? '?')} in ${short(c.ref)} — ${neutralize(c.loser)} ${to}${fromRemote(c)}`,
    );
  }
  for (const x of r.rejected) {
    lines.push(
      `  refused: ${neutralize(x.op)} by ${neutralize(x.actor)} in ${short(x.ref)} (${neutralize(x.reason)}${x.needed ? `: needs ${neutralize(x.needed)}` : ''})${fromRemote(x)}`,
    );
  }
  for (const x of r.newly_refused) {
    lines.push(
      `  now refused: ${neutralize(x.op)} by ${neutralize(x.actor)} in ${short(x.ref)} (${neutralize(x.reason)}${x.needed ? `: needs ${neutralize(x.needed)}` : ''}): op ${neutralize(x.op_id)}, written on this clone, was accepted until this sync`,
    );
  }
  for (const q of r.quarantined.slice(0, QUARANTINED_SHOWN)) {
    const kept =
      q.kept === false
        ? `not kept here; an owner deletes it: git push ${neutralize(r.remote)} :${neutralize(q.ref)}`
        : `kept as refs/zz-quarantine/${neutralize(r.remote)}/${short(q.ref)}`;
    lines.push(
      `  quarantined ${short(q.ref)}: commit ${q.commit.slice(0, 10)} ${neutralize(q.reason)} (${kept})`,
    );
  }
  const more = moreQuarantined(r);
  if (more) lines.push(`  ${more}`);
  if (r.still_quarantined > 0) {
    const rem = neutralize(r.remote);
    lines.push(
      `  ${r.still_quarantined} ref(s) still quarantined, unchanged on ${rem} (kept as refs/zz-quarantine/${rem}/…; git for-each-ref refs/zz-quarantine/ lists them)`,
    );
  }
  if (r.outside_layout?.truncated) {
    const rem = neutralize(r.remote);
    lines.push(
      `  … and ${hiddenOutside(r)} more name(s) outside zz's layout on ${rem} (${r.outside_layout.count} in all; git ls-remote ${rem} 'refs/zz/*' lists them); an owner deletes each: git push ${rem} :<ref>`,
    );
  }
  for (const h of r.held_back) {
    lines.push(
      `  not pushed: ${short(h.ref)}: commit ${h.commit.slice(0, 10)} ${neutralize(h.reason)}; every other machine would quarantine it, so it stays here${h.until !== undefined ? ` until this clock reaches ${neutralize(h.until)}` : ' (`zz key list` shows the registered keys)'}`,
    );
  }
  for (const x of r.not_pushed) {
    const why =
      'quarantined' in x
        ? `${neutralize(r.remote)}'s tip ${x.quarantined.slice(0, 10)} is quarantined; an owner replaces that tip to unfreeze it (README, "A quarantined ref")`
        : `${neutralize(r.remote)} holds ${neutralize(x.name_taken_by)}, whose name conflicts with it; an owner deletes that ref: git push ${neutralize(r.remote)} :${neutralize(x.name_taken_by)}`;
    lines.push(
      `  not pushed: ${short(x.ref)}: local commit ${x.commit.slice(0, 10)} stays here while ${why}`,
    );
  }
  for (const d of r.diverged)
    lines.push(`  left alone: ${short(d)} differs here and on the remote`);
  if (r.attempts > 1) lines.push(`  (${r.attempts} attempts: lost a race with another pusher)`);
  return lines.join('\n') + '\n';
}

/** How many names outside zz's layout the report counts but does not list. */
const hiddenOutside = (r: SyncReport): number =>
  r.outside_layout ? r.outside_layout.count - r.outside_layout.shown : 0;

/**
 * `zz sync` exits 6 (precondition_failed) when it held back something of ours that stays held
 * until someone acts: that ref is frozen on the remote until the refused commit passes (a key
 * registered) or is gone (held-back.ts). A hold that clears by itself is not this: see
 * datedNotice.
 */
function heldBackError(r: SyncReport, stuck: SyncReport['held_back']): ZzError {
  const refs = stuck.map((h) => short(h.ref)).join(', ');
  return new ZzError(
    'precondition_failed',
    `${stuck.length} ref(s) of this clone not pushed to ${neutralize(r.remote)} (${refs}): every other clone would refuse a commit on them (see "not pushed" above), and nothing written after it on those refs is pushed either. A commit not signed by a key registered for its actor passes once that key is registered (zz key add --actor <actor> --key "<public key>", run where a registered key signs it); an owner-level op not signed by an owner's key never does: write such changes with the owner's own zz, signed by their key. To share the rest now, drop what cannot pass: zz sync --drop-held ${short(stuck[0]!.ref)} (re-applies the ops this machine can sign on the remote's tip, reports the ones dropped, keeps the old tip under refs/zz-dropped/)`,
  );
}

/**
 * Ops of ours dated ahead of this clock (written while it ran ahead) are held back until it
 * reaches them, and then go out with the next sync, with no one doing anything: `zz sync`
 * says so on stderr and exits 0. Exit 6 there (as before) made a `set -e` script stop for as
 * long as the clock lagged, and could not be told from a clone stuck until someone acts.
 */
function datedNotice(r: SyncReport, dated: SyncReport['held_back']): string {
  const refs = dated.map((h) => short(h.ref)).join(', ');
  const until = dated
    .map((h) => h.until!)
    .sort()
    .at(-1)!;
  return `zz: ${dated.length} ref(s) not pushed to ${neutralize(r.remote)} yet (${refs}): ops of this clone are dated ahead of this machine's clock (written while it ran ahead); the first zz sync after ${neutralize(until)} pushes them, nothing else to do\n`;
}

/**
 * What `zz sync` says of the refs it held back and how it exits: a notice (stderr, exit 0) for
 * the holds that clear by themselves, an error (exit 6) naming only those that do not.
 */
export function heldBackOutcome(r: SyncReport): { notice: string | null; error: ZzError | null } {
  const dated = r.held_back.filter((h) => h.until !== undefined);
  const stuck = r.held_back.filter((h) => h.until === undefined);
  return {
    notice: dated.length > 0 ? datedNotice(r, dated) : null,
    error: stuck.length > 0 ? heldBackError(r, stuck) : null,
  };
}

/** Marks what a merge refused of the remote's ops (report.ts Origin): not this clone's. */
const fromRemote = (x: { origin?: string }): string =>
  x.origin === 'remote' ? " (the remote's op, not one of this clone's)" : '';

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
        .option('drop-held', {
          type: 'string',
          describe:
            "Rebuild a ref this clone's pushes hold back (config or lanes/<id>) on the remote's tip: re-apply the ops this machine can sign, drop the rest (reported), keep the old tip under refs/zz-dropped/, push",
        })
        .option('allow-unrelated', {
          type: 'boolean',
          describe:
            "Merge even when the remote's zz state names another project's root commits (as git merge --allow-unrelated-histories)",
        }),
    async (a) => {
      if (a['drop-held'] !== undefined) return dropHeldCommand(io, a);
      const { ZzRepo } = await import('../core/index.js');
      const { ownersLostNotices, syncRepo } = await import('../core/sync/index.js');
      const repo = await ZzRepo.open(io.cwd);
      await letRemotesAskHere(io);
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
        // `counts` is added beside the report's own fields, which keep their names.
        if (a.json) io.stdout(jsonText({ ...report, counts: syncCounts(report) }) + '\n');
        if (report.offline !== null) {
          throw new ZzError(
            'unavailable',
            `cannot reach ${report.remote} (${neutralize(report.offline)}); nothing was lost, run zz sync again when it is reachable`,
          );
        }
        if (!a.json) io.stdout(formatSyncReport(report));
        for (const line of ownersLostNotices(repo.key, report))
          io.stderr(`zz: ${neutralize(line)}\n`);
        // Not a success: nothing written after a held-back commit on that ref is shared
        // either, the owner's own later changes included (a script must not read "synced").
        // Unless the hold clears by itself (datedNotice): said, exit 0.
        const held = heldBackOutcome(report);
        if (held.notice !== null) io.stderr(held.notice);
        if (held.error !== null) throw held.error;
      } finally {
        repo.close();
      }
    },
  );
}
