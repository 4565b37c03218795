import { ZzError } from '../errors.js';

// A tool command's flags as plain data (tool-options.ts derives them from the tool's zod input;
// the build keeps them in dist/cli/tool-manifest.json), and turning a parsed command line into
// the tool's arguments. No zod here: the command table and the fast path load this module.

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

/**
 * `zz ask claim|release|answer|cancel --ask-id X` without `--lane-id`: the Ask's own Lane, as
 * `zz ask get --ask-id X` finds it (ask ids are unique across Lanes). The tools themselves keep
 * lane_id required; the CLI asks first, so a typo in the id is a not_found naming it.
 */
export const LANE_FROM_ASK = new Set(['ask_claim', 'ask_release', 'ask_answer', 'ask_cancel']);

export function argsFromOptions(
  options: readonly ToolOption[],
  parsed: Record<string, unknown>,
  base: Record<string, unknown> = {},
): Record<string, unknown> {
  const args: Record<string, unknown> = { ...base };
  for (const o of options) {
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
