import { ZzError } from '../errors.js';
import { setImmediate as nextTurn } from 'node:timers/promises';
import {
  assertRefName,
  assertTreePath,
  EMPTY_TREE_OID,
  hashedObject,
  commitMessages,
  readCommit,
  readTree,
  RefCasError,
  serializeCommit,
  serializeSortedTree,
  signCommitBody,
  sortTreeEntries,
  walkTreePath,
  type CommitData,
  type SshSigningKey,
  type GitRepository,
  type HashedObject,
  type ObjectType,
  type ObjectWriter,
  type PendingDirs,
  type Signature,
  type TreeEntry,
} from '../git/index.js';
import { commitOps, formatOpMessage } from './op-message.js';
import type {
  CodeCommitRequest,
  CommitRecord,
  CommitRequest,
  FileChanges,
  Store,
} from './store.js';

// Entities on real refs. Objects are all written (atomically, by ObjectWriter) before the ref
// moves by CAS (RefStore), so a crash at any point leaves either the old state or the new one,
// plus at worst some unreachable objects that `git gc` prunes later.

const TREE_CACHE_MAX = 20_000;
const SHORT_TAIL_MAX = 32;

export class GitStore implements Store {
  readonly kind = 'git' as const;
  private readonly trees = new Map<string, TreeEntry[]>();
  private readonly commitTrees = new Map<string, string>();
  /** The last large trees written, as bytes (see TreeImages). */
  private readonly images = new TreeImages();

  /**
   * The signing key for commits an actor authors, or null to leave them unsigned. A promise when
   * finding it costs (in-process signing looks it up at the first write: authenticity.ts).
   */
  signer: ((actor: string) => SshSigningKey | null | Promise<SshSigningKey | null>) | null = null;

  /**
   * The person `signer` signs for (their agents too), or null when nothing signs here. Writes
   * by anyone else are committed unsigned: core/signable.ts refuses those that every other
   * machine would refuse on import.
   */
  signsFor: string | null = null;

  /** This clone's replica id (see local/replica-id.ts); unset, ops use the process's. */
  readonly replica?: string;

  constructor(
    private readonly repo: GitRepository,
    opts: { replica?: string } = {},
  ) {
    if (opts.replica !== undefined) this.replica = opts.replica;
  }

  head(ref: string): Promise<string | null> {
    return this.repo.refs.read(ref);
  }

  listRefs(prefix: string): Promise<Map<string, string>> {
    return this.repo.refs.list(prefix);
  }

  refNames(prefix: string): Promise<string[]> {
    return this.repo.refs.refNames(prefix);
  }

  listNames(prefix: string): Promise<string[]> {
    return this.repo.refs.names(prefix);
  }

  private async treeOf(revision: string): Promise<string> {
    const cached = this.commitTrees.get(revision);
    if (cached) return cached;
    const c = await readCommit(this.repo.catFile, revision);
    if (!c) throw new ZzError('not_found', `revision ${revision} not found`);
    const tree = c.tree;
    this.remember(this.commitTrees, revision, tree);
    return tree;
  }

  private async readTree(oid: string): Promise<TreeEntry[]> {
    const cached = this.trees.get(oid);
    if (cached) return cached;
    const entries = await readTree(this.repo.catFile, oid);
    if (!entries) throw new ZzError('git_failed', `tree ${oid} is missing`);
    this.remember(this.trees, oid, entries);
    return entries;
  }

  private remember<V>(m: Map<string, V>, k: string, v: V): void {
    if (m.size >= TREE_CACHE_MAX) {
      const first = m.keys().next().value;
      if (first !== undefined) m.delete(first);
    }
    m.set(k, v);
  }

  async readFile(revision: string, path: string): Promise<string | null> {
    const tree = await this.treeOf(revision);
    const { entry } = await walkTreePath((t) => this.readTree(t), tree, path);
    if (!entry || entry.mode === '040000') return null;
    const blob = await this.repo.catFile.read(entry.oid);
    return blob ? blob.data.toString('utf8') : null;
  }

