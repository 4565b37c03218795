import { describe, expect, it } from 'vitest';
import { ZzError } from '../../src/errors.js';
import { runWorker, type CallTool, type WorkEvent } from '../../src/work/index.js';
import { sh } from '../helpers/temp-repo.js';
import { fakeModelServer, reply, type RecordedRequest } from '../models/fake-model-server.js';
import {
  AGENT,
  asksOf,
  endEachTest,
  fakeOpenAI,
  goodChange,
  OWNER,
  served,
  workOnce,
  type Served,
} from './harness.js';

// zz work claims only landings the daemon would let it make (work/landing.ts), and offers the
// landing tools to exactly those the daemon lets land (core/access.ts rootedCoordinators): a real
// daemon over HTTP and a fake model endpoint.

const t = endEachTest();

const toolNames = (r: RecordedRequest): string[] =>
  (r.body.tools as { function: { name: string } }[]).map((x) => x.function.name);

/**
 * The agent's own Lane `own` (it coordinates it, but no owner stands behind that) holding a
 * submit_changeset posted by hand; its id.
 */
async function ownLaneWithSubmit(s: Served, extra: Record<string, unknown> = {}): Promise<string> {
  await s.agent('lane_propose', { lane_id: 'own', title: 'Own lane' });
  const posted = await s.agent('ask_post', {
    lane_id: 'own',
    kind: 'submit_changeset',
    title: 'Submit cs-1',
    payload: { changeset_id: 'cs-1' },
    ...extra,
  });
  return (posted.ask as { ask_id: string }).ask_id;
}

describe('landing Asks and a coordinatorship no owner stands behind', () => {
  it('passes over a submit_changeset it could not land, says what an owner runs, and claims it once granted', async () => {
    const s = (t.s = await served());
    const askId = await ownLaneWithSubmit(s);
    const model = (t.model = await fakeModelServer(() => reply('unused')));

    const first = await workOnce(s, fakeOpenAI(model), 'own');
    expect(first.events.filter((e) => e.type === 'claimed')).toEqual([]);
    const passing = first.events.filter((e) => e.type === 'passing_over');
    expect(passing).toEqual([
      {
        type: 'passing_over',
        lane_id: 'own',
        kinds: ['submit_changeset', 'resolve_conflict'],
        reason: expect.stringContaining(
          `\`zz lane grant --lane-id own --grantee '${AGENT}' --role coordinator\``,
        ),
      },
    ]);
    expect(first.summary).toMatchObject({ asks: 0, released: 0 });
    // Never claimed: no holder, and no claim or release in the Lane's history.
    const ask = (await asksOf(s, 'own')).find((a) => a.ask_id === askId)!;
    expect(ask).toMatchObject({ state: 'open', holder: null });
    const history = (await s.owner('lane_get', { lane_id: 'own' })).history as { op: string }[];
    expect(history.map((h) => h.op)).not.toContain('ask_claim');

    // An owner roots the agent's coordinatorship: the next claim takes the Ask.
    await s.owner('lane_grant', { lane_id: 'own', grantee: AGENT, role: 'coordinator' });
    const second = await workOnce(s, fakeOpenAI(model), 'own');
    expect(second.events.filter((e) => e.type === 'passing_over')).toEqual([]);
    expect(second.events.find((e) => e.type === 'claimed')).toMatchObject({ ask_id: askId });
  });

  it('a running worker reads the grant an owner made while it waited, and takes the landing', async () => {
    const s = (t.s = await served());
    const askId = await ownLaneWithSubmit(s);
    const model = (t.model = await fakeModelServer(() => reply('unused')));
    const events: WorkEvent[] = [];
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), 30_000);
    let granted: Promise<unknown> | null = null;
    await runWorker({
      call: s.agent,
      model: fakeOpenAI(model),
      laneId: 'own',
      actor: AGENT,
      signal: stop.signal,
      idleWaitMs: 10_000,
      onEvent: (e) => {
        events.push(e);
        // Idle, passing the landing over: the owner roots the agent, a Lane event that ends
        // the wait.
        if (e.type === 'idle' && !granted) {
          granted = s.owner('lane_grant', { lane_id: 'own', grantee: AGENT, role: 'coordinator' });
        }
        if (e.type === 'answered' || e.type === 'released') stop.abort();
      },
    });
    clearTimeout(timer);
    await granted;
    const types = events.map((e) => e.type);
    expect(types.slice(0, 3)).toEqual(['start', 'passing_over', 'idle']);
    expect(events.find((e) => e.type === 'claimed')).toMatchObject({ ask_id: askId });
  });

  it('a daemon that predates exclude_kinds: query then claim passes over the landing', async () => {
    const s = (t.s = await served());
    await ownLaneWithSubmit(s, { priority: 0 });
    await s.agent('ask_post', { lane_id: 'own', kind: 'work', title: 'Fresh', priority: 3 });
    // What such a daemon's strict schema answers for a field it does not know.
    const refused: string[] = [];
    const call: CallTool = (tool, args) => {
      if (tool === 'ask_claim_next' && 'exclude_kinds' in args) {
        refused.push(tool);
        return Promise.reject(new ZzError('invalid_argument', 'unknown field "exclude_kinds"'));
      }
      return s.agent(tool, args);
    };
    const model = (t.model = await fakeModelServer(() => goodChange));
    const { events } = await workOnce(s, fakeOpenAI(model), 'own', { call });
    expect(events.filter((e) => e.type === 'claimed').map((e) => e.title)).toEqual(['Fresh']);
    expect(refused).toEqual(['ask_claim_next']);
  });

  it("offers the landing tools to an owner coordinating by a non-owner's grant, whose landing the daemon takes", async () => {
    const s = (t.s = await served());
    await s.agent('lane_propose', { lane_id: 'own', title: 'Own lane' });
    // A grant no owner made: it roots nothing, but the owner's own coordinatorship lands.
    await s.agent('lane_grant', { lane_id: 'own', grantee: OWNER, role: 'coordinator' });
    const view = (await s.owner('lane_get', { lane_id: 'own' })).lane as {
      rooted_coordinators: string[];
    };
    expect(view.rooted_coordinators).toEqual([OWNER]);
    await s.owner('ask_post', { lane_id: 'own', kind: 'ladder_update', title: 'Note shipping' });
    const model = (t.model = await fakeModelServer(() => reply('Nothing to change.')));
    const events: WorkEvent[] = [];
    await runWorker({
      call: s.owner,
      model: fakeOpenAI(model),
      laneId: 'own',
      actor: OWNER,
      once: true,
      onEvent: (e) => events.push(e),
    });
    expect(events.filter((e) => e.type === 'passing_over')).toEqual([]);
    const offered = toolNames(model.requests[0]!);
    expect(offered).toContain('commit_changeset');
    expect(offered).toContain('ladder_write_rung');
    // And the daemon takes that owner's landing, as the offer said.
    const a = await s.owner('ask_post', { lane_id: 'own', kind: 'submit_changeset', title: 'x' });
    const id = (a.ask as { ask_id: string }).ask_id;
    await s.owner('ask_claim', { lane_id: 'own', ask_id: id });
    const landed = await s.owner('commit_changeset', {
      lane_id: 'own',
      ask_id: id,
      message: 'add owner.txt',
      expected_head: sh(s.dir, 'rev-parse', 'main'),
      files: [{ path: 'owner.txt', content: 'owner\n' }],
    });
    expect(landed).toMatchObject({ fast_forward: true });
    expect(sh(s.dir, 'show', 'main:owner.txt')).toBe('owner');
  });
});
