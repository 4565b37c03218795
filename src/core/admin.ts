import { isZzError, ZzError } from '../errors.js';
import { isCoordinator, isMaintainer, isOwner, type Caller } from './access.js';
import {
  laneListFirst,
  type CorruptEntity,
  type LaneListPage,
  type WriteMeta,
  type WriteOpts,
} from './lanes.js';
import { firstOf } from './paging.js';
import { LIMITS, PAGE } from '../schema/limits.js';
import { repoHealth, type RepoHealth } from './health.js';
import { assertSignable } from './signable.js';
import { writeOp } from './write-op.js';
import type { ZzRepo } from './zz-repo.js';
import type { ConfigDoc } from '../schema/config.js';
import type { ConfigOp } from '../schema/config-ops.js';
import type { OpSpec } from '../store/index.js';

// Repo-level use cases: initialise zz state, grant ownership, and discovery.

export type InitArgs = {
  owner: string;
  visibility?: 'private' | 'public';
  default_branch: string;
  /** The first owner's signing keys (`ssh-ed25519 …`), registered by the init itself. */
  owner_keys?: string[];
  /** Every op must be signed by a key of its actor (`zz init --signed`). */
  signed?: boolean;
  /** The checkout's root commits (git historyRoots), when known: the project's identity. */
  project_roots?: string[];
};

/**
 * Creates refs/zz/config and lane _repo when missing; adopts what exists. Idempotent.
 * Not a writeOp: there is no caller yet (the owner is an argument) and no config to require.
 */
export async function initRepo(
  repo: ZzRepo,
  args: InitArgs,
): Promise<{
  config: ConfigDoc;
  created: boolean;
  lane_created: boolean;
  /** What became of `project_roots` on a config that existed already. */
  roots: RootsOutcome | null;
}> {
  let created = false;
  let roots: RootsOutcome | null = null;
  const projectRoots = args.project_roots?.length ? args.project_roots : null;
  const snap = await repo.config.read();
  if (!snap.state.config) {
    await repo.config.mutate({
      actor: args.owner,
      decide: (s) => {
        if (s.config) return [];
        return {
          op: 'repo_init',
          summary: `repo_init ${repo.key} (owner ${args.owner})`,
          args: {
            owners: [args.owner],
            visibility: args.visibility ?? 'private',
            default_branch: args.default_branch,
            ...(args.owner_keys?.length ? { owner_keys: args.owner_keys } : {}),
            ...(args.signed ? { signed: true } : {}),
            ...(projectRoots ? { project_roots: projectRoots } : {}),
          },
        };
      },
      result: () => null,
    });
    created = true;
  } else if (projectRoots) {
    roots = await addRoots(repo, args.owner, projectRoots);
  }
  const config = await repo.requireConfig();
  let laneCreated = false;
  const lane = repo.lane('_repo');
  if (!(await lane.read()).state.lane) {
    await lane.mutate({
      actor: args.owner,
      decide: (s) =>
        s.lane
          ? []
          : {
              op: 'lane_propose',
              summary: 'lane_propose _repo: Repository',
              args: {
                lane_id: '_repo',
                title: 'Repository',
                description:
                  'Repository-wide asks (Ladder updates, housekeeping). Its coordinators are the owners.',
                coordinators: config.owners,
                maintainers: config.owners,
                related_lanes: [],
                ask_kinds: {},
              },
            },
      result: () => null,
    });
    laneCreated = true;
  }
  const { revision: _r, ...doc } = config;
  return { config: doc, created, lane_created: laneCreated, roots };
}

/** What became of the checkout's roots on a config that existed already (see addRoots). */
export type RootsOutcome = 'added' | 'recorded' | 'not_owner' | 'unsignable';

/**
 * A config made before zz recorded roots (or in a shallow clone) gets them from a later
 * `zz init` of an owner: an owner-level op like the others, so sync takes it only signed by
 * an owner's key, and no one else can give a repository an identity its syncs then enforce.
 * Not a writeOp (it runs inside init, with no caller or idempotency key), but it gets the same
 * up-front check: an owner's init on a second machine, whose key is not registered yet, signs
 * it with that key; every other clone would quarantine it, and sync would hold refs/zz/config
 * back, freezing every later config change of this clone with it. Left unwritten instead
 * ('unsignable'), said by init, and written by a later init once the key is registered.
 */
async function addRoots(
  repo: ZzRepo,
  owner: string,
  projectRoots: string[],
): Promise<RootsOutcome> {
  const s = (await repo.config.read()).state;
  if (s.roots.length > 0) return 'recorded';
  if (!s.config?.owners.includes(owner)) return 'not_owner';
  try {
    await assertSignable(repo, { actor: owner }, repo.config, 'repo_add_roots');
  } catch (e) {
    if (isZzError(e) && e.code === 'forbidden') return 'unsignable';
    throw e;
  }
  let added = false;
  await repo.config.mutate({
    actor: owner,
    decide: (st) => {
      // decide may run again after a lost race: only its last answer counts.
      added = st.roots.length === 0 && !!st.config?.owners.includes(owner);
      if (!added) return [];
      return {
        op: 'repo_add_roots',
        summary: `repo_add_roots ${projectRoots.map((r) => r.slice(0, 12)).join(' ')}`,
        args: { roots: projectRoots },
      };
    },
    result: () => null,
  });
  return added ? 'added' : 'recorded';
}

