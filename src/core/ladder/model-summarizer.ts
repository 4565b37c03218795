import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { isZzError } from '../../errors.js';
import { writeFileAtomic } from '../../local/index.js';
import type { Model } from '../../models/index.js';
import type { RungGenerator } from '../../schema/rung.js';
import { summarizeFile, type Extract } from './extract.js';
import { extractiveSummarizer, type Summarizer } from './summarizer.js';

// `zz ladder build --model M`: a model writes each file's summary from the file's start, its
// extractive summary and its symbols. The extractive text stays the fallback on any failure
// (endpoint down, bad answer, budget spent) and the rung's generator says which one wrote it.
// Answers are cached on disk by a hash of everything the prompt holds, so an unchanged file
// never costs a second call even when the Ladder is rebuilt from nothing. Folders, the repo,
// releases and changesets stay extractive (they are built from their children's summaries).

/** Bump when the prompt changes: cached answers and model rungs are then rewritten. */
export const MODEL_PROMPT_VERSION = 'prompt-1';
const MAX_SOURCE_CHARS = 12_000;
const MAX_SUMMARY_CHARS = 600;

const SYSTEM = `You write one entry of a codebase map for engineers and coding agents.
Given a file's path, its start and the names it declares, write 1-3 plain sentences saying
what the file is for and what it does, naming its key functions or classes. No Markdown, no
preamble, no speculation beyond what the text shows. At most ${MAX_SUMMARY_CHARS} characters.`;

const answer = z.object({ summary: z.string().min(1).max(2000) });

export interface ModelSummarizerOptions {
  model: Model;
  /** Most files the model writes in this build (the rest stay extractive). */
  maxFiles?: number;
  /** Where answers are cached (`<cacheDir>/ladder-model/`); none when omitted. */
  cacheDir?: string;
  /** Most model calls in flight at once (default MODEL_CONCURRENCY). */
  concurrency?: number;
}

/**
 * Model calls in flight at once. The build reads files 32 at a time, and each read called the
 * model: 32 `exec:` processes at once, or 32 requests on one local endpoint.
 */
export const MODEL_CONCURRENCY = 4;
/**
 * Failures in a row after which the build stops calling the model (the rest stay extractive):
 * a dead or hanging endpoint cost a timeout per file (192 requests for 64 files). A refused
 * key (401/403) stops it at once: no other file will fare better.
 */
export const MAX_FAILURES_IN_A_ROW = 3;

export interface ModelSummarizer extends Summarizer {
  /** Files the model wrote (from cache or a call), files that fell back, and why. */
  readonly stats: { model: number; cached: number; fallback: number; lastError: string | null };
}

export function modelSummarizer(opts: ModelSummarizerOptions): ModelSummarizer {
  const generator: RungGenerator = {
    method: 'model',
    model: opts.model.spec,
    version: MODEL_PROMPT_VERSION,
  };
  const extractive = extractiveSummarizer.generator;
  const dir = opts.cacheDir ? join(opts.cacheDir, 'ladder-model') : null;
  const stats = { model: 0, cached: 0, fallback: 0, lastError: null as string | null };
  let budget = opts.maxFiles ?? Infinity;
  let failedInARow = 0;
  let stopped: string | null = null;
  // A gate of `concurrency` slots: a call waits for a free one, in order.
  let free = Math.max(1, opts.concurrency ?? MODEL_CONCURRENCY);
  const queue: Array<() => void> = [];
  const acquire = (): Promise<void> =>
    free > 0 ? (free--, Promise.resolve()) : new Promise((r) => queue.push(r));
  const release = () => {
    const next = queue.shift();
    if (next) next();
    else free++;
  };

  const fallback = (e: Extract, why: string | null): Extract => {
    stats.fallback++;
    if (why) stats.lastError = why.slice(0, 300);
    return { ...e, generator: extractive };
  };

  const file = async (path: string, content: Buffer): Promise<Extract | null> => {
    const base = summarizeFile(path, content);
    if (!base) return null;
    const source = content.toString('utf8').slice(0, MAX_SOURCE_CHARS);
    const prompt =
      `Path: ${path}\nDeclares: ${base.symbols.slice(0, 40).join(', ') || '(nothing exported)'}\n` +
      `Extractive summary: ${base.summary}\n\nFile start:\n${source}`;
    const key = createHash('sha256')
      .update(JSON.stringify([opts.model.spec, MODEL_PROMPT_VERSION, SYSTEM, prompt]))
      .digest('hex');
    const cacheFile = dir ? join(dir, `${key.slice(0, 40)}.json`) : null;
    if (cacheFile) {
      const hit = await readFile(cacheFile, 'utf8')
        .then((t) => answer.parse(JSON.parse(t)))
        .catch(() => null);
      if (hit) {
        stats.cached++;
        return { ...base, summary: hit.summary.slice(0, MAX_SUMMARY_CHARS), generator };
      }
    }
    if (budget <= 0 || stopped) return fallback(base, null);
    await acquire();
    try {
      // Stopped while this file waited for a slot: no call.
      if (budget <= 0 || stopped) return fallback(base, null);
      budget--;
      const r = await opts.model.object({
        system: SYSTEM,
        messages: [{ role: 'user', content: prompt }],
        schema: answer,
        name: 'rung_summary',
      });
      failedInARow = 0;
      const summary = r.object.summary.replace(/\s+/g, ' ').trim().slice(0, MAX_SUMMARY_CHARS);
      if (!summary) return fallback(base, 'the model answered an empty summary');
      stats.model++;
      if (cacheFile) await writeCache(cacheFile, { summary });
      return { ...base, summary, generator };
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      failedInARow++;
      if (
        !stopped &&
        ((isZzError(e) && e.code === 'unauthorized') || failedInARow >= MAX_FAILURES_IN_A_ROW)
      ) {
        stopped =
          `stopped calling the model after ${failedInARow} failure${failedInARow > 1 ? 's' : ''} ` +
          `in a row; the other files are extractive: ${why}`;
      }
      return fallback(base, stopped ?? why);
    } finally {
      release();
    }
  };

  return {
    generator,
    writerOf: (kind) => (kind === 'file' ? generator : extractive),
    stats,
    file,
    // Built from children's summaries: extractive, and said so.
    directory: async (...a) => ({
      ...(await extractiveSummarizer.directory(...a)),
      generator: extractive,
    }),
    repo: async (...a) => ({ ...(await extractiveSummarizer.repo(...a)), generator: extractive }),
    release: async (...a) => ({
      ...(await extractiveSummarizer.release(...a)),
      generator: extractive,
    }),
    changeset: async (...a) => ({
      ...(await extractiveSummarizer.changeset(...a)),
      generator: extractive,
    }),
  };
}

// Best effort: a summary that could not be cached is asked for again next time.
async function writeCache(file: string, value: unknown): Promise<void> {
  await writeFileAtomic(file, JSON.stringify(value), { mkdir: true }).catch(() => {});
}
