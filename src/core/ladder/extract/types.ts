// Shared shapes and limits of the extractive summariser. Part of the extractive summariser (../extract.ts).

import type { RungGenerator } from '../../../schema/rung.js';

export const EXTRACT_VERSION = 'extract-3';

/** Larger files are not summarised (generated bundles, data dumps). */
export const MAX_FILE_BYTES = 512 * 1024;
/** Summaries are one short paragraph: enough to decide whether to open the file. */
export const MAX_SUMMARY_CHARS = 600;
export const LEAD_CHARS = 280;
export const MAX_SYMBOLS = 40;
/** A code file's symbols also name class members and internal functions (rung schema: 200). */
export const MAX_FILE_SYMBOLS = 160;
/** A file rung's outline (its `detail`). */
export const MAX_DETAIL_CHARS = 8 * 1024;
export const SHOWN_SYMBOLS = 8;

export interface Extract {
  title: string;
  summary: string;
  symbols: string[];
  /** Longer text for `ladder_read` (a file's outline), when there is more than the summary. */
  detail?: string;
  /** Who wrote it, when not the build's own summariser (a model build's extractive fallback). */
  generator?: RungGenerator;
}

export type SkipReason = 'binary' | 'too_large';

export interface DirectoryChild {
  name: string;
  kind: 'file' | 'directory';
  title: string;
  summary: string;
  /** Optional ranking hints: a child's exported symbols and size in bytes. */
  symbols?: readonly string[];
  size?: number;
}

export interface PackageInfo {
  name?: string;
  description?: string;
  keywords?: readonly string[];
  version?: string;
}

export interface ReleaseRange {
  /** The previous tag, when there is one. */
  from?: string | null;
  to?: string;
}

export interface ChangesetCommit {
  oid: string;
  subject: string;
  body?: string;
  stats: { files: number; insertions: number; deletions: number };
  paths: readonly string[];
}
