import { z } from 'zod';
import { LONG_TEXT } from '../schema/ops.js';
import type { ToolDef } from '../tools/index.js';
import type { OptionKind, ToolOption } from './tool-args.js';

// Derives CLI options from a tool's zod input: strings, numbers, booleans and string arrays
// become flags (kebab-case; run() reads a typed `--lane_id` as `--lane-id`, so help and
// completion list each flag once); anything structured is passed as JSON text, except that a
// field which also takes a string (`git_log --since 2025-01-01`) takes text that is not JSON
// as that string. `--args` merges a JSON object underneath the flags. A field the schema marks
// as long text (schema/ops.ts LONG_TEXT: an Ask's body, an answer's result, a Lane's
// description, a commit message) may also be given from a file, `--body-file PATH` (`-` for
// stdin): a 1 MB `--body` fails in the shell (E2BIG) before zz sees it.

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
