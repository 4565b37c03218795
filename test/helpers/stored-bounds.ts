import { DEFAULT_MAX_BODY_BYTES } from '../../src/http/index.js';
import { STORED_LIMITS, utf8Bytes } from '../../src/schema/limits.js';

// What the writes since a snapshot of `git for-each-ref` stored, checked against the bounds of
// src/schema/limits.ts (the tool fuzz, test/http/fuzz-tools.test.ts): every new commit's
// message and its op JSON, and every blob it added, JSON documents field by field.

/** Per field name: the most a stored string may hold, and in what unit. */
const STRING_BOUNDS: Record<string, [number, 'chars' | 'bytes']> = {
  title: [STORED_LIMITS.title, 'chars'],
  description: [STORED_LIMITS.description, 'chars'],
  body: [STORED_LIMITS.body, 'bytes'],
  result: [STORED_LIMITS.result, 'bytes'],
  reason: [STORED_LIMITS.reason, 'chars'],
  message: [STORED_LIMITS.commitMessage, 'chars'],
  path: [STORED_LIMITS.path, 'bytes'],
};
const LIST_KEYS = new Set(['depends_on', 'maintainers', 'coordinators', 'related_lanes', 'kinds']);
/** No stored string, whatever its field, is longer than the longest bound. */
const ANY_STRING_BYTES = STORED_LIMITS.body;

function checkStored(value: unknown, where: string, problems: string[], key = ''): void {
  if (typeof value === 'string') {
    const bound = STRING_BOUNDS[key];
    const size = bound?.[1] === 'chars' ? value.length : utf8Bytes(value);
    if (bound && size > bound[0]) problems.push(`${where}: ${key} is ${size} ${bound[1]}`);
    if (utf8Bytes(value) > ANY_STRING_BYTES)
      problems.push(`${where}: ${key} is ${utf8Bytes(value)} bytes`);
  } else if (Array.isArray(value)) {
    if (LIST_KEYS.has(key) && value.length > STORED_LIMITS.list)
      problems.push(`${where}: ${key} has ${value.length} entries`);
    for (const v of value) checkStored(v, where, problems, key);
  } else if (value && typeof value === 'object') {
    if (key === 'payload' && utf8Bytes(JSON.stringify(value)) > STORED_LIMITS.payload)
      problems.push(`${where}: payload is ${utf8Bytes(JSON.stringify(value))} bytes`);
    if (key === 'ask_kinds' && Object.keys(value).length > STORED_LIMITS.askKinds)
      problems.push(`${where}: ask_kinds has ${Object.keys(value).length} kinds`);
    for (const [k, v] of Object.entries(value)) checkStored(v, where, problems, k);
  }
}

/** What the commits new since `before` stored that is past a bound (empty: all within). */
export function storedProblems(git: (...args: string[]) => string, before: string): string[] {
  const olds = before
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => `^${l.split(' ')[0]}`);
  const news = git('for-each-ref', '--format=%(objectname) %(refname)')
    .trim()
    .split('\n')
    .map((l) => l.split(' ')[0]!);
  const commits = git('rev-list', ...news, ...olds)
    .trim()
    .split('\n')
    .filter(Boolean);
  const problems: string[] = [];
  for (const commit of commits) {
    const message = git('cat-file', 'commit', commit).split('\n\n').slice(1).join('\n\n');
    if (utf8Bytes(message) > DEFAULT_MAX_BODY_BYTES + 64 * 1024)
      problems.push(`${commit}: message is ${utf8Bytes(message)} bytes`);
    const ops = /^zz-ops (.*)$/m.exec(message)?.[1];
    if (ops) checkStored(JSON.parse(ops), `${commit} ops`, problems);
    for (const line of git('diff-tree', '-r', '--root', '--no-commit-id', commit).split('\n')) {
      const m = /^:\d+ \d+ [0-9a-f]+ ([0-9a-f]+) [AM]\t(.+)$/.exec(line);
      if (!m) continue;
      const size = Number(git('cat-file', '-s', m[1]!).trim());
      if (size > DEFAULT_MAX_BODY_BYTES) problems.push(`${commit}:${m[2]}: ${size} bytes`);
      if (m[2]!.endsWith('.json'))
        checkStored(JSON.parse(git('cat-file', 'blob', m[1]!)), `${commit}:${m[2]}`, problems);
    }
  }
  return problems;
}
