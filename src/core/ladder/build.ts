import { ZzError } from '../../errors.js';
import { droppedCommits, lsTree } from '../../git/index.js';
import { ACTOR_RE } from '../../schema/ids.js';
import {
  RUNG_PATH_PREFIX,
  type Rung,
  type RungGenerator,
  type RungKind,
} from '../../schema/rung.js';
import type { ZzRepo } from '../zz-repo.js';
import { BuildContext, outranks, sameGenerator, type BuildProgress } from './build-context.js';
import { changesetRungs, releaseRungs } from './build-history.js';
import type { GitHubPhaseOptions } from './build-github.js';
import { TreePhase } from './build-tree.js';
import { commitTree } from './git-tree.js';
import { ladderEntity } from './ladder.js';
import { ladderRefusal, refusalError } from './ladder-guards.js';
import type { LadderOp } from '../../schema/ladder-ops.js';
import type { LadderBuildArgs, LadderState, RungRecord } from './ladder-state.js';
import { extractiveSummarizer, type Summarizer } from './summarizer.js';

// `zz ladder build` (DESIGN §6): every file, directory and the repo at the default-branch head,
// releases from tags and the last N commits, summarised with no model and no network, written
// as ONE ladder commit (one `ladder_build` op), or none when nothing changed.
//
// Incremental by construction: each rung records an inputs_hash of exactly what produced it
// (a file: its path and blob oid; a folder: its children's summaries, sizes and package.json;
// plus the version of the generator that wrote it). A rung whose inputs did not change is not
// rewritten and its blob is not even read. A folder whose inputs are unchanged but whose tree
// moved (a file body changed without changing its summary) is only re-anchored, so `stale`
// stays meaningful. Renamed or duplicated files reuse a summary by blob oid.
//
// Whatever wrote a rung from unchanged inputs keeps it (BuildContext.keep, stands()): a plain
// build never replaces a model's summary, a model build upgrades extractive text but leaves
// another model's, and `rebuild` replaces all but a human's. So switching --model on and off
// commits nothing (on pallets/itsdangerous it rewrote 63 of 112 rungs each way).
//
// Rungs about a commit no ref reaches any more (a rebase dropped it: git/reachability.ts) are
// removed, and tree rungs standing on such a commit are re-anchored to head. A shallow clone,
// a commit not held here, or a history with a hole prune nothing.
//
// The phases live beside this file (build-tree.ts, build-history.ts) and share a BuildContext
// (build-context.ts); this module validates, runs them and commits what they decided.

export { BUILD_VERSION, type BuildProgress } from './build-context.js';
export { extractiveSummarizer, type Summarizer } from './summarizer.js';

export interface LadderBuildOptions {
  /** Who the rungs are written as (the `zz ladder build` user). */
  actor: string;
  onProgress?: (p: BuildProgress) => void;
  /** How many of the latest commits get a changeset rung (default 20; 0 for none). */
  changesetsLimit?: number;
  /** How many of the latest tags (by version order) get a release rung (default 50). */
  releasesLimit?: number;
  /**
   * A model writes the file summaries (`openai:<model>`, `anthropic:<model>`, `exec:<cmd>`);
   * extractive text on any failure, each rung's generator saying which.
   */
  model?: string;
  /** With `model`: most files the model writes in this build (the rest stay extractive). */
  maxFiles?: number;
  /**
   * Rewrite rungs another generator made from unchanged inputs: with `model`, those of another
   * model; without, model-written ones go back to extractive text. A human's rung stands.
   */
  rebuild?: boolean;
  /**
   * Issues, pull requests, releases and contributors from GitHub as rungs too: `true` uses
   * GH_TOKEN/GITHUB_TOKEN/`gh auth token`, GITHUB_API_URL and the repository's GitHub name;
   * tests pass a client and repo.
   */
  github?: boolean | GitHubPhaseOptions;
  /** Environment for `github: true` (default process.env). */
  env?: NodeJS.ProcessEnv;
  summarizer?: Summarizer;
}

