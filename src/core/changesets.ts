import { randomBytes } from 'node:crypto';
import { ZzError } from '../errors.js';
import { isAncestor, mergeTrees, TreeReader, updateBranch } from '../git/branch-update.js';
import { printable, readCommit, type GitRepository } from '../git/index.js';
import { KeyedQueue } from '../local/index.js';
import type { AskDoc } from '../schema/lane.js';
import {
  checkChangeset,
  checkFiles,
  checkMergedTree,
  type ChangeFileInput,
} from './changesets-policy.js';
import type { OpRecord } from '../store/index.js';
import {
  assertSelf,
  isRootedCoordinator,
  notRootedError,
  rootedOf,
  requireCaller,
  type Caller,
} from './access.js';
import { assertAsProposed, assertRoom } from './asks.js';
import { CONFLICT_REASON, reviewGranted } from './follow-ups.js';
import { LANDING_KINDS } from './kinds.js';
import type { LaneOpSpec, LaneState } from './lane-state.js';
import { readLane, type WriteMeta } from './lanes.js';
import { writeOp } from './write-op.js';
import { askView, holdsLiveClaim, type AskView } from './views.js';
import { CHANGESETS_PREFIX, SERVER_ACTOR, type ZzRepo } from './zz-repo.js';

// commit_changeset: the only write to the user's code (DESIGN §3). A coordinator lands a
// changeset (or a set of whole files) on the default branch like `git merge --ff-only` would
// for them: fast-forward from the changeset's base, else a clean three-way merge onto the
// current head, else 409 and a resolve_conflict Ask. The branch moves only by CAS from the
// head the commit was computed against; the served checkout follows it or the call refuses.
// Every landing is recorded in the Lane's op log (and answers the Ask it cites when the caller
// holds it), which is also where its idempotency key lives.

const MAX_TITLE = 300;

export type CommitFileInput = ChangeFileInput;

export interface CommitChangesetArgs {
  lane_id: string;
  ask_id: string;
  changeset_id?: string;
  message?: string;
  files?: CommitFileInput[];
  expected_head?: string;
  actor?: string;
  idempotency_key?: string;
}

export interface CommitChangesetResult extends WriteMeta {
  commit: string;
  branch: string;
  merged: boolean;
  fast_forward: boolean;
  previous_head: string;
  changeset_id: string | null;
  worktree_updated: boolean;
  /** The cited Ask after the call (answered complete when the caller held it). */
  ask: AskView;
}

export function requireGit(repo: ZzRepo): GitRepository {
  if (!repo.git) {
    throw new ZzError(
      'precondition_failed',
      `repository ${repo.key} has no git checkout behind it; this call needs one`,
    );
  }
  return repo.git;
}

// One landing at a time per repository in this process: the worktree update and the CAS must
// not interleave with another landing's. Other processes are held off by git's locks and CAS.
const landings = new KeyedQueue();

const firstLine = (s: string) => (s.split('\n')[0] ?? '').trim();
const clip = (s: string, n: number) => (s.length <= n ? s : s.slice(0, n - 1) + '…');
const short = (oid: string) => oid.slice(0, 12);

const newAskId = () => 'ask-' + randomBytes(5).toString('hex');

interface Prepared {
  commit: string;
  merged: boolean;
  fastForward: boolean;
  head: string;
}

/**
 * Lands a changeset (or whole files) on the default branch. See the file comment for the
 * rules; errors: 403 not a coordinator, 404 lane/ask/changeset, 400 bad paths, 409 conflict
 * (branch moved past expected_head, or moved during the call), merge_conflict (a
 * resolve_conflict Ask is posted first), dirty_worktree (nothing moved).
 */
