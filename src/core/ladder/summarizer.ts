import type { RungGenerator, RungKind } from '../../schema/rung.js';
import {
  EXTRACT_VERSION,
  summarizeChangeset,
  summarizeDirectory,
  summarizeFile,
  summarizeRelease,
  summarizeRepo,
  type ChangesetCommit,
  type DirectoryChild,
  type Extract,
  type PackageInfo,
  type ReleaseRange,
} from './extract.js';

/**
 * Writes the prose of a Ladder build. The extractive one is the default; `--model` wraps it
 * (model-summarizer.ts) and falls back to it on any failure. Implementations may be async.
 */
export interface Summarizer {
  readonly generator: RungGenerator;
  /**
   * The generator that writes rungs of `kind` when this one leaves them to another (a model
   * writes file prose; folders and history stay extractive). Default: `generator`.
   */
  writerOf?(kind: RungKind): RungGenerator;
  file(path: string, content: Buffer): Extract | null | Promise<Extract | null>;
  directory(
    path: string,
    children: readonly DirectoryChild[],
    readme: { summary: string } | null,
    pkg: PackageInfo | null,
  ): Extract | Promise<Extract>;
  repo(
    readme: { title?: string | null; summary: string } | null,
    topChildren: readonly DirectoryChild[],
    pkg: PackageInfo | null,
    name: string,
  ): Extract | Promise<Extract>;
  release(
    tag: string,
    commits: ReadonlyArray<{ subject: string }>,
    range: ReleaseRange,
  ): Extract | Promise<Extract>;
  changeset(commit: ChangesetCommit): Extract | Promise<Extract>;
}

export const extractiveSummarizer: Summarizer = {
  generator: { method: 'extractive', version: EXTRACT_VERSION },
  file: summarizeFile,
  directory: summarizeDirectory,
  repo: summarizeRepo,
  release: summarizeRelease,
  changeset: summarizeChangeset,
};