export type RoleGrantArgs = WriteOpts & {
  grantee: string;
  role: 'owner';
  revoke?: boolean;
};

export async function roleGrant(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: RoleGrantArgs,
): Promise<{ owners: string[] } & WriteMeta> {
  const revoke = args.revoke ?? false;
  const r = await writeOp(repo, callerIn, repo.config, args, {
    tool: 'role_grant',
    request: { grantee: args.grantee, role: args.role, revoke },
    decide: (s, { caller }): OpSpec<ConfigOp> => {
      const c = s.config!;
      if (!isOwner(c, caller.actor))
        throw new ZzError('forbidden', 'only an owner may grant or revoke ownership');
      if (revoke && c.owners.filter((o) => o !== args.grantee).length === 0) {
        throw new ZzError('conflict', 'cannot revoke the last owner');
      }
      // The config fold refuses the same from anywhere (config-state.ts, owners_full).
      if (!revoke && !c.owners.includes(args.grantee) && c.owners.length >= LIMITS.owners) {
        throw new ZzError(
          'precondition_failed',
          `the repository already has ${LIMITS.owners} owners; revoke one first`,
          { limit: LIMITS.owners },
        );
      }
      return {
        op: 'role_grant',
        summary: `role_grant: ${revoke ? 'revoke' : 'grant'} owner ${args.grantee}`,
        args: { grantee: args.grantee, role: args.role, revoke },
      };
    },
    result: (s) => s.config!.owners,
  });
  return { owners: r.result, revision: r.revision, replayed: r.replayed };
}

export type RepoStateResult = {
  repo: string;
  actor: string | null;
  initialised: boolean;
  visibility: 'private' | 'public' | null;
  default_branch: string;
  /**
   * Whether imported ops must be signed by a key of their actor (else they are folded and
   * marked `unsigned` in lane_get history and lane_events).
   */
  signatures_required: boolean;
  /**
   * The root commits of the project's history that refs/zz/config records (`zz init`): sync
   * refuses a remote whose config names only others. Empty: not recorded (an older config, or
   * init in a shallow clone), and sync cannot tell projects apart.
   */
  project_roots: readonly string[];
  /**
   * The caller's roles; the Lanes it coordinates or maintains are named up to
   * PAGE.defaultLimit each (by id), the rest counted (`*_more`): lane_list has every Lane's
   * coordinators and maintainers.
   */
  roles: {
    owner: boolean;
    coordinator_of: string[];
    coordinator_of_more: number;
    maintainer_of: string[];
    maintainer_of_more: number;
  };
  /**
   * The first page of lane_list (PAGE.defaultLimit Lanes by id, with counts): repo_state is
   * discovery, and one answer listing every Lane grew without bound.
   */
  lanes: Array<{
    lane_id: string;
    title: string;
    counts: { open: number; claimed: number; answered: number; total: number };
  }>;
  /** How many Lanes there are. */
  lanes_total: number;
  /** A lane_list cursor for the Lanes after `lanes`; null when `lanes` holds them all. */
  lanes_next_cursor: string | null;
  /** The first PAGE.maxListedProblems Lane refs that cannot be read; corrupt_more counts the rest. */
  corrupt: CorruptEntity[];
  corrupt_more: number;
} & RepoHealth;

/** Whether anonymous callers may read (visibility public); an uninitialised repo is private. */
export async function isPublicRepo(repo: ZzRepo): Promise<boolean> {
  return (await repo.config.read()).state.config?.visibility === 'public';
}

export async function repoState(repo: ZzRepo, caller: Caller | null): Promise<RepoStateResult> {
  const snap = await repo.config.read();
  const config = snap.state.config;
  const actor = caller?.actor ?? null;
  const { page, lanes } = config ? await laneListFirst(repo) : { page: NO_LANES, lanes: [] };
  const coordinatorOf = firstOf(
    config && actor
      ? lanes.filter((l) => isCoordinator(l, config, actor)).map((l) => l.lane_id)
      : [],
    PAGE.defaultLimit,
  );
  const maintainerOf = firstOf(
    actor ? lanes.filter((l) => isMaintainer(l, actor)).map((l) => l.lane_id) : [],
    PAGE.defaultLimit,
  );
  return {
    repo: repo.key,
    actor,
    initialised: !!config,
    visibility: config?.visibility ?? null,
    default_branch: await repo.defaultBranch(),
    signatures_required: snap.state.signed,
    project_roots: snap.state.roots,
    roles: {
      owner: !!(config && actor && isOwner(config, actor)),
      coordinator_of: coordinatorOf.shown,
      coordinator_of_more: coordinatorOf.more,
      maintainer_of: maintainerOf.shown,
      maintainer_of_more: maintainerOf.more,
    },
    lanes: page.lanes.map((l) => ({ lane_id: l.lane_id, title: l.title, counts: l.counts })),
    lanes_total: page.total,
    lanes_next_cursor: page.next_cursor,
    corrupt: page.corrupt,
    corrupt_more: page.corrupt_more,
    ...(await repoHealth(repo, !!config)),
  };
}

const NO_LANES: LaneListPage = {
  lanes: [],
  next_cursor: null,
  total: 0,
  corrupt: [],
  corrupt_more: 0,
};