export interface LadderBuildResult {
  /** The ladder revision after the build (the previous one when nothing changed). */
  revision: string | null;
  committed: boolean;
  /** The default-branch commit the tree rungs are anchored to. */
  head: string;
  /** Rungs written (including re-anchored ones). */
  written: number;
  /** Of those, rungs whose text was unchanged and only moved their anchor to this head. */
  reanchored: number;
  unchanged: number;
  /**
   * Of the unchanged, rungs another generator wrote that stand against this build (a model's
   * against a plain build, another model's against `--model`): `rebuild` rewrites them.
   */
  preserved: number;
  removed: number;
  /** Of the removed, rungs anchored to commits no ref reaches any more (a rebase dropped them). */
  pruned: number;
  /**
   * Why rungs of dropped commits were not looked for: a shallow clone cannot tell, nor a
   * history git cannot walk to its end (an ancestor missing).
   */
  prune_skipped?: 'shallow' | 'incomplete';
  /** Files (blobs and links) in the tree at head. */
  files: number;
  /** Blobs actually read and summarised (the rest were unchanged or reused by oid). */
  summarized: number;
  /** Rungs in the Ladder after the build. */
  rungs: number;
  /** Tree entries given no rung: paths a rung cannot have (e.g. `*.lock` components). */
  skipped: number;
  /** With `model`: what the model wrote, what fell back, and the tokens it cost. */
  model?: {
    spec: string;
    written: number;
    cached: number;
    fallback: number;
    input_tokens: number;
    output_tokens: number;
    calls: number;
    last_error: string | null;
  };
  ms: number;
}

const DEFAULT_CHANGESETS = 20;
const DEFAULT_RELEASES = 50;

interface Plan {
  upsert: RungRecord[];
  remove: string[];
  reanchored: number;
  unchanged: number;
  pruned: number;
}

/**
 * Kinds whose rung is about its anchor commit: when no ref reaches that commit any more (a
 * rebase or a deleted branch dropped it), a generated rung goes. A topic merely cites a commit
 * and stays; tree rungs follow the tree at head (and are re-anchored there: BuildContext.keep).
 * A human's rung is never pruned (prunable()): reachability is one clone's view (a branch it
 * fetched and later pruned, a commit it saw only in FETCH_HEAD), the removal is an op that sync
 * carries to every clone, and unlike generated text a person's words cannot be built again.
 */
const PRUNED_KINDS: ReadonlySet<RungKind> = new Set(['changeset', 'release']);

/** Whether a build may remove this rung when its anchor commit is dropped (PRUNED_KINDS). */
function prunable(r: Rung): boolean {
  return PRUNED_KINDS.has(r.kind) && r.generator.method !== 'human';
}

interface PlanInputs {
  desired: ReadonlyMap<string, RungRecord>;
  gen: RungGenerator;
  tags: ReadonlySet<string>;
  obsolete: ReadonlySet<string>;
  dropped: ReadonlySet<string>;
  rebuild: boolean;
}

/**
 * What the build must write against `state`: the desired rungs that differ from it, the tree
 * rungs (and release rungs of deleted tags) it no longer has, and the rungs of dropped commits.
 * Rungs of other kinds (`_issues/…`, notes) are never removed by a tree build.
 */
function plan(state: LadderState, w: PlanInputs): Plan {
  const upsert: RungRecord[] = [];
  let reanchored = 0;
  let unchanged = 0;
  for (const [p, rec] of w.desired) {
    const s = state.get(p);
    const sameObject = !!s && s.kind === rec.kind && s.anchor?.oid === rec.anchor?.oid;
    const recGen = rec.generator ?? w.gen;
    // A dead anchor (its commit dropped) moves to head even when nothing else changed.
    const anchorOk =
      !s?.anchor || s.anchor.commit === rec.anchor?.commit || !w.dropped.has(s.anchor.commit);
    if (sameObject && anchorOk && s.inputs_hash === rec.inputs_hash) {
      if (sameGenerator(s.generator, recGen)) {
        unchanged++;
        continue;
      }
    }
    // A rung written meanwhile by a human (or a better writer) on the very same object stands.
    if (
      sameObject &&
      anchorOk &&
      (s.generator.method === 'human' || (!w.rebuild && outranks(s.generator, recGen)))
    ) {
      unchanged++;
      continue;
    }
    if (s && s.kind === rec.kind && s.inputs_hash === rec.inputs_hash) reanchored++;
    upsert.push(rec);
  }
  const remove: string[] = [];
  let pruned = 0;
  for (const [p, s] of state) {
    if (w.desired.has(p)) continue;
    const tagGone =
      s.kind === 'release' &&
      !outranks(s.generator, w.gen) &&
      !w.tags.has(p.slice(RUNG_PATH_PREFIX.release.length));
    if (s.kind === 'file' || s.kind === 'directory' || w.obsolete.has(p) || tagGone) {
      remove.push(p);
    } else if (prunable(s) && s.anchor && w.dropped.has(s.anchor.commit)) {
      // A generated rung whose commit is gone from every ref of this clone.
      remove.push(p);
      pruned++;
    }
  }
  return { upsert, remove, reanchored, unchanged, pruned };
}

