import { afterEach, describe, expect, it } from 'vitest';
import {
  laneClose,
  laneEvents,
  lanePropose,
  roleGrant,
  type LaneEvent,
  type ZzRepo,
} from '../../src/core/index.js';
import { startAutoSync, type AutoSync } from '../../src/core/sync/index.js';
import { makeCluster, type Clone, type Cluster } from './git-cluster.js';
import { readEventStream, type StreamedCommit } from './sse-reader.js';

// A config change that newly refuses an op an agent already saw accepted (DESIGN §7: roles as
// they stood): an owner revoked on machine A closes a Lane offline on machine B, after the
// revocation. B's Lane never diverges (only B wrote to it), so no merge re-bases the agent's
// cursor; the config that arrives by sync is what refuses the op. lane_events (and the SSE
// stream built on it) must say so once, as it says claim_lost after a merge.

const OWNER = { actor: 'owner@example.com' };
const CO = { actor: 'co@example.com' };

let cluster: Cluster | null = null;
let auto: AutoSync | null = null;
afterEach(async () => {
  await auto?.close();
  auto = null;
  cluster?.cleanup();
  cluster = null;
});

async function drain(repo: ZzRepo, cursor: string | undefined) {
  const got: LaneEvent[] = [];
  for (;;) {
    const page = await laneEvents(repo, OWNER, { cursor });
    cursor = page.next_cursor;
    if (page.events.length === 0) return { got, cursor };
    got.push(...page.events);
  }
}

/** A revoked co-owner's lane_close on B, seen accepted by B's consumer; A's config not yet in. */
async function revokedOffline(c: Cluster) {
  const [a, b] = c.clones as [Clone, Clone];
  await roleGrant(a.repo, OWNER, { grantee: CO.actor, role: 'owner' });
  await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
  await a.sync();
  await b.sync();
  await roleGrant(a.repo, OWNER, { grantee: CO.actor, role: 'owner', revoke: true });
  await a.sync();
  const start = await drain(b.repo, undefined);
  await laneClose(b.repo, CO, { lane_id: 'web', reason: 'done' });
  const seen = await drain(b.repo, start.cursor);
  const close = seen.got.find((e) => e.op === 'lane_close')!;
  expect(close.rejected).toBeUndefined();
  const closeId = (await b.repo.lane('web').read()).log.find((o) => o.op === 'lane_close')!.id;
  return { a, b, cursor: seen.cursor, closeId };
}

describe('lane_events after a config change refuses an op already seen', () => {
  it('tells the caller once, with the reason and the op, without repeating the op', async () => {
    cluster = await makeCluster(2);
    const { b, cursor, closeId } = await revokedOffline(cluster);
    const report = await b.sync();
    expect(report.fast_forwarded).toEqual(['refs/zz/config']);
    const after = await drain(b.repo, cursor);
    expect(after.got).toEqual([
      expect.objectContaining({
        lane_id: 'web',
        op: 'op_rejected',
        actor: CO.actor,
        args: expect.objectContaining({ claim_op_id: closeId }),
        rejected: expect.objectContaining({ reason: 'scope_denied' }),
      }),
    ]);
    // Told once: the next pull from the cursor it returned says nothing more.
    expect((await drain(b.repo, after.cursor)).got).toEqual([]);
    // A cursor taken after the change never hears of it.
    const fresh = (await laneEvents(b.repo, OWNER, {})).next_cursor;
    const head = await drain(b.repo, fresh);
    expect((await drain(b.repo, head.cursor)).got).toEqual([]);
  });

  it('reaches an open SSE stream when the daemon syncs the config in', async () => {
    cluster = await makeCluster(2);
    const { b, closeId } = await revokedOffline(cluster);
    const stream = readEventStream(b.repo, OWNER);
    const commits: StreamedCommit[] = [];
    await new Promise((r) => setImmediate(r));
    // The daemon's own round: it wakes listeners for the refs it moved (here only the config).
    auto = startAutoSync(new Map([['b', b.repo]]), { intervalMs: 3_600_000, watchMs: 3_600_000 });
    await auto.syncNow();
    const notices = () =>
      commits.filter((c) => c.ref === 'refs/zz/lanes/web').flatMap((c) => c.ops);
    await stream.until(commits, () => notices().length > 0);
    stream.close();
    expect(notices()).toEqual([
      expect.objectContaining({
        op: 'op_rejected',
        actor: CO.actor,
        args: expect.objectContaining({ claim_op_id: closeId }),
      }),
    ]);
    // The file's default bound (vitest.config.ts, 150 s): 30 s was crossed at load 22 (a
    // two-clone cluster, a sync and a fold on a loaded 2-core machine).
  });
});
