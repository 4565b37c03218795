import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { readJsonFile, writeJsonAtomic } from '../../local/index.js';
import { PAGE } from '../../schema/limits.js';
import type { ZzRepo } from '../zz-repo.js';
import type { SyncReport } from './report.js';

// What the last sync with the authoritative remote held back (SyncReport.held_back), kept in
// <gitdir>/zz/held-back.json so that repo_state (and the dashboard, which renders it) says so
// whoever synced: the daemon's automatic sync, `zz sync` run in a terminal, another process. A
// held-back ref is not a passing note: nothing written after the refused commit on that ref
// reaches the remote either, so it stays listed until a sync pushes the ref.

export interface HeldBack {
  remote: string;
  ref: string;
  commit: string;
  reason: string;
  /** When a hold for an op dated ahead clears by itself (SyncReport.held_back). */
  until?: string;
}

const record = z.object({
  remote: z.string().max(200),
  held_back: z
    .array(
      z.object({
        ref: z.string().max(1000),
        commit: z.string().max(64),
        reason: z.string(),
        until: z.string().max(64).optional(),
      }),
    )
    .max(PAGE.maxListedProblems),
  more: z.number().int().min(0),
});

function fileOf(repo: ZzRepo): string | null {
  return repo.git ? join(repo.git.gitdir, 'zz', 'held-back.json') : null;
}

/**
 * Records what an authoritative, reachable round held back (the first PAGE.maxListedProblems
 * by ref, and how many more), replacing what the previous round recorded. Written only when it
 * changed; a failure to write it (a read-only repository) never fails the sync.
 */
export async function recordHeldBack(repo: ZzRepo, report: SyncReport): Promise<void> {
  const file = fileOf(repo);
  if (!file || !report.authoritative || report.offline !== null) return;
  const all = [...report.held_back].sort((a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0));
  const next = {
    remote: report.remote,
    held_back: all.slice(0, PAGE.maxListedProblems),
    more: Math.max(0, all.length - PAGE.maxListedProblems),
  };
  try {
    const now = await fsp.readFile(file, 'utf8').catch(() => null);
    if (now === null && all.length === 0) return;
    const text = JSON.stringify(next, null, 2) + '\n';
    if (now === text) return;
    await fsp.mkdir(join(file, '..'), { recursive: true });
    await writeJsonAtomic(file, next);
  } catch {
    // The report itself still says it; the next round tries again.
  }
}

/** What the last round recorded; nothing when there is no record or it cannot be read. */
export async function readHeldBack(
  repo: ZzRepo,
): Promise<{ held_back: HeldBack[]; held_back_more: number }> {
  const file = fileOf(repo);
  const r = file ? await readJsonFile(file, record).catch(() => null) : null;
  if (!r) return { held_back: [], held_back_more: 0 };
  return {
    held_back: r.held_back.map((h) => ({ remote: r.remote, ...h })),
    held_back_more: r.more,
  };
}

/**
 * Takes `ref` off the record once `zz sync --drop-held` has rebuilt it (drop-held.ts), so
 * repo_state stops listing it before the next sync round rewrites the record anyway. Like
 * recordHeldBack, a failure to write never fails the caller.
 */
export async function forgetHeldBack(repo: ZzRepo, ref: string): Promise<void> {
  const file = fileOf(repo);
  if (!file) return;
  try {
    const r = await readJsonFile(file, record).catch(() => null);
    if (!r || !r.held_back.some((h) => h.ref === ref)) return;
    await writeJsonAtomic(file, { ...r, held_back: r.held_back.filter((h) => h.ref !== ref) });
  } catch {
    // The next sync round records what is held back then.
  }
}
