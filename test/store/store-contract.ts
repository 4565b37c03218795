import { describe, expect, it } from 'vitest';
import { ZzError } from '../../src/errors.js';
import { RefCasError } from '../../src/git/index.js';
import { Entity, type Store } from '../../src/store/index.js';
import { docCodec, type DocState } from '../helpers/doc-codec.js';

// The one contract every Store must keep, run against each implementation.

const put = (
  actor: string,
  path: string,
  value: string,
  extra: Partial<{ key: string; rev: string }> = {},
) => ({
  actor,
  ...(extra.key === undefined ? {} : { idempotencyKey: extra.key }),
  ...(extra.rev === undefined ? {} : { expectedRevision: extra.rev }),
  request: { tool: 'put', args: { path, value } },
  decide: () => ({ op: 'put', args: { path, value }, summary: `put ${path}` }),
  result: (s: DocState) => s.get(path),
});

export function storeContract(
  name: string,
  make: () => Promise<{ store: Store; cleanup: () => void }>,
): void {
  describe(`store contract: ${name}`, () => {
    it('creates, reads and updates files on a ref, one commit per write', async () => {
      const { store, cleanup } = await make();
      try {
        expect(await store.head('refs/zz/lanes/a')).toBeNull();
        const r1 = await store.commit('refs/zz/lanes/a', {
          parent: null,
          changes: new Map([
            ['lane.json', '{"a":1}'],
            ['asks/ab/ask-ab00000000.json', '{"x":1}'],
          ]),
          ops: [
            {
              id: '1',
              op: 'create',
              actor: 'a@x',
              lamport: 1,
              time: new Date().toISOString(),
              args: {},
            },
          ],
          summary: 'create',
        });
        expect(r1).toMatch(/^[0-9a-f]{40}$/);
        expect(await store.head('refs/zz/lanes/a')).toBe(r1);
        expect(await store.readFile(r1, 'lane.json')).toBe('{"a":1}');
        expect(await store.readFile(r1, 'asks/ab/ask-ab00000000.json')).toBe('{"x":1}');
        expect(await store.readFile(r1, 'missing.json')).toBeNull();
        const r2 = await store.commit('refs/zz/lanes/a', {
          parent: r1,
          changes: new Map([
            ['lane.json', '{"a":2}'],
            ['asks/ab/ask-ab00000000.json', null],
          ]),
          ops: [
            {
              id: '2',
              op: 'update',
              actor: 'a@x',
              lamport: 2,
              time: new Date().toISOString(),
              args: { n: 2 },
            },
          ],
          summary: 'update',
        });
        expect(await store.readAll(r2)).toEqual(new Map([['lane.json', '{"a":2}']]));
        expect(await store.readAll(r1, 'asks')).toEqual(
          new Map([['asks/ab/ask-ab00000000.json', '{"x":1}']]),
        );
        const h = await store.history('refs/zz/lanes/a');
        expect(h.map((c) => c.revision)).toEqual([r1, r2]);
        expect(h[1]!.parents).toEqual([r1]);
        expect(h.map((c) => c.ops[0]!.op)).toEqual(['create', 'update']);
        expect(h[1]!.ops[0]!.args).toEqual({ n: 2 });
        expect((await store.history('refs/zz/lanes/a', r1)).map((c) => c.revision)).toEqual([r2]);
        expect([...(await store.listRefs('refs/zz/lanes/')).keys()]).toEqual(['refs/zz/lanes/a']);
        expect(await store.refNames('refs/zz/lanes/')).toEqual(['refs/zz/lanes/a']);
        expect(await store.refNames('refs/zz/none/')).toEqual([]);
      } finally {
        cleanup();
      }
    });

    it('refuses a commit whose parent is not the current revision, and changes nothing', async () => {
      const { store, cleanup } = await make();
      try {
        const ref = 'refs/zz/lanes/b';
        const op = {
          id: '1',
          op: 'x',
          actor: 'a@x',
          lamport: 1,
          time: '2026-01-01T00:00:00.000Z',
          args: {},
        };
        const r1 = await store.commit(ref, {
          parent: null,
          changes: new Map([['f', '1']]),
          ops: [op],
          summary: 's',
        });
        await expect(
          store.commit(ref, {
            parent: null,
            changes: new Map([['f', '2']]),
            ops: [op],
            summary: 's',
          }),
        ).rejects.toBeInstanceOf(RefCasError);
        const wrong = 'f'.repeat(40);
        const err = await store
          .commit(ref, { parent: wrong, changes: new Map([['f', '3']]), ops: [op], summary: 's' })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(RefCasError);
        expect((err as ZzError).code).toBe('revision_mismatch');
        expect((err as ZzError).details).toEqual({ current_revision: r1 });
        expect(await store.head(ref)).toBe(r1);
        expect(await store.readFile(r1, 'f')).toBe('1');
      } finally {
        cleanup();
      }
    });

    it('entity: revisions, expected_revision conflicts name the current revision', async () => {
      const { store, cleanup } = await make();
      try {
        const e = new Entity(store, 'refs/zz/lanes/c', docCodec);
        const a = await e.mutate(put('a@x', 'one', '1'));
        expect(a.result).toBe('1');
        expect(a.replayed).toBe(false);
        const b = await e.mutate(put('a@x', 'one', '2', { rev: a.revision }));
        expect(b.revision).not.toBe(a.revision);
        const err = await e
          .mutate(put('a@x', 'one', '3', { rev: a.revision }))
          .catch((x: unknown) => x);
        expect(err).toBeInstanceOf(ZzError);
        expect((err as ZzError).code).toBe('revision_mismatch');
        expect((err as ZzError).details).toEqual({ current_revision: b.revision });
        expect((await e.read()).state.get('one')).toBe('2');
        expect(await store.head('refs/zz/lanes/c')).toBe(b.revision);
      } finally {
        cleanup();
      }
    });

    it('entity: idempotent replay returns the original result without a commit; reuse with other args is refused', async () => {
      const { store, cleanup } = await make();
      try {
        const e = new Entity(store, 'refs/zz/lanes/d', docCodec);
        const first = await e.mutate(put('a@x', 'k', 'v', { key: 'key-1' }));
        const again = await e.mutate(put('a@x', 'k', 'v', { key: 'key-1' }));
        expect(again.replayed).toBe(true);
        expect(again.revision).toBe(first.revision);
        expect(again.result).toBe('v');
        expect(await store.head('refs/zz/lanes/d')).toBe(first.revision);
        const reuse = await e
          .mutate(put('a@x', 'k', 'other', { key: 'key-1' }))
          .catch((x: unknown) => x);
        expect((reuse as ZzError).code).toBe('idempotency_conflict');
        // Keys are per actor: another actor may use the same key.
        const other = await e.mutate(put('b@x', 'k', 'w', { key: 'key-1' }));
        expect(other.replayed).toBe(false);
        // Keys survive a restart: a fresh Entity rebuilds them from the op log.
        const fresh = new Entity(store, 'refs/zz/lanes/d', docCodec);
        const replay = await fresh.mutate(put('a@x', 'k', 'v', { key: 'key-1' }));
        expect(replay.replayed).toBe(true);
      } finally {
        cleanup();
      }
    });

    it('entity: concurrent writers all land, in history order, with group commits', async () => {
      const { store, cleanup } = await make();
      try {
        const e = new Entity(store, 'refs/zz/lanes/e', docCodec);
        const n = 200;
        const rs = await Promise.all(
          Array.from({ length: n }, (_, i) => e.mutate(put('a@x', `f${i}`, String(i)))),
        );
        expect(new Set(rs.map((r) => r.op?.id)).size).toBe(n);
        const snap = await e.read();
        expect(snap.state.size).toBe(n);
        const hist = await store.history('refs/zz/lanes/e');
        const ops = hist.flatMap((c) => c.ops);
        expect(ops.length).toBe(n);
        expect(hist.length).toBeLessThan(n);
        const lamports = ops.map((o) => o.lamport);
        expect(lamports).toEqual([...lamports].sort((x, y) => x - y));
        // A fresh reader folds the same state from the log.
        const fresh = new Entity(store, 'refs/zz/lanes/e', docCodec);
        expect((await fresh.read()).state).toEqual(snap.state);
        expect(await store.readAll(snap.revision!)).toEqual(snap.state);
      } finally {
        cleanup();
      }
    });

    it('entity: a decide() with nothing to do resolves without a commit', async () => {
      const { store, cleanup } = await make();
      try {
        const e = new Entity(store, 'refs/zz/lanes/g', docCodec);
        const first = await e.mutate(put('a@x', 'x', '1'));
        const noop = await e.mutate({ ...put('a@x', 'x', '1'), decide: () => [] });
        expect(noop.revision).toBe(first.revision);
        expect(noop.result).toBe('1');
        expect((await store.history('refs/zz/lanes/g')).length).toBe(1);
      } finally {
        cleanup();
      }
    });

    it('entity: a refused mutation changes nothing and does not block the ones queued with it', async () => {
      const { store, cleanup } = await make();
      try {
        const e = new Entity(store, 'refs/zz/lanes/f', docCodec);
        const bad = {
          ...put('a@x', 'x', '1'),
          decide: () => {
            throw new ZzError('forbidden', 'no');
          },
        };
        const [r1, r2] = await Promise.allSettled([e.mutate(bad), e.mutate(put('a@x', 'y', '2'))]);
        expect(r1.status).toBe('rejected');
        expect(r2.status).toBe('fulfilled');
        const snap = await e.read();
        expect([...snap.state.keys()]).toEqual(['y']);
        expect(snap.log.map((o) => o.op)).toEqual(['put']);
      } finally {
        cleanup();
      }
    });

    // A mutation is all or nothing: decide() may return follow-up ops with the caller's, and
    // when one of them is refused (parse) or codec.apply throws on it, none of the mutation's
    // ops may reach the state or the ref, and the mutations queued with it still land.
    for (const how of ['is refused by parse', 'makes apply throw'] as const) {
      it(`entity: a mutation whose follow-up op ${how} records none of its ops`, async () => {
        const { store, cleanup } = await make();
        try {
          const codec: typeof docCodec = {
            ...docCodec,
            parse: (op) =>
              how === 'is refused by parse' && op.op === 'bad'
                ? { ok: false, error: 'op "bad" is not an op' }
                : { ok: true, op },
            apply(draft, op) {
              if (op.op === 'bad') throw new Error('apply cannot take "bad"');
              return docCodec.apply(draft, op);
            },
          };
          const e = new Entity(store, 'refs/zz/lanes/h', codec);
          const both = {
            ...put('a@x', 'x', '1'),
            decide: () => [
              { op: 'put', args: { path: 'x', value: '1' }, summary: 'put x' },
              { op: 'bad', args: { path: 'z' }, summary: 'bad' },
            ],
          };
          const [r0, r1, r2] = await Promise.allSettled([
            e.mutate(put('a@x', 'w', '0')),
            e.mutate(both),
            e.mutate(put('a@x', 'y', '2')),
          ]);
          expect(r0.status).toBe('fulfilled');
          expect(r1.status).toBe('rejected');
          expect(r2.status).toBe('fulfilled');
          for (const snap of [await e.read(), await new Entity(store, e.ref, codec).read()]) {
            expect([...snap.state.keys()].sort()).toEqual(['w', 'y']);
            expect(snap.log.map((o) => o.args.path)).toEqual(['w', 'y']);
          }
        } finally {
          cleanup();
        }
      });
    }
  });
}
