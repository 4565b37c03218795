import type { GitRepository } from '../../git/index.js';
import {
  MAX_SUMMARY_BYTES,
  MAX_TITLE_CHARS,
  type Rung,
  type RungAnchor,
  type RungGenerator,
  type RungKind,
} from '../../schema/rung.js';
import { recordChecker } from './build-record.js';
import type { Extract } from './extract.js';
import { sha } from './ladder.js';
import type { LadderState, RungRecord } from './ladder-state.js';
import { extractiveSummarizer, type Summarizer } from './summarizer.js';

// What every phase of `zz ladder build` shares: the head it anchors to, the Ladder as it was,
// the summariser, and the rungs this build wants (desired). The phases (build-tree.ts,
// build-history.ts, build-github.ts) only add to `desired`; build.ts turns it into one commit.

/** Bump when the build's own inputs (not the summariser's heuristics) change meaning. */
export const BUILD_VERSION = 'build-1';

export interface BuildProgress {
  phase: 'files' | 'directories' | 'history' | 'github' | 'commit';
  done: number;
  total: number;
  /** A short note for the terminal (e.g. a rate-limit countdown). */
  note?: string;
}

const METHOD_RANK: Record<RungGenerator['method'], number> = { extractive: 0, model: 1, human: 2 };

/** The extractive generator: what writes every rung a model does not (folders, history, GitHub). */
export const EXTRACTIVE: RungGenerator = extractiveSummarizer.generator;

/**
 * Whether a rung written another way stands against this build while its object is unchanged:
 * a human's over any build, a model's over an extractive one.
 */
export function outranks(written: RungGenerator, build: RungGenerator): boolean {
  return METHOD_RANK[written.method] > METHOD_RANK[build.method];
}

export function sameGenerator(a: RungGenerator, b: RungGenerator): boolean {
  return (
    a.method === b.method && a.version === b.version && (a.model ?? null) === (b.model ?? null)
  );
}

/**
 * Whether a rung `written` by one generator, from the very inputs this build has, stands
 * against a build whose writer for that kind is `writer` (DESIGN §6). What a user paid for is
 * never lost to a cheaper build: a model's rung stands against an extractive build, another
 * model's against this one. A better writer upgrades (a model build over extractive text), and
 * so does a newer version of the same writer (extractor or prompt). `rebuild` rewrites all but
 * a human's.
 */
export function stands(written: RungGenerator, writer: RungGenerator, rebuild: boolean): boolean {
  if (sameGenerator(written, writer) || written.method === 'human') return true;
  if (rebuild) return false;
  const a = METHOD_RANK[written.method];
  const b = METHOD_RANK[writer.method];
  if (a !== b) return a > b;
  // Same method, other version or model: another model stands (only --rebuild replaces it);
  // an older extractor or prompt of the same model does not.
  return written.method === 'model' && (written.model ?? null) !== (writer.model ?? null);
}

/** What an inputs_hash starts with: the build version and the generator that wrote the rung. */
function genKey(g: RungGenerator): unknown[] {
  return [BUILD_VERSION, g.method, g.model ?? null, g.version];
}

export function basename(p: string): string {
  const i = p.lastIndexOf('/');
  return i < 0 ? p : p.slice(i + 1);
}

export function dirname(p: string): string {
  const i = p.lastIndexOf('/');
  return i < 0 ? '' : p.slice(0, i);
}

function clipBytes(s: string, max: number): string {
  if (Buffer.byteLength(s, 'utf8') <= max) return s;
  let out = s.slice(0, max);
  while (Buffer.byteLength(out, 'utf8') > max - 3) out = out.slice(0, -16);
  return out + '…';
}

/** Makes an extract fit the rung schema whatever a summariser returned. */
function tidy(e: Extract, fallbackTitle: string): Extract {
  const title =
    (e.title ?? '').trim().slice(0, MAX_TITLE_CHARS) ||
    fallbackTitle.slice(0, MAX_TITLE_CHARS) ||
    'untitled';
  const summary = clipBytes((e.summary ?? '').trim() || `${title}.`, MAX_SUMMARY_BYTES);
  const symbols = [
    ...new Set(
      (e.symbols ?? []).filter((s) => typeof s === 'string' && s.length > 0 && s.length <= 200),
    ),
  ].slice(0, 200);
  return { title, summary, symbols };
}

export function extractOf(r: RungRecord): Extract {
  return { title: r.title, summary: r.summary, symbols: r.symbols ?? [] };
}

export interface BuildContextInit {
  repoKey: string;
  git: GitRepository;
  branch: string;
  head: string;
  prev: LadderState;
  summarizer: Summarizer;
  actor: string;
  onProgress?: ((p: BuildProgress) => void) | undefined;
  /** Rewrite rungs another generator wrote from unchanged inputs (not a human's). */
  rebuild?: boolean;
  /** Commits no ref reaches any more (git/reachability.ts): rungs anchored there move or go. */
  dropped?: ReadonlySet<string>;
}