function checkOptions(repo: ZzRepo, opts: LadderBuildOptions) {
  if (opts.maxFiles !== undefined && (!Number.isInteger(opts.maxFiles) || opts.maxFiles < 0)) {
    throw new ZzError('invalid_argument', '--max-files must be a whole number ≥ 0', {
      field: 'max_files',
    });
  }
  if (typeof opts.actor !== 'string' || !ACTOR_RE.test(opts.actor)) {
    throw new ZzError(
      'invalid_argument',
      `actor ${JSON.stringify(opts.actor)} must be an email, or email[agent]`,
      { field: 'actor' },
    );
  }
  const git = repo.git;
  if (!git) {
    throw new ZzError(
      'precondition_failed',
      `repository ${repo.key} has no git checkout to build a Ladder from`,
    );
  }
  return git;
}

export async function ladderBuild(
  repo: ZzRepo,
  opts: LadderBuildOptions,
): Promise<LadderBuildResult> {
  const started = performance.now();
  const git = checkOptions(repo, opts);
  const branch = await repo.defaultBranch();
  const head = await git.refs.read(`refs/heads/${branch}`).catch(() => null);
  if (!head) {
    throw new ZzError(
      'precondition_failed',
      `the default branch ${branch} has no commits yet; commit something first`,
    );
  }
  const root = await commitTree(git, head);
  if (!root) throw new ZzError('git_failed', `refs/heads/${branch} does not point at a commit`);

  const entity = ladderEntity(repo);
  const [items, snap] = await Promise.all([
    lsTree(git.gitdir, head, { sizes: true }),
    entity.read(),
  ]);
  // Who may build, before the work: the fold's rule (ladder-guards.ts) for an empty build.
  assertBuildFolds(snap.state, buildOp(opts.actor, repo, { upsert: [], remove: [] }));
  const [model, reach] = await Promise.all([
    opts.model === undefined ? null : modelFor(opts),
    droppedCommits(git.gitdir, anchorCommits(snap.state, head)),
  ]);
  const ctx = new BuildContext({
    repoKey: repo.key,
    git,
    branch,
    head,
    prev: snap.state,
    summarizer: model?.summarizer ?? opts.summarizer ?? extractiveSummarizer,
    actor: opts.actor,
    onProgress: opts.onProgress,
    rebuild: opts.rebuild ?? false,
    ...(reach.dropped ? { dropped: reach.dropped } : {}),
  });

  const tree = new TreePhase(ctx, items, root.tree);
  await tree.run();
  ctx.progress({ phase: 'history', done: 0, total: 1 });
  await changesetRungs(ctx, opts.changesetsLimit ?? DEFAULT_CHANGESETS);
  const tags = await releaseRungs(ctx, opts.releasesLimit ?? DEFAULT_RELEASES);
  ctx.progress({ phase: 'history', done: 1, total: 1 });
  if (opts.github) await githubPhase(repo, ctx, opts);

  const committed = await commitPlan(repo, ctx, tags, snap);
  return {
    ...committed,
    head,
    files: tree.fileItems.length,
    summarized: ctx.summarized,
    skipped: ctx.skipped,
    preserved: ctx.preserved,
    ...(reach.dropped ? {} : { prune_skipped: reach.reason }),
    ...(model ? { model: model.report() } : {}),
    ms: Math.round(performance.now() - started),
  };
}

/** The anchor commits of a Ladder but `head` (which a ref reaches): the candidates to prune. */
function anchorCommits(state: LadderState, head: string): Set<string> {
  const out = new Set<string>();
  for (const r of state.values())
    if (r.anchor && r.anchor.commit !== head) out.add(r.anchor.commit);
  return out;
}

/** The model summariser for `--model` (the models layer loads only then). */
async function modelFor(opts: LadderBuildOptions) {
  const [{ createModel }, { modelSummarizer }, { cacheDir }] = await Promise.all([
    import('../../models/index.js'),
    import('./model-summarizer.js'),
    import('../../local/index.js'),
  ]);
  const env = opts.env ?? process.env;
  const model = createModel(opts.model!, { env, maxRetries: 2 });
  const summarizer = modelSummarizer({
    model,
    cacheDir: cacheDir(env),
    ...(opts.maxFiles === undefined ? {} : { maxFiles: opts.maxFiles }),
  });
  return {
    summarizer,
    report: () => {
      const u = model.usage();
      return {
        spec: model.spec,
        written: summarizer.stats.model,
        cached: summarizer.stats.cached,
        fallback: summarizer.stats.fallback,
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        calls: u.calls,
        last_error: summarizer.stats.lastError,
      };
    },
  };
}