export async function commitChangeset(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: CommitChangesetArgs,
): Promise<CommitChangesetResult> {
  const caller = requireCaller(callerIn);
  assertSelf(caller, args.actor, 'actor');
  const direct = args.files !== undefined;
  if (direct === (args.changeset_id !== undefined)) {
    throw new ZzError(
      'invalid_argument',
      'pass either changeset_id, or message, files and expected_head (not both)',
    );
  }
  if (direct && (args.message === undefined || args.expected_head === undefined)) {
    throw new ZzError(
      'invalid_argument',
      'a commit of files needs message and expected_head (the branch head the files are based on)',
    );
  }
  if (!direct && args.message !== undefined) {
    throw new ZzError('invalid_argument', "message: a changeset's commit carries its own message");
  }
  const git = requireGit(repo);
  const config = await repo.requireConfig();
  const { actor: _a, idempotency_key: _k, ...requestArgs } = args;
  const request = { tool: 'commit_changeset', request: requestArgs };
  const entity = repo.lane(args.lane_id);

  return landings.run(git.gitdir, async () => {
    // A retry with a used key returns what the first call decided (success or conflict).
    if (args.idempotency_key !== undefined) {
      const prior = await entity.priorOp(caller.actor, args.idempotency_key);
      if (prior) return record(repo, caller, args, request, null);
    }

    const snap = await readLane(repo, args.lane_id);
    // Landing reaches the whole repository: a coordinatorship an owner stands behind, not one
    // a member made by proposing a Lane (rooted-roles.ts; the fold refuses the record alike).
    if (!isRootedCoordinator(rootedOf(snap), config, caller.actor)) {
      throw notRootedError(rootedOf(snap), config, caller.actor, 'commit changesets');
    }
    const ask = snap.state.asks.get(args.ask_id);
    if (!ask) {
      throw new ZzError('not_found', `ask ${args.ask_id} does not exist in lane ${args.lane_id}`);
    }
    if (!LANDING_KINDS.has(ask.kind)) {
      throw new ZzError(
        'invalid_argument',
        `ask_id: cite the submit_changeset or resolve_conflict Ask being worked, not a ${ask.kind} Ask`,
      );
    }
    if (ask.state === 'answered') {
      throw new ZzError(
        'conflict',
        `ask ${ask.ask_id} is already answered (${ask.answer?.outcome})`,
      );
    }
    const cited = typeof ask.payload.changeset_id === 'string' ? ask.payload.changeset_id : null;
    if (
      ask.kind === 'submit_changeset' &&
      cited &&
      args.changeset_id &&
      cited !== args.changeset_id
    ) {
      throw new ZzError(
        'invalid_argument',
        `changeset_id: ask ${ask.ask_id} submits ${cited}, not ${args.changeset_id}`,
      );
    }

    const branch = await repo.defaultBranch();
    const ref = `refs/heads/${branch}`;
    const head = await git.refs.read(ref);
    if (!head) {
      throw new ZzError('precondition_failed', `the default branch ${branch} does not exist yet`);
    }
    if (args.expected_head !== undefined && args.expected_head !== head) {
      throw new ZzError(
        'conflict',
        `branch ${branch} is at ${head}, not at expected_head ${args.expected_head}; read it again (git_log) and redo the change on the current head`,
        { branch, current_head: head, expected_head: args.expected_head },
      );
    }
    const trees = new TreeReader(git);

    let prepared: Prepared;
    if (direct) {
      // Files that resolve a conflict are the cited changeset's, merged (zz work's resolve
      // flow lands them so): that changeset must have been reviewed as if it landed by id,
      // whoever posted the resolve_conflict (a replica's record is not the server's word).
      if (ask.kind === 'resolve_conflict' && typeof ask.payload.changeset_id === 'string') {
        const id = ask.payload.changeset_id;
        const { commit: cs, base } = await changesetCommit(git, id);
        assertReviewed(snap.state, args.lane_id, id, cs);
        // The merge is of the reviewed change against its own base: a base the Ask names
        // otherwise (a record from another replica) would make the diff, hence the files
        // landed, something nobody reviewed.
        if (ask.payload.base !== base) {
          throw new ZzError(
            'precondition_failed',
            `ask ${ask.ask_id} merges changeset ${id} from base ${String(ask.payload.base)}, but the reviewed changeset is based on ${base}; its files do not land`,
            { changeset_id: id, base },
          );
        }
      }
      const changes = await checkFiles(trees, await trees.treeOfCommit(head), args.files!);
      const commit = await repo.store.writeCodeCommit({
        base: head,
        changes,
        message: args.message!,
        author: caller.actor,
      });
      prepared = { commit, merged: false, fastForward: true, head };
    } else {
      const id = args.changeset_id!;
      const { commit: cs, base, data } = await changesetCommit(git, id);
      await checkChangeset(git, trees, base, cs);
      // Only a reviewed changeset lands by id, whoever asks (HTTP, MCP, CLI, zz work): the
      // submit_changeset Ask it cites may have been posted by hand, or by a model obeying an
      // injected Ask. A coordinator's own files (the direct form above) need no review: they
      // are the coordinator's change, made by hand and recorded under their name.
      assertReviewed(snap.state, args.lane_id, id, cs);
      if (base === head) {
        prepared = { commit: cs, merged: false, fastForward: true, head };
      } else {
        if (!(await isAncestor(git, base, head))) {
          throw new ZzError(
            'conflict',
            `changeset ${id} is based on ${base}, which is not in the history of ${branch}; it must be redone on ${branch}`,
            { branch, current_head: head, base },
          );
        }
        const m = await mergeTrees(git, head, cs);
        if (m.conflicts.length > 0) {
          await conflict(repo, caller, args, request, ask, { id, base, head, branch, merge: m });
        }
        await checkMergedTree(git, head, m.tree);
        const now = Math.floor(Date.now() / 1000);
        const commit = await git.objects.commit({
          tree: m.tree,
          parents: [head],
          // The change keeps its author (and date), as a rebase would; zz commits it.
          author: data.author,
          committer: { name: 'zz', email: 'zz@localhost', time: now },
          message: data.message,
        });
        prepared = { commit, merged: true, fastForward: false, head };
      }
    }

    // A change the branch already holds (landed before, or made by someone else) moves
    // nothing: like `git merge` saying "Already up to date", not an empty commit.
    const headTree = await trees.treeOfCommit(head);
    if ((await trees.treeOfCommit(prepared.commit)) === headTree) {
      prepared = { commit: head, merged: false, fastForward: false, head };
      return record(repo, caller, args, request, { ...prepared, branch, worktreeUpdated: false });
    }
    const r = await updateBranch(git, {
      branch,
      from: prepared.head,
      to: prepared.commit,
      reflogMessage: `zz commit_changeset (${caller.actor}): ${firstLine(
        direct ? args.message! : `${args.changeset_id}`,
      )}`,
    });
    return record(repo, caller, args, request, {
      ...prepared,
      branch,
      worktreeUpdated: r.worktree_updated,
    });
  });
}

