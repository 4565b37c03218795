import { promises as fsp } from 'node:fs';
import type { z } from 'zod';
import { fromSystemError, ZzError } from '../errors.js';

// Local JSON files (tokens, daemon.json, credentials, repos.json) are edited by people and
// written by several processes: read them through a zod schema so that a corrupt or foreign
// file is a clear error naming the path and what to do, never a TypeError later.

export interface ReadJsonOptions<T> {
  /** What a missing file reads as; without it a missing file is null. */
  missing?: T;
  /** The advice appended to a "not valid" error, e.g. "fix or delete it". */
  hint?: string;
}

export async function readJsonFile<S extends z.ZodType>(
  file: string,
  schema: S,
  opts: ReadJsonOptions<z.output<S>> & { missing: z.output<S> },
): Promise<z.output<S>>;
export async function readJsonFile<S extends z.ZodType>(
  file: string,
  schema: S,
  opts?: ReadJsonOptions<z.output<S>>,
): Promise<z.output<S> | null>;
export async function readJsonFile<S extends z.ZodType>(
  file: string,
  schema: S,
  opts: ReadJsonOptions<z.output<S>> = {},
): Promise<z.output<S> | null> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return opts.missing ?? null;
    throw fromSystemError(e, file);
  }
  return parseJsonText(file, text, schema, opts.hint);
}

export function parseJsonText<S extends z.ZodType>(
  file: string,
  text: string,
  schema: S,
  hint = 'fix or delete it',
): z.output<S> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new ZzError('precondition_failed', `${file} is not valid JSON; ${hint}`, { path: file });
  }
  const parsed = schema.safeParse(doc);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? ` at ${issue.path.join('.')}` : '';
    throw new ZzError(
      'precondition_failed',
      `${file} is not a valid zz file${where}: ${issue?.message ?? 'invalid'}; ${hint}`,
      { path: file },
    );
  }
  return parsed.data;
}