/** Loads the GitHub phase (and octokit) only when asked for. */
async function githubPhase(repo: ZzRepo, ctx: BuildContext, opts: LadderBuildOptions) {
  const { githubRungs } = await import('./build-github.js');
  if (typeof opts.github === 'object') return githubRungs(ctx, opts.github);
  const { githubRepoOf, newGitHubClient } = await import('../github.js');
  const client = await newGitHubClient({
    ...(opts.env ? { env: opts.env } : {}),
    onWait: (w) =>
      ctx.progress({
        phase: 'github',
        done: 0,
        total: w.seconds,
        note: `GitHub ${w.kind} rate limit: waiting ${w.seconds} s`,
      }),
  });
  return githubRungs(ctx, { client, repo: githubRepoOf(repo) });
}

/** A ladder_build as the fold will judge it (its id and clock do not matter to the guard). */
function buildOp(
  actor: string,
  repo: ZzRepo,
  args: Pick<LadderBuildArgs, 'upsert' | 'remove'> & Partial<LadderBuildArgs>,
): LadderOp {
  const full = { branch: '', head: '', generator: { method: 'extractive', version: '1' }, ...args };
  const time = repo.clock().toISOString();
  return { op: 'ladder_build', id: 'local', actor, lamport: 1, time, args: full } as LadderOp;
}

/** The fold's refusal of a build, up front (forbidden, payload_too_large). */
function assertBuildFolds(state: LadderState, op: LadderOp): void {
  const refused = ladderRefusal(state, state.roles, op);
  if (refused) throw refusalError(refused, 'build the Ladder');
}

/** Writes the build as one `ladder_build` op, re-planned against the state it applies to. */
async function commitPlan(
  repo: ZzRepo,
  ctx: BuildContext,
  tags: ReadonlySet<string>,
  snap: { revision: string | null; state: LadderState },
) {
  const w: PlanInputs = {
    desired: ctx.desired,
    gen: ctx.gen,
    tags,
    obsolete: ctx.obsolete,
    dropped: ctx.dropped,
    rebuild: ctx.rebuild,
  };
  let counts = plan(snap.state, w);
  const base = {
    revision: snap.revision,
    committed: false,
    written: 0,
    reanchored: 0,
    unchanged: counts.unchanged,
    removed: 0,
    pruned: 0,
    rungs: snap.state.size,
  };
  if (counts.upsert.length === 0 && counts.remove.length === 0) return base;
  ctx.progress({ phase: 'commit', done: 0, total: 1 });
  // Not writeOp: a build is the local user's own run (no token; git's user.email) and works
  // before `zz init`, so there is no caller to check nor config to require.
  const r = await ladderEntity(repo).mutate({
    actor: ctx.actor,
    // Decided again against the state the commit applies to: another writer may have landed
    // rungs since this build read the Ladder. Nothing left to write → no op, no commit.
    decide: (state) => {
      counts = plan(state, w);
      if (counts.upsert.length === 0 && counts.remove.length === 0) return [];
      const args: LadderBuildArgs = {
        branch: ctx.branch,
        head: ctx.head,
        generator: ctx.gen,
        upsert: counts.upsert,
        remove: counts.remove,
      };
      assertBuildFolds(state, buildOp(ctx.actor, repo, args));
      return {
        op: 'ladder_build',
        summary: `ladder_build at ${ctx.head.slice(0, 12)}: ${counts.upsert.length} written, ${counts.remove.length} removed`,
        args,
      };
    },
    result: (state) => state.size,
  });
  ctx.progress({ phase: 'commit', done: 1, total: 1 });
  if (r.op === null) {
    return {
      ...base,
      revision: r.revision ?? snap.revision,
      unchanged: ctx.desired.size,
      rungs: r.result,
    };
  }
  return {
    revision: r.revision,
    committed: true,
    written: counts.upsert.length,
    reanchored: counts.reanchored,
    unchanged: counts.unchanged,
    removed: counts.remove.length,
    pruned: counts.pruned,
    rungs: r.result,
  };
}