/** Records the landing in the Lane (and answers the cited Ask when the caller holds it). */
async function record(
  repo: ZzRepo,
  caller: Caller,
  args: CommitChangesetArgs,
  request: { tool: string; request: unknown },
  landed: (Prepared & { branch: string; worktreeUpdated: boolean }) | null,
): Promise<CommitChangesetResult> {
  const r = await writeOp(repo, caller, repo.lane(args.lane_id), args, {
    ...request,
    decide: (s, { meta }): LaneOpSpec[] => {
      if (!landed) throw new ZzError('internal', 'commit_changeset replay found no prior op');
      const ask = s.asks.get(args.ask_id);
      const answer =
        ask && LANDING_KINDS.has(ask.kind) && holdsLiveClaim(ask, caller.actor, meta.now);
      const how = landed.fastForward
        ? 'fast-forward'
        : landed.merged
          ? 'merged onto ' + short(landed.head)
          : 'already on the branch';
      const main: LaneOpSpec = {
        op: 'commit_changeset',
        summary: `commit_changeset ${short(landed.commit)} to ${landed.branch} (${how})`,
        args: {
          lane_id: args.lane_id,
          ask_id: args.ask_id,
          changeset_id: args.changeset_id ?? null,
          ...(args.files
            ? {
                message: args.message,
                expected_head: args.expected_head,
                paths: args.files.map((f) => f.path),
              }
            : {}),
        },
        out: {
          commit: landed.commit,
          branch: landed.branch,
          previous_head: landed.head,
          merged: landed.merged,
          fast_forward: landed.fastForward,
          worktree_updated: landed.worktreeUpdated,
          answered: answer ? args.ask_id : null,
        },
      };
      if (!answer) return [main];
      return [
        main,
        {
          op: 'ask_answer',
          summary: `ask_answer ${args.ask_id}: complete (${short(landed.commit)})`,
          args: {
            lane_id: args.lane_id,
            ask_id: args.ask_id,
            outcome: 'complete',
            result:
              landed.commit === landed.head
                ? `already on ${landed.branch} at ${landed.head}`
                : `committed ${landed.commit} to ${landed.branch}${landed.merged ? ` (merged onto ${landed.head})` : ''}`,
            changeset_id: args.changeset_id ?? null,
          },
          out: { commit: landed.commit },
        },
      ];
    },
    result: (s, op) => ({ s, op }),
  });
  const { s, op } = r.result;
  if (op?.op !== 'commit_changeset') throw conflictError(op);
  const out = op.out ?? {};
  return {
    commit: String(out.commit),
    branch: String(out.branch),
    merged: out.merged === true,
    fast_forward: out.fast_forward === true,
    previous_head: String(out.previous_head),
    changeset_id: args.changeset_id ?? null,
    worktree_updated: out.worktree_updated === true,
    ask: askView(s, s.asks.get(args.ask_id)!, repo.clock()),
    revision: r.revision,
    replayed: r.replayed,
  };
}