  async readAll(revision: string, dir = ''): Promise<Map<string, string>> {
    let tree = await this.treeOf(revision);
    if (dir) {
      const { entry } = await walkTreePath((t) => this.readTree(t), tree, dir);
      if (!entry || entry.mode !== '040000') return new Map();
      tree = entry.oid;
    }
    const blobs: Array<[string, string]> = [];
    const walk = async (oid: string, prefix: string): Promise<void> => {
      const entries = await this.readTree(oid);
      await Promise.all(
        entries.map(async (e) => {
          if (e.mode === '040000') await walk(e.oid, prefix + e.name + '/');
          else blobs.push([prefix + e.name, e.oid]);
        }),
      );
    };
    await walk(tree, dir ? dir + '/' : '');
    const out = new Map<string, string>();
    const contents = await Promise.all(blobs.map(([, oid]) => this.repo.catFile.read(oid)));
    blobs.forEach(([path], i) => {
      const obj = contents[i];
      if (obj) out.set(path, obj.data.toString('utf8'));
    });
    return out;
  }

  async history(ref: string, since?: string | null): Promise<CommitRecord[]> {
    const head = await this.head(ref);
    if (!head || head === since) return [];
    const tail = await this.shortTail(head, since ?? null);
    if (tail) return tail;
    return (await commitMessages(this.repo.gitdir, head, since ?? null)).map((c) => ({
      revision: c.oid,
      parents: c.parents,
      ...commitOps(c.message, c.oid),
    }));
  }

  // The usual refresh: a few single-parent commits on top of the revision we hold. Reading them
  // from the long-lived cat-file costs ~0.1 ms each where spawning `git log` costs 10-20 ms, and
  // that is paid on every retry while another writer keeps moving the ref (with git log in the
  // loop, a native writer committing every ~20 ms starved an Entity through all its retries).
  // The same for a whole history (`since` null) that is one short line back to its root, as
  // most Lanes' are: a CLI command reading ten Lanes spawned ten `git log`s, where one cat-file
  // now serves them all. For a line of single-parent commits the order is the only one there
  // is, so it is `git log --reverse --topo-order`'s. A merge, a longer history, a missing commit
  // (a shallow fetch) or a `since` that is not an ancestor: git log decides.
  private async shortTail(head: string, since: string | null): Promise<CommitRecord[] | null> {
    const out: CommitRecord[] = [];
    let cur = head;
    for (let i = 0; i < SHORT_TAIL_MAX; i++) {
      const c = await readCommit(this.repo.catFile, cur);
      if (!c) return null;
      const root = since === null && c.parents.length === 0;
      if (c.parents.length !== 1 && !root) return null;
      this.remember(this.commitTrees, cur, c.tree);
      out.push({ revision: cur, parents: c.parents, ...commitOps(c.message, cur) });
      if (root || c.parents[0] === since) return out.reverse();
      cur = c.parents[0]!;
    }
    return null;
  }

