import type { z } from 'zod';

// What a caller reads when an argument is refused: zod's own texts ("Too small: expected
// string to have >=1 characters", "Invalid option: expected one of …") said what zod checked,
// not what is wrong with the value. This map is passed to safeParse, so a message a schema
// sets itself (lane_id's pattern, boundedText's size) still wins; only zod's defaults change.

type Issue = z.core.$ZodRawIssue;

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'number' && !Number.isInteger(v)) return 'a fraction';
  return TYPE_NAMES[typeof v] ?? typeof v;
}

const shown = (v: unknown): string => JSON.stringify(v) ?? String(v);

/** zod's default texts in a caller's terms; undefined leaves zod's own. */
export function inUserTerms(issue: Issue): string | undefined {
  switch (issue.code) {
    case 'too_small': {
      const min = Number(issue.minimum);
      const atLeast = issue.inclusive === false ? min + 1 : min;
      if (issue.origin === 'string')
        return atLeast <= 1
          ? 'must not be empty'
          : `must be at least ${plural(atLeast, 'character')}`;
      if (issue.origin === 'array' || issue.origin === 'set')
        return atLeast <= 1 ? 'must not be empty' : `must have at least ${plural(atLeast, 'item')}`;
      if (issue.origin === 'number' || issue.origin === 'int' || issue.origin === 'bigint')
        return issue.inclusive === false ? `must be more than ${min}` : `must be at least ${min}`;
      return undefined;
    }
    case 'too_big': {
      const max = Number(issue.maximum);
      const atMost = issue.inclusive === false ? max - 1 : max;
      if (issue.origin === 'string') return `must be at most ${plural(atMost, 'character')}`;
      if (issue.origin === 'array' || issue.origin === 'set')
        return `must have at most ${plural(atMost, 'item')}`;
      if (issue.origin === 'number' || issue.origin === 'int' || issue.origin === 'bigint')
        return issue.inclusive === false ? `must be less than ${max}` : `must be at most ${max}`;
      return undefined;
    }
    case 'invalid_type': {
      if (issue.input === undefined) return 'is required';
      const want = TYPE_NAMES[issue.expected] ?? issue.expected;
      return `must be ${want} (got ${kindOf(issue.input)})`;
    }
    case 'invalid_value':
      return issue.values.length === 1
        ? `must be ${shown(issue.values[0])}`
        : `must be one of ${issue.values.map(shown).join(', ')}`;
    case 'invalid_format':
      return issue.format === 'regex' && 'pattern' in issue && issue.pattern
        ? `must match ${String(issue.pattern)}`
        : `must be a valid ${issue.format}`;
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    case 'invalid_union':
      return 'is not any of the accepted forms';
    default:
      return undefined;
  }
}

/**
 * `path: message`, except when the message already names the field ("lane_id must match …"
 * at lane_id): then `path must match …`, not "lane_id: lane_id must match …".
 */
export function atPath(path: readonly PropertyKey[], message: string): string {
  const p = path.map(String).join('.');
  if (!p) return message;
  const last = String(path[path.length - 1]);
  return message.startsWith(`${last} `) ? `${p}${message.slice(last.length)}` : `${p}: ${message}`;
}