interface ConflictInfo {
  id: string;
  base: string;
  head: string;
  branch: string;
  merge: { conflicts: string[]; messages: string[] };
}

/** The 409 a conflicted landing answers, rebuilt from the resolve_conflict Ask it posted. */
function conflictError(op: OpRecord | null): ZzError {
  const p = (op?.args.payload ?? {}) as Record<string, unknown>;
  const paths = Array.isArray(p.conflicting_paths) ? (p.conflicting_paths as string[]) : [];
  return new ZzError(
    'merge_conflict',
    `changeset ${String(p.changeset_id)} no longer applies to ${String(p.branch)} at ${String(p.head)}: conflicts in ${paths
      .slice(0, 20)
      .map(printable)
      .join(
        ', ',
      )}${paths.length > 20 ? ` and ${paths.length - 20} more` : ''}; resolve_conflict Ask ${String(op?.out?.ask_id)} was posted`,
    {
      changeset_id: p.changeset_id,
      branch: p.branch,
      head: p.head,
      base: p.base,
      conflicting_paths: paths,
      messages: p.messages,
      resolve_conflict_ask_id: op?.out?.ask_id,
    },
  );
}

/**
 * Posts the resolve_conflict Ask (its own commit, so it stays on the record although the call
 * fails), then throws the 409. An open resolve_conflict for the same changeset and head is
 * cited instead of posting a duplicate.
 */