export class BuildContext {
  readonly repoKey: string;
  readonly git: GitRepository;
  readonly branch: string;
  /** The default-branch commit tree rungs are anchored to. */
  readonly head: string;
  /** The Ladder as this build read it. */
  readonly prev: LadderState;
  readonly summarizer: Summarizer;
  readonly gen: RungGenerator;
  readonly actor: string;
  /** The rungs this build wants, by path. */
  readonly desired = new Map<string, RungRecord>();
  /** Rungs of kinds a tree build never removes that this build found obsolete. */
  readonly obsolete = new Set<string>();
  /** Entries given no rung (paths a rung cannot have, or records the schema refused). */
  skipped = 0;
  /** Objects actually read and summarised. */
  summarized = 0;
  /** Rungs kept from unchanged inputs although this build would write them another way. */
  preserved = 0;
  readonly rebuild: boolean;
  readonly dropped: ReadonlySet<string>;
  /** rungDoc's verdict on a record of this build (build-record.ts). */
  private readonly fits: (rec: RungRecord) => boolean;
  private readonly onProgress: (p: BuildProgress) => void;

  constructor(init: BuildContextInit) {
    this.repoKey = init.repoKey;
    this.git = init.git;
    this.branch = init.branch;
    this.head = init.head;
    this.prev = init.prev;
    this.summarizer = init.summarizer;
    this.gen = init.summarizer.generator;
    this.actor = init.actor;
    this.rebuild = init.rebuild ?? false;
    this.dropped = init.dropped ?? new Set();
    this.onProgress = init.onProgress ?? (() => {});
    this.fits = recordChecker({
      generator: this.gen,
      actor: this.actor,
      writtenAt: new Date().toISOString(),
    });
  }

  progress(p: BuildProgress): void {
    this.onProgress(p);
  }

  /**
   * An inputs_hash: the build version and the generator that wrote the rung, then whatever it
   * was made from. The generator is the rung's own, not the build's: a folder an extractive
   * writer summarised hashes the same under a model build and a plain one, so switching
   * `--model` on and off does not rewrite it.
   */
  inputsBy(gen: RungGenerator, ...parts: unknown[]): string {
    return sha(genKey(gen), ...parts);
  }

  /** The generator this build writes rungs of `kind` with (a model writes file prose only). */
  writer(kind: RungKind): RungGenerator {
    return this.summarizer.writerOf?.(kind) ?? this.gen;
  }

  anchorAt(oid: string): RungAnchor {
    return { commit: this.head, oid };
  }

  /** Whether a rung's anchor commit was dropped (no ref reaches it any more). */
  deadAnchor(r: { anchor?: RungAnchor | undefined }): boolean {
    return !!r.anchor && this.dropped.has(r.anchor.commit);
  }

  /** A previous rung as a record (its generator kept only when it is not this build's). */
  recordOf(r: Rung, anchor?: RungAnchor): RungRecord {
    const { author: _a, written_at: _w, generator, ...rest } = r;
    return {
      ...rest,
      ...(anchor ? { anchor } : {}),
      ...(sameGenerator(generator, this.gen) ? {} : { generator }),
    };
  }

  /**
   * The previous rung when it may stand: made from these `parts` by a generator that stands
   * against this build's writer (stands()), or a human's or better writer's rung on the same
   * object. `anchorMoved` when its object moved, or its anchor commit was dropped by a rebase
   * (the object is the same at head, so the rung is only re-anchored there).
   */
  keep(
    path: string,
    kind: RungKind,
    parts: readonly unknown[],
    oid: string,
  ): { rung: Rung; anchorMoved: boolean } | null {
    const p = this.prev.get(path);
    if (!p || p.kind !== kind) return null;
    const sameObject = p.anchor?.oid === oid;
    // A human's rung is theirs: never re-anchored (that would make the build its author).
    if (p.generator.method === 'human') return sameObject ? { rung: p, anchorMoved: false } : null;
    const writer = this.writer(kind);
    const sameInputs = p.inputs_hash === this.inputsBy(p.generator, ...parts);
    const keep =
      (sameInputs && stands(p.generator, writer, this.rebuild)) ||
      (sameObject && !this.rebuild && outranks(p.generator, writer));
    if (!keep) return null;
    if (!sameGenerator(p.generator, writer)) this.preserved++;
    return { rung: p, anchorMoved: !sameObject || this.deadAnchor(p) };
  }

  /** The kept rung (re-anchored when its object moved), or null when it must be rewritten. */
  kept(path: string, kind: RungKind, parts: readonly unknown[], oid: string): RungRecord | null {
    const k = this.keep(path, kind, parts, oid);
    if (!k) return null;
    return this.recordOf(k.rung, k.anchorMoved ? this.anchorAt(oid) : undefined);
  }

  /** A new record, or null (counted as skipped) when the rung schema refuses it. GitHub rungs
   * (issues, pull requests, people) have no anchor. */
  makeRecord(
    path: string,
    kind: RungKind,
    e: Extract,
    parts: readonly unknown[],
    anchor: RungAnchor | undefined,
    detail?: string,
  ): RungRecord | null {
    // Hashed as the generator that wrote this text (a model build's fallback: extractive).
    const inputs = this.inputsBy(e.generator ?? this.gen, ...parts);
    const t = tidy(e, basename(path) || path);
    const rec: RungRecord = {
      path,
      kind,
      title: t.title,
      summary: t.summary,
      ...(detail ? { detail } : {}),
      ...(t.symbols.length > 0 ? { symbols: t.symbols } : {}),
      ...(anchor ? { anchor } : {}),
      inputs_hash: inputs,
      ...(e.generator && !sameGenerator(e.generator, this.gen) ? { generator: e.generator } : {}),
    };
    if (!this.fits(rec)) {
      this.skipped++;
      return null;
    }
    return rec;
  }
}
