import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initRepo } from '../../src/core/index.js';
import { HELD } from '../../src/schema/limits.js';
import { jsonClient, type HttpReply, type JsonClient } from '../helpers/http-client.js';
import { makeRepo } from '../helpers/temp-repo.js';
import { startTestDaemon, type TestDaemon } from '../helpers/test-daemon.js';

// lane_events long-polls are bounded per person, their agents included, as event streams are
// (hostile review: 300 open from one token kept an idle daemon at ~15% of a core). Past the
// bound, a 429 at once; a write still answers every waiting call at once, and their places
// are free again after.

const OWNER = 'owner@example.com';
let t: TestDaemon;
let http: JsonClient;
const tok = { owner: '', agent: '', other: '', ownerThere: '' };
/** A second repository the daemon serves: places are per repository, as tokens are. */
const second = makeRepo('zz-longpoll-2-');
const SECOND = 'acme/second';

beforeAll(async () => {
  spawnSync('git', ['config', 'zz.repo', SECOND], { cwd: second.dir });
  t = await startTestDaemon({
    prefix: 'zz-longpoll-',
    daemon: { repos: [second.dir], maxStreamsPerPerson: 1 },
  });
  await initRepo(t.daemon.repos.get(SECOND)!, { owner: OWNER, default_branch: 'main' });
  tok.ownerThere = (await t.daemon.tokensFor(SECOND)!.create(OWNER, 'login')).token;
  tok.owner = await t.token(OWNER);
  tok.agent = await t.token(`${OWNER}[claude]`);
  tok.other = await t.token('member@example.com');
  http = jsonClient(t.url, { maxSockets: 4 * HELD.longPollsPerPerson });
  await events({}, tok.owner); // warm
  const r = await http.post(
    `/api/repos/${t.key}/tools/lane_propose`,
    { lane_id: 'web', title: 'Web' },
    tok.owner,
  );
  expect(r.status, r.text).toBe(200);
});
afterAll(async () => {
  http?.close();
  await t?.close();
  second.cleanup();
});

const events = (args: Record<string, unknown>, token: string): Promise<HttpReply> =>
  http.post(`/api/repos/${t.key}/tools/lane_events`, args, token);

describe('lane_events long-polls', { timeout: 200_000 }, () => {
  it('are capped per person (agents included) with a 429; a write answers the waiting ones, freeing their places', async () => {
    const head = (await events({ limit: 5000 }, tok.owner)).json.result.next_cursor as string;
    const n = HELD.longPollsPerPerson;
    // n - 1 of the owner's and one of their agent's: n of one person.
    const waiting = Array.from({ length: n }, (_, i) =>
      events({ cursor: head, wait_ms: 60_000 }, i === 0 ? tok.agent : tok.owner),
    );
    // The next waiting call of that person is refused once all n are held.
    let refused: HttpReply | undefined;
    await expect
      .poll(
        async () => {
          refused = await events({ cursor: head, wait_ms: 1 }, tok.owner);
          return refused.status;
        },
        { timeout: 20_000 },
      )
      .toBe(429);
    expect(refused!.json).toMatchObject({
      code: 'too_many_requests',
      error: expect.stringMatching(
        new RegExp(`${OWNER} and their agents already have ${n} lane_events calls waiting`),
      ),
    });
    expect((await events({ cursor: head, wait_ms: 1 }, tok.agent)).status).toBe(429);
    // A call that does not wait is not counted; another person is not affected.
    expect((await events({ cursor: head }, tok.owner)).status).toBe(200);
    expect((await events({ cursor: head, wait_ms: 1 }, tok.other)).status).toBe(200);
    // Nor is the same person on another repository the daemon serves.
    const there = await http.post(
      `/api/repos/${SECOND}/tools/lane_events`,
      { wait_ms: 1 },
      tok.ownerThere,
    );
    expect(there.status, there.text.slice(0, 300)).toBe(200);

    // A write answers every waiting call (long before their 60 s), with the event.
    const posted = await http.post(
      `/api/repos/${t.key}/tools/ask_post`,
      { lane_id: 'web', kind: 'work', title: 'Wake up' },
      tok.owner,
    );
    expect(posted.status, posted.text).toBe(200);
    const answers = await Promise.all(waiting);
    for (const a of answers) {
      expect(a.status, a.text.slice(0, 300)).toBe(200);
      expect(a.json.result.events.map((e: { op: string }) => e.op)).toContain('ask_post');
    }
    // Their places are free again.
    const next = answers[1]!.json.result.next_cursor as string;
    expect((await events({ cursor: next, wait_ms: 1 }, tok.owner)).status).toBe(200);
  });
  it('event streams are capped per person and repository too', async () => {
    const ac = new AbortController();
    const open = (repo: string, token: string) =>
      fetch(`${t.url}/api/repos/${repo}/events`, {
        headers: { authorization: `Bearer ${token}` },
        signal: ac.signal,
      });
    try {
      expect((await open(t.key, tok.owner)).status).toBe(200);
      const refused = await open(t.key, tok.agent);
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as { code: string }).code).toBe('too_many_requests');
      expect((await open(SECOND, tok.ownerThere)).status).toBe(200);
    } finally {
      ac.abort();
    }
  });
});