  async commit(ref: string, req: CommitRequest): Promise<string> {
    // No read of the ref up front: the CAS under the lock refuses a stale parent (RefCasError)
    // and its read is the one that counts. The early read was one more of the three reads of
    // the ref file a durable write made (Entity.read, this one, the CAS's), and a stale parent
    // is the rare case: another process moved the ref (Entity re-decides and retries). What
    // that case costs now: the objects are written before the CAS fails, a small pack that no
    // ref names. Nothing is lost or corrupt (the ref never moved); the pack is released and
    // merged like any other (its objects go with the merged pack to gc, which prunes them once
    // unreachable and old). A large commit still reads first (below): its pack is MBs.
    // The ref's name is checked first, as that read did: a hostile name writes nothing.
    assertRefName(ref);
    // A singleton entity starts from a fixed root commit (same bytes on every machine), so two
    // independent `zz init`s share history and a sync merge of them has a common base.
    const root = req.parent === null && SINGLETON_REFS.has(ref) ? await this.rootCommit(ref) : null;
    // Two waits in all, the least a new file allows: a file's data must be durable before its
    // name is (else a power cut can leave the name over an empty file: a corrupt object in
    // place, which git trusts), and a name is durable only once its directory is fsynced; the
    // ref moves after both. So the objects are written first and their data syncs started
    // (`written`); while those run, the ref's lock is taken, checked and its new value written
    // and synced beside them (RefStore.cas's `durable`: one wait for objects and lock); then
    // the objects' renames and their directories' fsyncs (the second wait); then the ref moves.
    // (Before, the lock was taken and synced between the two waits and its own work and fsync
    // lengthened the second.)
    const pending: PendingDirs = new Set();
    let written: Promise<void> | null = null;
    try {
      const { oid, write, large } = await this.prepareCommit(
        {
          parents: req.parent ? [req.parent] : root ? [root] : [],
          changes: req.changes,
          author: req.ops[0]?.actor ?? 'zz',
          message: formatOpMessage(req.summary, req.ops),
        },
        pending,
      ).catch(async (e: unknown) => {
        // A parent that is not the ref's value may not be a commit here at all: that is a
        // stale parent (RefCasError), as the early read reported it, not a missing revision.
        const current = await this.head(ref);
        throw current !== req.parent ? new RefCasError(ref, req.parent, current) : e;
      });
      // A turn of the event loop between building the commit (trees, hashes) and writing it
      // (deflate, pack, files): reads that arrived meanwhile are answered in between instead of
      // after both. Under a 32-writer storm, read p99 went from 4.6–6.8× idle to 3.5–4.2×
      // (with the one in Entity.commitGroup, 2.3–2.9×); throughput did not drop.
      await nextTurn();
      if (large) {
        // MBs not written for a parent that is stale already (the CAS still decides).
        const current = await this.head(ref);
        if (current !== req.parent) throw new RefCasError(ref, req.parent, current);
      }
      // The lock's owner token first: made after the pack's data syncs started, its rename
      // could wait in the kernel behind them (RefStore.reserveToken).
      if (!large) this.repo.refs.reserveToken();
      // Runs synchronously up to the data syncs, which then run while the lock is taken.
      written = write();
      written.catch(() => {}); // awaited below: not an unhandled rejection meanwhile
      // A commit that becomes a large pack (a Ladder build: MBs, tens of ms of I/O) is written
      // before the lock is taken, as before: held that long, the lock would fail native git's
      // writers of the same ref (update-ref, fetch: 100 ms lock timeout by default).
      if (large) await written;
      const objects = written;
      await this.repo.refs.cas(ref, req.parent, oid, async () => {
        await objects;
        await this.repo.objects.syncDirs(pending);
      });
      return oid;
    } finally {
      // The writes are over (a CAS that failed may have returned first) before their packs are
      // released: a pack still being written when release() ran would keep its .keep for good.
      if (written) await written.catch(() => {});
      // Small packs stay .kept until here, so no `git repack -a -d` drops them meanwhile.
      this.repo.objects.release(pending);
    }
  }

  /** The deterministic root of a singleton ref: empty tree, fixed identity, time 0, unsigned. */
  private async rootCommit(ref: string): Promise<string> {
    const writes = new ObjectBatch(this.repo.objects);
    writes.put('tree', Buffer.alloc(0));
    const zz: Signature = { name: 'zz', email: 'zz@localhost', time: 0 };
    const body = serializeCommit({
      tree: EMPTY_TREE_OID,
      parents: [],
      author: zz,
      committer: zz,
      message: `${ROOT_MESSAGE} ${ref}\n`,
    });
    const oid = writes.put('commit', body);
    await writes.done();
    return oid;
  }

  /**
   * Writes (objects only, no ref) an entity commit whose tree is the first parent's with
   * `changes` applied. Sync uses it for merge commits (two parents) and moves refs itself.
   */
  async writeCommit(req: EntityCommitRequest, pending?: PendingDirs): Promise<string> {
    const { oid, write } = await this.prepareCommit(req, pending);
    await write();
    return oid;
  }

