import { commitSubjects, commitSummaries, listTags, recentCommits } from '../../git/index.js';
import { RUNG_PATH_PREFIX } from '../../schema/rung.js';
import type { BuildContext } from './build-context.js';
import { rungPlacementProblem } from './ladder-state.js';

// The history phases of `zz ladder build`: the latest commits of the default branch as
// `_changesets/<sha>` rungs and the latest tags as `_releases/<tag>` rungs. Commits and tags
// are immutable, so a rung is only written once per commit (or per tag and its predecessor).

const MAX_DETAIL_FILES = 200;
const MAX_DETAIL_CHARS = 64 * 1024;
const RELEASE_WINDOW = 4;

/** The last `limit` commits of the default branch as `_changesets/<sha>` rungs. */
export async function changesetRungs(ctx: BuildContext, limit: number): Promise<void> {
  const shas = await recentCommits(ctx.git.gitdir, ctx.head, limit);
  const missing: string[] = [];
  for (const c of shas) {
    const path = RUNG_PATH_PREFIX.changeset + c;
    const k = ctx.keep(path, 'changeset', ['changeset', c], c);
    if (k) ctx.desired.set(path, ctx.recordOf(k.rung));
    else missing.push(c);
  }
  // One `git log` for every new commit: subject, body and per-file line counts vs first parent.
  for (const c of await commitSummaries(ctx.git.gitdir, missing)) {
    let insertions = 0;
    let deletions = 0;
    const lines: string[] = [];
    for (const f of c.files) {
      insertions += f.insertions ?? 0;
      deletions += f.deletions ?? 0;
      if (lines.length < MAX_DETAIL_FILES)
        lines.push(`${f.insertions ?? '-'}\t${f.deletions ?? '-'}\t${f.path}`);
    }
    const paths = c.files.map((f) => f.path);
    const e = await ctx.summarizer.changeset({
      oid: c.oid,
      subject: c.subject,
      body: c.body,
      stats: { files: paths.length, insertions, deletions },
      paths,
    });
    const more = paths.length > lines.length ? `\n… and ${paths.length - lines.length} more` : '';
    const detail =
      `${c.subject}\n\n${c.body}\n\n`.replace(/\n{3,}/g, '\n\n') +
      `Files (+added -deleted path):\n${lines.join('\n')}${more}\n`;
    const path = RUNG_PATH_PREFIX.changeset + c.oid;
    const r = ctx.makeRecord(
      path,
      'changeset',
      e,
      ['changeset', c.oid],
      { commit: c.oid, oid: c.oid },
      detail.slice(0, MAX_DETAIL_CHARS),
    );
    if (r) ctx.desired.set(path, r);
  }
}

/**
 * The latest tags (version order) as `_releases/<tag>` rungs, each with its commits since the
 * previous tag. Returns every tag name, so the commit step keeps rungs of tags outside the window.
 */
export async function releaseRungs(ctx: BuildContext, limit: number): Promise<Set<string>> {
  const listed = await listTags(ctx.git.gitdir);
  const tags = new Set(listed.map((t) => t.tag));
  const all = listed.filter((t): t is { tag: string; commit: string } => t.commit !== null);
  const start = Math.max(0, all.length - Math.max(0, limit));
  const jobs: Array<() => Promise<void>> = [];
  for (let i = start; i < all.length; i++) {
    const { tag, commit } = all[i]!;
    const before = i > 0 ? all[i - 1]! : null;
    const path = RUNG_PATH_PREFIX.release + tag;
    if (rungPlacementProblem(path, 'release') !== null) continue;
    const inputs = ['release', tag, commit, before?.tag ?? null, before?.commit ?? null];
    const k = ctx.keep(path, 'release', inputs, commit);
    if (k) {
      ctx.desired.set(path, ctx.recordOf(k.rung));
      continue;
    }
    jobs.push(async () => {
      const subjects = await commitSubjects(ctx.git.gitdir, before?.commit ?? null, commit, 1000);
      const e = await ctx.summarizer.release(
        tag,
        subjects.map((s) => ({ subject: s })),
        { from: before?.tag ?? null, to: tag },
      );
      const r = ctx.makeRecord(path, 'release', e, inputs, { commit, oid: commit }, e.detail);
      if (r) ctx.desired.set(path, r);
    });
  }
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(RELEASE_WINDOW, jobs.length) }, async () => {
      while (next < jobs.length) await jobs[next++]!();
    }),
  );
  return tags;
}
