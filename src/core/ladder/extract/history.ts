// Releases and changesets, from commit subjects. Part of the extractive summariser (../extract.ts).

import { assemble } from './folders.js';
import { clip, finish, firstSentences, listOf, plainInline, plural, squash, uniq } from './text.js';
import { type ChangesetCommit, type Extract, type ReleaseRange } from './types.js';

export const CC_TYPES: Record<string, string> = {
  feat: 'Features',
  feature: 'Features',
  fix: 'Fixes',
  bugfix: 'Fixes',
  perf: 'Performance',
  security: 'Security',
  refactor: 'Refactoring',
  docs: 'Docs',
  doc: 'Docs',
  test: 'Tests',
  tests: 'Tests',
  build: 'Build',
  ci: 'CI',
  chore: 'Chores',
  style: 'Style',
  revert: 'Reverts',
  deps: 'Dependencies',
};
export const SECTION_ORDER = [
  'Breaking',
  'Features',
  'Fixes',
  'Performance',
  'Security',
  'Other',
  'Refactoring',
  'Docs',
  'Tests',
  'Build',
  'CI',
  'Dependencies',
  'Reverts',
  'Style',
  'Chores',
];

/** A tag: its commits grouped by conventional-commit type (feat, fix, …), newest kept. */
export function summarizeRelease(
  tag: string,
  commits: ReadonlyArray<{ subject: string }>,
  range?: ReleaseRange | string | null,
): Extract {
  const from =
    typeof range === 'string' ? (range.includes('..') ? range.split('..')[0] : null) : range?.from;
  const groups = new Map<string, string[]>();
  let merges = 0;
  for (const c of commits) {
    const subject = squash(c.subject ?? '');
    if (/^Merge (?:pull request|branch|remote-tracking branch|tag)\b/.test(subject)) {
      merges++;
      continue;
    }
    const m = /^(\w+)(?:\(([^)]*)\))?(!)?:\s*(.+)$/.exec(subject);
    const type = m ? CC_TYPES[m[1]!.toLowerCase()] : undefined;
    const section = m?.[3] || /BREAKING CHANGE/.test(subject) ? 'Breaking' : (type ?? 'Other');
    const text = m && (type || m[3]) ? `${m[2] ? `${m[2]}: ` : ''}${m[4]}` : subject;
    if (text.length === 0) continue;
    const list = groups.get(section) ?? [];
    list.push(clip(text.replace(/\.$/, ''), 80));
    groups.set(section, list);
  }
  const n = commits.length;
  const head = `${tag}: ${plural(n, 'commit')}${from ? ` since ${from}` : ''}${merges > 0 ? ` (${plural(merges, 'merge')})` : ''}.`;
  const lines: string[] = [];
  for (const section of SECTION_ORDER) {
    const items = groups.get(section);
    if (!items || items.length === 0) continue;
    const shown = items.slice(0, section === 'Chores' || section === 'Style' ? 0 : 4);
    lines.push(
      shown.length > 0
        ? `${section}: ${shown.join('; ')}${items.length > shown.length ? `; and ${items.length - shown.length} more` : ''}.`
        : `${section}: ${plural(items.length, 'commit')}.`,
    );
  }
  return { title: clip(tag, 300), summary: assemble(head, '', lines), symbols: [] };
}

export function topDirs(paths: readonly string[], max = 3): string {
  const counts = new Map<string, number>();
  for (const p of paths) {
    const parts = p.split('/');
    const dir =
      parts.length <= 1 ? '(root)' : parts.slice(0, Math.min(2, parts.length - 1)).join('/');
    counts.set(dir, (counts.get(dir) ?? 0) + 1);
  }
  const sorted = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const shown = sorted.slice(0, max).map(([d, k]) => `${d} (${k})`);
  return `${shown.join(', ')}${sorted.length > max ? `, and ${plural(sorted.length - max, 'other place')}` : ''}`;
}

/** A commit proposed or landed: subject, first body paragraph, where it touches, issues it cites. */
export function summarizeChangeset(commit: ChangesetCommit): Extract {
  const subject = squash(commit.subject ?? '') || `commit ${commit.oid.slice(0, 10)}`;
  const body = (commit.body ?? '')
    .split('\n')
    .filter(
      (l) => !/^[A-Z][\w-]*:\s/.test(l.trim()) || /^(?:Note|Why|Because|Context):/i.test(l.trim()),
    ) // trailers
    .filter((l) => !/^```/.test(l.trim()))
    .join('\n');
  const para = body
    .split(/\n\s*\n/)
    .map((p) => squash(plainInline(p)))
    .find((p) => /[a-z]{3}/i.test(p) && !/^(?:\{|\[|diff --git)/.test(p));
  const { files, insertions, deletions } = commit.stats;
  const issues = uniq(
    [...`${subject}\n${commit.body ?? ''}`.matchAll(/(?:^|[\s(])#(\d{1,7})\b/g)].map(
      (m) => `#${m[1]}`,
    ),
  );
  const parts = [
    /[.!?]$/.test(subject) ? subject : `${subject}.`,
    para ? firstSentences(para, 220) : null,
    `${plural(files, 'file')} changed (+${insertions} −${deletions})${commit.paths.length > 0 ? `, in ${topDirs(commit.paths)}` : ''}.`,
    issues.length > 0 ? `References ${listOf(issues, 5)}.` : null,
  ];
  return finish(subject, parts, []);
}