async function conflict(
  repo: ZzRepo,
  caller: Caller,
  args: CommitChangesetArgs,
  request: { tool: string; request: unknown },
  origin: AskDoc,
  c: ConflictInfo,
): Promise<never> {
  const payload = {
    changeset_id: c.id,
    branch: c.branch,
    head: c.head,
    base: c.base,
    conflicting_paths: c.merge.conflicts,
    messages: c.merge.messages.slice(0, 50),
  };
  const same = (s: LaneState) =>
    [...s.asks.values()].find(
      (a) =>
        a.kind === 'resolve_conflict' &&
        a.state !== 'answered' &&
        a.payload.changeset_id === c.id &&
        a.payload.head === c.head,
    );
  const existing = same((await readLane(repo, args.lane_id)).state);
  if (existing) {
    throw conflictError({
      id: '',
      op: 'ask_post',
      actor: caller.actor,
      lamport: 0,
      time: '',
      args: { payload },
      out: { ask_id: existing.ask_id },
    });
  }
  const r = await writeOp(repo, caller, repo.lane(args.lane_id), args, {
    ...request,
    decide: (s): LaneOpSpec => {
      // A full Lane takes no resolve_conflict Ask (the fold would refuse it): say so instead.
      assertRoom(s, args.lane_id, 1);
      const askId = newAskId();
      const title = clip(
        `Resolve conflict: ${firstLine(origin.title.replace(/^Submit: /, ''))}`,
        MAX_TITLE,
      );
      return {
        op: 'ask_post',
        summary: `ask_post ${askId} (resolve_conflict) follows ${origin.ask_id}`,
        args: {
          lane_id: args.lane_id,
          kind: 'resolve_conflict',
          title,
          body:
            `Changeset ${c.id} (base ${c.base}) conflicts with ${c.branch} at ${c.head} in:\n` +
            c.merge.conflicts.map((p) => `- ${p}`).join('\n'),
          priority: origin.priority,
          depends_on: [],
          payload,
          posted_by: SERVER_ACTOR,
          origin: { ask_id: origin.ask_id, reason: CONFLICT_REASON },
        },
        out: { ask_id: askId },
      };
    },
    result: (_s, op) => op,
  });
  throw conflictError(r.result);
}

/**
 * A changeset lands only once a maintainer an owner stands behind granted its review: a Lane's
 * proposer names its maintainers (itself by default) and could otherwise review its own change in.
 */
function assertReviewed(state: LaneState, laneId: string, id: string, commit: string): void {
  // The review was of the commit the changeset was proposed as; its ref can have moved since
  // (sync fast-forwards a changeset ref to whatever a remote holds).
  assertAsProposed(
    state,
    laneId,
    id,
    commit,
    'its review does not cover the commit, and it does not land: redo the change as a new changeset',
  );
  const asks = () => state.asks.values();
  if (!reviewGranted(asks(), id)) {
    throw new ZzError(
      'precondition_failed',
      `changeset ${id} has no granted changeset_review in lane ${laneId}; a maintainer must grant its review before it lands`,
      { changeset_id: id },
    );
  }
  if (!reviewGranted(asks(), id, (r) => state.rootedReviews.has(r.ask_id))) {
    throw new ZzError(
      'forbidden',
      `changeset ${id}'s review in lane ${laneId} was granted by a maintainer no owner appointed, which does not let it land; ask an owner to run \`zz lane grant --lane-id ${laneId} --grantee <reviewer> --role maintainer\` and have the changeset reviewed again, or review it as an owner`,
      { changeset_id: id, scope: 'rooted_maintainer' },
    );
  }
}

/** The commit a changeset's ref names now, and its base (its one parent). */
async function changesetCommit(
  git: GitRepository,
  id: string,
): Promise<{
  commit: string;
  base: string;
  data: NonNullable<Awaited<ReturnType<typeof readCommit>>>;
}> {
  const commit = await git.refs.read(CHANGESETS_PREFIX + id);
  if (!commit) throw new ZzError('not_found', `changeset ${id} does not exist`);
  const data = await readCommit(git.catFile, commit);
  if (!data) throw new ZzError('not_found', `changeset ${id} does not name a commit`);
  if (data.parents.length !== 1) {
    throw new ZzError(
      'invalid_argument',
      `changeset ${id} is not a commit with one parent (its base)`,
    );
  }
  return { commit, base: data.parents[0]!, data };
}