  /**
   * writeCommit in two steps: the commit's id, every object hashed (the trees it needs read),
   * and `write`, which writes the objects (see ObjectWriter.writeMany for `pending`).
   */
  private async prepareCommit(
    req: EntityCommitRequest,
    pending?: PendingDirs,
  ): Promise<{ oid: string; write: () => Promise<void>; large: boolean }> {
    const base = req.parents[0];
    const baseTree = base ? await this.treeOf(base) : null;
    // Every path is checked before the first object is written: `..`, `.git` or an empty
    // component would make a tree that git's fsck rejects (and `.git` one unsafe to check out).
    const changes: Array<[string[], string | null]> = [...req.changes].map(([p, c]) => [
      assertTreePath(p).split('/'),
      c,
    ]);
    // Every object's id is known before any is written, so they are all written at once
    // (not tree level by tree level) and all of them before the ref moves.
    const writes = new ObjectBatch(this.repo.objects, pending);
    const have = req.reuse ? await this.treeOf(req.reuse) : null;
    const tree = (await this.treeWith(baseTree, changes, writes, have)) ?? EMPTY_TREE_OID;
    if (tree === EMPTY_TREE_OID) writes.put('tree', Buffer.alloc(0));
    const now = req.time ?? Math.floor(Date.now() / 1000);
    const author = actorSignature(req.author, now);
    const committer: Signature = { name: 'zz', email: 'zz@localhost', time: now };
    const commit: CommitData = {
      tree,
      parents: req.parents,
      author,
      committer,
      message: req.message,
    };
    // Signed with the key of the person the op acts for, when this process holds it.
    const key = (await this.signer?.(req.author)) ?? null;
    const body = key ? signCommitBody(serializeCommit(commit), key) : serializeCommit(commit);
    const oid = writes.put('commit', body);
    const write = async (): Promise<void> => {
      await writes.done();
      for (const [treeOid, entries] of writes.trees) this.remember(this.trees, treeOid, entries);
      this.remember(this.commitTrees, oid, tree);
    };
    return { oid, write, large: writes.large };
  }

  async writeCodeCommit(req: CodeCommitRequest): Promise<string> {
    const base = await readCommit(this.repo.catFile, req.base);
    if (!base) {
      throw new ZzError('invalid_argument', `base ${req.base} is not a commit in this repository`);
    }
    const baseTree = base.tree;
    const changes: Array<[string[], Buffer | string | null]> = [...req.changes].map(([p, c]) => [
      assertTreePath(p).split('/'),
      c,
    ]);
    const writes = new ObjectBatch(this.repo.objects);
    const tree = (await this.treeWith(baseTree, changes, writes)) ?? EMPTY_TREE_OID;
    if (tree === EMPTY_TREE_OID) writes.put('tree', Buffer.alloc(0));
    await writes.done();
    for (const [treeOid, entries] of writes.trees) this.remember(this.trees, treeOid, entries);
    const now = Math.floor(Date.now() / 1000);
    return this.repo.objects.commit({
      tree,
      parents: [base.oid],
      author: actorSignature(req.author, now),
      committer: { name: 'zz', email: 'zz@localhost', time: now },
      message: req.message,
    });
  }

  setRef(ref: string, expected: string | null, oid: string): Promise<void> {
    return this.repo.refs.cas(ref, expected, oid);
  }

