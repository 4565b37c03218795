import { describe, expect, it } from 'vitest';
import { laneRef } from '../../src/core/index.js';
import { OP_FORMAT, OP_ID_RE, parseConfigOp, parseLaneOp } from '../../src/schema/index.js';
import { formatOpMessage, parseOpMessage, type OpRecord } from '../../src/store/index.js';
import { ALICE, call, memoryRepo, rejects } from '../helpers/core-fixture.js';

// Ops are typed (issue 10): every op parses against its entity's union, a malformed one is an
// error value naming what is wrong, and ops carry a format version and a 128-bit id.

const legacyPost: OpRecord = {
  id: '0123456789',
  op: 'ask_post',
  actor: 'alice@example.com',
  lamport: 3,
  time: '2026-11-30T12:00:00.000Z',
  args: { lane_id: 'feat', kind: 'work', title: 'Old', body: '', priority: 2, depends_on: [] },
  out: { ask_id: 'ask-0123456789' },
};

describe('op messages and op unions', () => {
  it('parseOpMessage returns a result value: ops, none, or an error naming the problem', () => {
    const msg = formatOpMessage('post', [legacyPost]);
    expect(parseOpMessage(msg)).toEqual({ ok: true, ops: [legacyPost] });
    expect(parseOpMessage('merge\n\nZz-Op: merge\n')).toEqual({ ok: true, ops: [] });
    const broken = parseOpMessage('x\n\nzz-ops [{"id":\n');
    expect(broken.ok).toBe(false);
    if (!broken.ok) expect(broken.error).toMatch(/not JSON/);
    const nullArgs = parseOpMessage(formatOpMessage('x', [{ ...legacyPost, args: null as never }]));
    expect(nullArgs.ok).toBe(false);
    if (!nullArgs.ok) expect(nullArgs.error).toMatch(/args/);
  });

  it('parses against the entity union: wrong fields, foreign and future ops are errors', () => {
    expect(parseOpMessage(formatOpMessage('x', [legacyPost]), parseLaneOp).ok).toBe(true);
    const noTitle = parseLaneOp({ ...legacyPost, args: { ...legacyPost.args, title: 7 } });
    expect(noTitle).toMatchObject({ ok: false });
    if (!noTitle.ok) expect(noTitle.error).toMatch(/args\.title/);
    const noOut = parseLaneOp({ ...legacyPost, out: {} });
    if (!noOut.ok) expect(noOut.error).toMatch(/out\.ask_id/);
    expect(noOut.ok).toBe(false);
    const foreign = parseConfigOp(legacyPost);
    expect(foreign).toEqual({ ok: false, error: 'op ask_post is not a config op' });
    const future = parseLaneOp({ ...legacyPost, v: OP_FORMAT + 1, op: 'ask_teleport' });
    expect(future.ok).toBe(false);
    if (!future.ok) expect(future.error).toMatch(/newer zz/);
    // Ops written before formats (no v, 10-hex id) still read.
    expect(parseLaneOp(legacyPost).ok).toBe(true);
  });

  it('new ops carry the format version and a replica-prefixed 128-bit id', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'feat', title: 'F' });
    await call(repo, ALICE, 'ask_post', { lane_id: 'feat', kind: 'work', title: 'A' });
    const ops = (await repo.store.history(laneRef('feat'))).flatMap((c) => c.ops);
    expect(ops).toHaveLength(2);
    for (const op of ops) {
      expect(op.v).toBe(OP_FORMAT);
      expect(op.id).toMatch(OP_ID_RE);
      expect(op.id).toMatch(/^[0-9a-f]{16}-[0-9a-f]{32}$/);
    }
    // One replica wrote both.
    expect(new Set(ops.map((o) => o.id.slice(0, 16))).size).toBe(1);
  });

  it('a malformed op in a Lane is entity_corrupt naming the ref, never a TypeError', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'ok', title: 'Fine' });
    await call(repo, ALICE, 'lane_propose', { lane_id: 'bad', title: 'Bad' });
    const head = await repo.store.head(laneRef('bad'));
    await repo.store.commit(laneRef('bad'), {
      parent: head,
      changes: new Map(),
      ops: [{ ...legacyPost, args: { lane_id: 'bad', kind: 'work' } }],
      summary: 'hand-written',
    });
    const e = await rejects(call(repo, ALICE, 'lane_get', { lane_id: 'bad' }), 'entity_corrupt');
    expect(e.message).toContain('refs/zz/lanes/bad');
    expect(e.message).toMatch(/args\.title/);
    expect((await call(repo, ALICE, 'lane_get', { lane_id: 'ok' })).lane.title).toBe('Fine');
  });
});
