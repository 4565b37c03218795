// No imports: the CLI loads this with every command (cli/sync-command.ts).

/**
 * Quarantined refs named one a line in what a person reads (`zz sync`, `zz init`, the daemon's
 * log); the rest are counted. The report keeps them all (--json): 20,000 refs pushed as spam
 * printed 20,000 lines (hostile review H4).
 */
export const QUARANTINED_SHOWN = 20;

/** The line after the first QUARANTINED_SHOWN quarantined refs, or null when none are left. */
export function moreQuarantined(report: { quarantined: readonly unknown[] }): string | null {
  const more = report.quarantined.length - QUARANTINED_SHOWN;
  return more > 0
    ? `… and ${more} more quarantined ref(s) (git for-each-ref refs/zz-quarantine/ lists them)`
    : null;
}