  // Rewrites only the trees on the paths that changed: a write to one Ask of a Lane holding
  // thousands rewrites the blob, its fan-out tree, `asks/` and the root. Returns the new tree's
  // id at once (hashed here) and queues the object writes on `writes`. `have`: the tree at the
  // same path of a commit whose objects exist (EntityCommitRequest.reuse); what equals an
  // entry of it is not written again.
  private async treeWith(
    oid: string | null,
    changes: Array<[string[], Buffer | string | null]>,
    writes: ObjectBatch,
    have: string | null = null,
  ): Promise<string | null> {
    const image = oid ? this.images.get(oid) : undefined;
    const base = image ? image.list : oid ? await this.readTree(oid) : [];
    let byName: Map<string, TreeEntry> | null = null;
    const find = (name: string): TreeEntry | undefined => {
      if (image) {
        const i = image.index.get(name);
        return i === undefined ? undefined : base[i];
      }
      if (!byName) byName = new Map(base.map((e) => [e.name, e]));
      return byName.get(name);
    };
    const held = new Map<string, TreeEntry>();
    if (have) for (const e of await this.readTree(have)) held.set(e.name, e);
    // What changes at this level, by name (null: removed), in the order it is decided.
    const updates = new Map<string, TreeEntry | null>();
    const sub = new Map<string, Array<[string[], Buffer | string | null]>>();
    for (const [parts, content] of changes) {
      const [head, ...rest] = parts;
      if (head === undefined) continue;
      if (rest.length === 0) {
        if (content === null) updates.set(head, null);
        else {
          // A file keeps its executable bit when its content is replaced.
          const mode = find(head)?.mode === '100755' ? '100755' : '100644';
          const body = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
          const blob = writes.put('blob', body, held.get(head)?.oid);
          updates.set(head, { mode, name: head, oid: blob });
        }
      } else {
        let list = sub.get(head);
        if (!list) sub.set(head, (list = []));
        list.push([rest, content]);
      }
    }
    // A file written at a name replaces whatever was below it (`d` written, `d/x` deleted):
    // rewriting that subtree too would replace the new file by the subtree's remains.
    for (const [parts, content] of changes) {
      if (parts.length === 1 && content !== null) sub.delete(parts[0]!);
    }
    await Promise.all(
      [...sub].map(async ([name, list]) => {
        // After this level's own changes: `d` removed and `d/x` written is a new `d`.
        const existing = updates.has(name) ? (updates.get(name) ?? undefined) : find(name);
        const child = await this.treeWith(
          existing?.mode === '040000' ? existing.oid : null,
          list,
          writes,
          held.get(name)?.mode === '040000' ? held.get(name)!.oid : null,
        );
        updates.set(name, child === null ? null : { mode: '040000', name, oid: child });
      }),
    );
    let next: { list: TreeEntry[]; body: Buffer; oidAt: Uint32Array; index?: TreeImage['index'] };
    if (image && sameShape(image, updates)) {
      // Only ids change (an Ask's fan-out tree under `asks/`): the tree is the last one's
      // bytes with the new ids written in place, its names, order and offsets the same.
      const list = image.list.slice();
      const body = Buffer.from(image.body);
      for (const [name, e] of updates) {
        const i = image.index.get(name)!;
        list[i] = e!;
        body.write(e!.oid, image.oidAt[i]!, 'hex');
      }
      next = { list, body, oidAt: image.oidAt, index: image.index };
    } else {
      const entries = new Map(base.map((e) => [e.name, e]));
      for (const [name, e] of updates) {
        if (e === null) entries.delete(name);
        else entries.set(name, e);
      }
      if (entries.size === 0) return null;
      // Sorted as kept (the cache's next reader starts from it), not only as serialised.
      const list = sortTreeEntries([...entries.values()]);
      // Once: a lane's `asks/` tree has hundreds of entries.
      const { body, oidAt } = serializeSortedTree(list);
      next = { list, body, oidAt };
    }
    const treeOid = writes.put('tree', next.body, have);
    writes.trees.set(treeOid, next.list);
    if (next.list.length >= IMAGE_MIN_ENTRIES) {
      const index = next.index ?? new Map(next.list.map((e, i) => [e.name, i]));
      this.images.set(treeOid, { ...next, index });
    }
    return treeOid;
  }

  close(): void {
    this.repo.close();
  }
}

/**
 * A large tree as written: its entries in tree order, its bytes, where each entry's id sits in
 * them and each name's position. The next version of `asks/` (one fan-out id changed, on every
 * Lane op) is the same bytes with one id written over: rebuilding it from 256 entries (a Map,
 * the order checked twice, each entry's cached bytes looked up, all concatenated) was ~4% of a
 * durable write's CPU (issue 17).
 */
