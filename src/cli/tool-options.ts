import { z } from 'zod';
import { ZzError } from '../errors.js';
import { LONG_TEXT } from '../schema/ops.js';
import type { ToolDef } from '../tools/index.js';

// Derives CLI options from a tool's zod input: strings, numbers, booleans and string arrays
// become flags (kebab-case; run() reads a typed `--lane_id` as `--lane-id`, so help and
// completion list each flag once); anything structured is passed as JSON text, except that a
// field which also takes a string (`git_log --since 2025-01-01`) takes text that is not JSON
// as that string. `--args` merges a JSON object underneath the flags. A field the schema marks
// as long text (schema/ops.ts LONG_TEXT: an Ask's body, an answer's result, a Lane's
// description, a commit message) may also be given from a file, `--body-file PATH` (`-` for
// stdin): a 1 MB `--body` fails in the shell (E2BIG) before zz sees it.

export type OptionKind = 'string' | 'number' | 'boolean' | 'array' | 'json';

export interface ToolOption {
  key: string;
  flag: string;
  kind: OptionKind;
  required: boolean;
  /** A `json` field that also accepts a string: text that is not JSON is passed as is. */
  text?: boolean;
  describe: string;
  choices?: string[];
  /** Numbers: the bounds the schema sets, and whether it wants a whole number. */
  min?: number;
  max?: number;
  int?: boolean;
  /** A body-sized text field: its `--<flag>-file` and the bound the schema sets on it. */
  file?: { flag: string; maxBytes?: number; maxChars?: number };
}

function unwrap(t: z.ZodType): { inner: z.ZodType; optional: boolean } {
  let cur = t;
  let optional = false;
  for (;;) {
    if (
      cur instanceof z.ZodOptional ||
      cur instanceof z.ZodNullable ||
      cur instanceof z.ZodDefault
    ) {
      optional = optional || cur instanceof z.ZodOptional || cur instanceof z.ZodDefault;
      cur = cur.unwrap() as z.ZodType;
      continue;
    }
    return { inner: cur, optional };
  }
}

export function toolOptions(tool: ToolDef): ToolOption[] {
  const out: ToolOption[] = [];
  for (const [key, schema] of Object.entries(tool.input.shape as Record<string, z.ZodType>)) {
    const { inner, optional } = unwrap(schema);
    let kind: OptionKind = 'json';
    let choices: string[] | undefined;
    let text = false;
    let range: Pick<ToolOption, 'min' | 'max' | 'int'> = {};
    let file: ToolOption['file'];
    if (inner instanceof z.ZodString) {
      kind = 'string';
      const long = LONG_TEXT.get(inner);
      if (long) file = { flag: `${key.replace(/_/g, '-')}-file`, ...long };
    } else if (inner instanceof z.ZodNumber) {
      kind = 'number';
      const n = inner as z.ZodNumber;
      range = {
        ...(Number.isFinite(n.minValue) ? { min: n.minValue! } : {}),
        ...(Number.isFinite(n.maxValue) ? { max: n.maxValue! } : {}),
        ...(n.isInt ? { int: true } : {}),
      };
    } else if (inner instanceof z.ZodBoolean) kind = 'boolean';
    else if (inner instanceof z.ZodEnum) {
      kind = 'string';
      choices = (inner as z.ZodEnum).options.map(String);
    } else if (inner instanceof z.ZodLiteral) {
      kind = 'string';
      choices = [...(inner as z.ZodLiteral).values].map(String);
    } else if (inner instanceof z.ZodArray) {
      // A list of strings, or of one of several words (`--state open --state claimed`).
      const el = unwrap((inner as z.ZodArray).element as z.ZodType).inner;
      if (el instanceof z.ZodString) kind = 'array';
      else if (el instanceof z.ZodEnum) {
        kind = 'array';
        choices = (el as z.ZodEnum).options.map(String);
      }
    } else if (inner instanceof z.ZodUnion) {
      // `since: number | string`: JSON when it parses (a number), else the text itself.
      text = (inner as z.ZodUnion).options.some(
        (x) => unwrap(x as z.ZodType).inner instanceof z.ZodString,
      );
    }
    out.push({
      key,
      flag: key.replace(/_/g, '-'),
      kind,
      required: !optional,
      ...(text ? { text } : {}),
      describe: [schema.description ?? inner.description, kind === 'json' && !text ? '(JSON)' : '']
        .filter(Boolean)
        .join(' '),
      ...(choices ? { choices } : {}),
      ...range,
      ...(file ? { file } : {}),
    });
  }
  return out;
}

export function argsFromOptions(
  tool: ToolDef,
  parsed: Record<string, unknown>,
  base: Record<string, unknown> = {},
): Record<string, unknown> {
  const args: Record<string, unknown> = { ...base };
  for (const o of toolOptions(tool)) {
    const v = parsed[o.flag] ?? parsed[o.key];
    if (v === undefined) continue;
    if (o.kind === 'json') {
      try {
        args[o.key] = typeof v === 'string' ? JSON.parse(v) : v;
      } catch {
        if (!o.text) throw new ZzError('invalid_argument', `--${o.flag} must be JSON`);
        args[o.key] = v;
      }
    } else if (o.kind === 'number') {
      args[o.key] = checkNumber(o, v);
    } else if (o.kind === 'array') {
      args[o.key] = (Array.isArray(v) ? v : [v]).map(String);
    } else {
      args[o.key] = v;
    }
  }
  return args;
}

/** A number flag as the schema wants it, or an error that says what it must be. */
function checkNumber(o: ToolOption, v: unknown): number {
  const n = typeof v === 'number' ? v : Number.NaN;
  const ok =
    Number.isFinite(n) &&
    (!o.int || Number.isInteger(n)) &&
    (o.min === undefined || n >= o.min) &&
    (o.max === undefined || n <= o.max);
  if (ok) return n;
  const what = o.int ? 'a whole number' : 'a number';
  const range =
    o.min !== undefined && o.max !== undefined && o.max - o.min <= 1000
      ? ` from ${o.min} to ${o.max}`
      : o.min !== undefined
        ? ` ≥ ${o.min}`
        : '';
  throw new ZzError('invalid_argument', `--${o.flag} must be ${what}${range}`);
}

/** `lane_propose` → ['lane', 'propose']; `ask_query_claimable` → ['ask', 'query-claimable']. */
export function commandPath(toolName: string): [string, string] {
  const i = toolName.indexOf('_');
  return [toolName.slice(0, i), toolName.slice(i + 1).replace(/_/g, '-')];
}