interface TreeImage {
  list: TreeEntry[];
  body: Buffer;
  oidAt: Uint32Array;
  /** Shared by versions with the same names. */
  index: Map<string, number>;
}

/** Trees with fewer entries are serialised afresh (cheap), not kept as images. */
const IMAGE_MIN_ENTRIES = 64;
/** Images kept: one a busy large tree; ~8 KiB each for a 256-entry `asks/`. */
const IMAGES_MAX = 32;

/** Whether every update keeps a name that `image` has, as the same kind: only ids change. */
function sameShape(image: TreeImage, updates: Map<string, TreeEntry | null>): boolean {
  for (const [name, e] of updates) {
    const i = image.index.get(name);
    if (e === null || i === undefined || image.list[i]!.mode !== e.mode) return false;
  }
  return true;
}

/**
 * The last IMAGES_MAX large trees written, by id, least recently used out first. An id names
 * its bytes, so an image never goes stale; a miss only costs the tree serialised afresh.
 */
class TreeImages {
  private readonly byOid = new Map<string, TreeImage>();

  get(oid: string): TreeImage | undefined {
    const hit = this.byOid.get(oid);
    if (hit) {
      this.byOid.delete(oid);
      this.byOid.set(oid, hit);
    }
    return hit;
  }

  set(oid: string, image: TreeImage): void {
    this.byOid.delete(oid);
    this.byOid.set(oid, image);
    if (this.byOid.size > IMAGES_MAX) this.byOid.delete(this.byOid.keys().next().value!);
  }
}

/**
 * The objects of one commit, hashed as the trees are built and written together by done(): one
 * call that sees the whole batch, so that a commit of many objects becomes one pack
 * (ObjectWriter.writeMany). Their trees are cached once all are on disk.
 */
class ObjectBatch {
  private readonly objects: HashedObject[] = [];
  readonly trees = new Map<string, TreeEntry[]>();

  /** With `pending`, the directories written into are left for the caller to sync. */
  constructor(
    private readonly writer: ObjectWriter,
    private readonly pending?: PendingDirs,
  ) {}

  private bytes = 0;

  /**
   * Hashes an object and queues it for writing, unless its id is `exists` (an object the
   * repository holds already); answers its id. The one hash of the object (writeMany takes it).
   */
  put(type: ObjectType, body: Buffer, exists?: string | null): string {
    const o = hashedObject(type, body);
    if (o.oid !== exists) {
      this.objects.push(o);
      this.bytes += body.length;
    }
    return o.oid;
  }

  /** Written as a pack left for gc (ObjectWriter.isLarge). */
  get large(): boolean {
    return this.writer.isLarge(this.objects.length, this.bytes);
  }

  async done(): Promise<void> {
    await this.writer.writeMany(this.objects, this.pending);
  }
}

/** Refs of one-per-repository entities, which start from a deterministic root commit. */
export const SINGLETON_REFS: ReadonlySet<string> = new Set(['refs/zz/config', 'refs/zz/ladder']);
/** The first line of a root commit's message (sync's validate recognises it). */
export const ROOT_MESSAGE = 'zz root';

export interface EntityCommitRequest {
  parents: string[];
  changes: FileChanges;
  /** Whose op this is (the author line); the committer is always zz. */
  author: string;
  message: string;
  /** Unix seconds for author and committer; now when absent. */
  time?: number;
  /**
   * A commit this repository holds whose tree's objects need not be written again: a blob or
   * subtree of the new tree that equals the one at the same path there is reused (sync's merge
   * passes the local tip, which already holds most of what the merge tree gains).
   */
  reuse?: string;
}

export function actorSignature(actor: string, time: number): Signature {
  const clean = actor.replace(/[<>\n\r\0]/g, '');
  const email = clean.replace(/\[.*\]$/, '');
  return { name: clean, email: email.includes('@') ? email : `${email}@zz.local`, time };
}
