import fs, { promises as fsp } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { ZzError } from '../errors.js';
import { BlankFiles, blanksDir, LINK_UNSUPPORTED, ownedName } from './blank-files.js';
import {
  closeQuietly,
  fdatasyncFd,
  removeEmptyDirs,
  settleAll,
  unlinkIfThere,
  unlinkLater,
  unlinkQuietly,
} from './fs-calls.js';
import { removeIfStale, sweepOrphanTokens } from './lock-tokens.js';
import { looseExists, looseOid, readLoose } from './loose-refs.js';
import { PackedRefs } from './packed-refs.js';
import { assertRefName, OID_RE } from './ref-names.js';

// Refs move only by compare-and-swap under git's own lock protocol (lockfile.c):
// create `<ref>.lock` exclusively, check the current value (loose file, else packed-refs),
// write the new value, fdatasync, rename over the ref. Native git honours the same lock, so
// `git fetch`, `git update-ref`, `git pack-refs` and `git gc` can run beside us.
//
// Stale locks: git never removes a lock it did not take, and neither do we unless we can
// prove it is ours. The proof must exist for as long as the lock does, so the lock is never
// created bare: we first create an owner token, <gitdir>/zz/locks/<host>.<pid>.s<start>.<nonce>, and
// then take the lock by hard-linking the token to `<ref>.lock` (link() fails with EEXIST just
// as git's O_EXCL open does, so the two protocols exclude each other). While the token exists
// it pins the inode, so a lock with the token's inode is ours. A lock whose token names a dead
// process on this host is a crash leftover: a recoverer claims it by renaming the token to a
// token of its own (only one recoverer can win that rename), then removes the lock. Any other
// lock is treated as live and, past the timeout, reported with its path so a person can decide.
// (An earlier version wrote a separate owner marker after creating the lock and removed it
// before the final rename; a process killed in either window left a lock nobody could prove
// stale.) Where hard links are not supported we fall back to a bare O_EXCL lock, like git.
// The token is not created on the write's path but renamed into zz/locks/ from a blank made
// ahead, and the lock is renamed over the ref while the ref's old file has a second name
// (replace()): a creation and a freed data block were ~1 ms of a durable write on the VMs'
// ext4 (blank-files.ts).
//
// The system calls on a 41-byte ref and its lock are synchronous, except the fsync: each costs
// a few microseconds, where an async call costs a thread-pool round trip (~30-100 µs on the
// 2-vCPU VM), and a write makes about a dozen of them. Waiting for a busy lock stays async.

export class RefCasError extends ZzError {
  constructor(
    readonly ref: string,
    readonly expected: string | null,
    readonly actual: string | null,
  ) {
    super(
      'revision_mismatch',
      `${ref} is at ${actual ?? '(absent)'}, expected ${expected ?? '(absent)'}`,
      {
        current_revision: actual,
      },
    );
  }
}

export interface RefStoreOptions {
  lockTimeoutMs?: number;
  fsync?: boolean;
}

/** Locks of one casMany open (written, synced) at once: the process's fd limit is ~1,024. */
const WRITE_BATCH = 128;

/** Names kept in RefStore's packedOnly hint (a repository's refs; past it, it starts over). */
const PACKED_ONLY_MAX = 4096;

export class RefStore {
  private readonly packed: PackedRefs;
  private readonly lockTimeoutMs: number;
  private readonly fsync: boolean;
  private linkable = true;
  private sweptTokens = false;

  /** Owner tokens made ahead (named like any token of ours: the sweep knows them). */
  private readonly tokenBlanks: BlankFiles;

  constructor(
    readonly gitdir: string,
    opts: RefStoreOptions = {},
  ) {
    this.refBase = join(gitdir, sep);
    this.packed = new PackedRefs(gitdir);
    this.lockDir = join(gitdir, 'zz', 'locks');
    this.blanks = blanksDir(gitdir);
    this.lockTimeoutMs = opts.lockTimeoutMs ?? 10_000;
    this.fsync = opts.fsync ?? true;
    this.tokenBlanks = new BlankFiles(this.blanks, {
      spare: 2,
      mode: 0o644,
      sameDeviceAs: gitdir,
    });
  }

  /** Removes the spare tokens (the repository's close). */
  close(): void {
    this.tokenBlanks.close();
    const r = this.reserved;
    this.reserved = null;
    if (r) {
      closeQuietly(r.fd);
      unlinkQuietly(r.token);
    }
  }

  /** A token made by reserveToken() for the next lock this store takes. */
  private reserved: { fd: number; token: string } | null = null;

  /**
   * Makes the owner token of the next lock now (see acquire), for a caller about to start
   * syncs that the token's making would wait behind. GitStore.commit calls it right before it
   * writes a pack: that pack's files are blanks made in zz/blanks/, and on ext4 without a
   * journal the first fdatasync of a new file also writes its directory's blocks out
   * (ext4_sync_parent); the token's rename out of the same zz/blanks/, made after it, waited
   * for that write in the kernel (0.3–1 ms, on ~5% of durable single writes: seen with `perf
   * record -e sched:sched_switch`, issue 17). Made first, it waits for nothing. A reserved
   * token is a token with no lock linked to it yet, as one whose link failed: it proves
   * nothing, the next acquire() (or close()) takes it, and if the process dies first the sweep
   * of dead processes' tokens removes it.
   */
  reserveToken(): void {
    if (this.reserved || !this.linkable) return;
    try {
      this.reserved = this.newToken();
    } catch {
      /* acquire() makes one, and reports what fails then */
    }
  }

  // Paths built once, or by concatenation on a write's path (a few path.join calls a write
  // were ~1% of its CPU). A ref's name is checked (assertRefName) before it names a file, so
  // gitdir + the name is what join would make.
  private readonly refBase: string;
  private readonly lockDir: string;
  private readonly blanks: string;

  private refPath(ref: string): string {
    return this.refBase + (sep === '/' ? ref : ref.replaceAll('/', sep));
  }

  /** Current value of a ref: the loose file, else packed-refs; null when absent. */
  read(ref: string): Promise<string | null> {
    try {
      return Promise.resolve(this.readRef(ref, false));
    } catch (e) {
      return Promise.reject(e as Error);
    }
  }

  // Refs last found in packed-refs only. After a `git gc` (or `pack-refs`) every ref is
  // packed, and a ref that nothing writes stays so (refs/zz/config is read by every request on
  // a Lane): reading its missing loose file made the open throw on every read, an Error
  // with its stack (~7 µs on this VM quiet, against ~0.4 µs for a stat that answers undefined,
  // and garbage besides). Such a ref is looked for with that stat first. Only a hint: the
  // loose file is still looked for on every read, so a ref written loose again is read from
  // it at once. Bounded: emptied when it passes PACKED_ONLY_MAX names.
  private readonly packedOnly = new Set<string>();

  private readRef(ref: string, fresh: boolean): string | null {
    assertRefName(ref);
    const path = this.refPath(ref);
    if (!this.packedOnly.has(ref) || looseExists(path)) {
      // null: no loose file, or a directory of refs in its place (refs/zz/lanes/x/y makes no
      // ref refs/zz/lanes/x loose): no loose ref, as git reads it; its packed value, if any.
      const text = readLoose(path);
      if (text !== null) {
        const v = text.trim();
        this.packedOnly.delete(ref);
        if (OID_RE.test(v)) return v;
        if (v.startsWith('ref: ')) {
          throw new ZzError('invalid_argument', `${ref} is a symbolic ref; zz refs must be direct`);
        }
        // Git renames complete files into place, so a malformed loose ref is damage, not a race.
        throw new ZzError('git_failed', `${ref} holds an unreadable value`);
      }
      if (this.packedOnly.size >= PACKED_ONLY_MAX) this.packedOnly.clear();
      this.packedOnly.add(ref);
    }
    return this.packed.read(fresh).get(ref) ?? null;
  }

  /** Every ref under a prefix (e.g. `refs/zz/lanes/`), loose and packed. */
  list(prefix: string): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    try {
      for (const [r, oid] of this.packed.read()) if (r.startsWith(prefix)) out.set(r, oid);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    this.walkLoose(prefix, (name, path) => {
      const v = looseOid(path);
      if (v !== null) out.set(name, v);
    });
    return Promise.resolve(out);
  }

  /**
   * The names list(prefix) gives, sorted, without their values: a ref counts when packed-refs
   * holds it or its loose file (a regular file, not `*.lock`) holds an object id. A loose file
   * whose name packed-refs also holds is listed without being opened (list() lists it, with
   * the packed value when the file is unreadable); only the loose-only ones are opened, each
   * read into one small buffer. The hazard in a cheaper listing: a directory's entries alone
   * (readdir) would count a stray or damaged file, whose read by name then fails; git's own
   * for-each-ref opens every loose ref too.
   */
  refNames(prefix: string): Promise<string[]> {
    const out = new Set<string>();
    try {
      for (const r of this.packed.read().keys()) if (r.startsWith(prefix)) out.add(r);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    this.walkLoose(prefix, (name, path) => {
      if (!out.has(name) && looseOid(path) !== null) out.add(name);
    });
    return Promise.resolve([...out].sort());
  }

  /** Calls `visit` for each loose file under `prefix` that may be a ref (not a lock). */
  private walkLoose(prefix: string, visit: (name: string, path: string) => void): void {
    const walk = (dir: string, rel: string): void => {
      let entries;
      try {
        entries = fs.readdirSync(dir, { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries) {
        const name = rel + e.name;
        if (e.isDirectory()) walk(join(dir, e.name), name + '/');
        else if (e.isFile() && !e.name.endsWith('.lock')) visit(name, join(dir, e.name));
      }
    };
    const base = prefix.endsWith('/') ? prefix.slice(0, -1) : dirname(prefix);
    walk(this.refPath(base), base + '/');
  }

  /**
   * The names one level below `prefix` (ending in "/") under which, or as which, a ref lies:
   * one readdir of the loose directory plus packed-refs. A name may hold no ref (git leaves
   * empty directories after a delete): a caller reads the ref it wants and may meet null.
   */
  names(prefix: string): Promise<string[]> {
    const out = new Set<string>();
    try {
      for (const r of this.packed.read().keys()) {
        if (r.startsWith(prefix)) out.add(r.slice(prefix.length).split('/')[0]!);
      }
    } catch (e) {
      return Promise.reject(e as Error);
    }
    try {
      for (const e of fs.readdirSync(this.refPath(prefix.slice(0, -1)), { withFileTypes: true })) {
        if (e.isDirectory() || (e.isFile() && !e.name.endsWith('.lock'))) out.add(e.name);
      }
    } catch {
      /* no loose refs under prefix */
    }
    return Promise.resolve([...out].sort());
  }

  /**
   * Moves `ref` from `expected` (null = must not exist) to `next`. Throws RefCasError when the
   * ref holds anything else, ref_locked when another process holds the lock past the timeout.
   *
   * `durable`, when given, runs once the lock is held, the current value checked and the new
   * one written, beside the lock's own sync, and must resolve before the ref moves: the caller
   * writes what the new value names there and makes it durable (GitStore.commit: the objects,
   * their data syncs, then their directories' fsyncs). So the lock's sync costs no wait of
   * its own (it overlaps the objects' data syncs), a CAS that fails costs no object written,
   * and the lock is held for the objects' writes too (~1-2 ms; git's writers wait up to 1 s).
   */
  async cas(
    ref: string,
    expected: string | null,
    next: string,
    durable?: () => Promise<void>,
  ): Promise<void> {
    assertRefName(ref);
    if (!OID_RE.test(next)) throw new ZzError('internal', `refusing to write non-oid to ${ref}`);
    const path = this.refPath(ref);
    const lock = path + '.lock';
    const held = await this.acquire(ref, lock);
    let renamed = false;
    try {
      const current = this.readRef(ref, true);
      if (current !== expected) throw new RefCasError(ref, expected, current);
      fs.writeSync(held.fd, next + '\n');
      // fdatasync, not fsync: what the rename needs durable first is the lock's content and
      // size (a ref renamed over an empty or short file would be torn after a power cut);
      // timestamps need not be. The lock's own name needs no sync: it is renamed away.
      // settleAll: when `durable` fails first, the lock's fdatasync is still in the pool, and
      // the finally below would close its fd under it.
      await settleAll([this.fsync ? fdatasyncFd(held.fd) : undefined, durable?.()]);
      fs.closeSync(held.fd);
      held.fd = -1;
      this.replace(lock, path, current);
      renamed = true;
    } finally {
      if (held.fd >= 0) closeQuietly(held.fd);
      // The lock goes before the token: a lock must never outlive the proof that it is ours.
      if (!renamed) unlinkIfThere(lock);
      // Once the lock is the ref, the token proves nothing and is only a second name for the
      // ref's inode. Removed here, synchronously: that frees no data block (the inode lives on
      // as the ref), so it costs what a rename does (~10 µs), where a round trip through
      // libuv's pool cost the loop about as much again and woke a pool thread (issue 17:
      // ~11 pool round trips per durable write). Hazard: a native writer that replaced the
      // ref in the microseconds since our rename makes this the inode's last name, and its
      // removal then frees the block on the event loop (slow on a disk with synchronous
      // discard, never wrong). Killed first, the token stays linked to the ref and is swept
      // once the ref is rewritten (sweepOrphanTokens), as before. Quietly: after the rename
      // the write has happened, and a failure here (EIO, a locks directory made read-only)
      // thrown out of cas() answered a moved ref as a failed write, whose ops the caller then
      // retried; before it, it would replace the error that counts. A token left is the
      // crash's case above (the unlink in the pool ignored its errors too).
      if (held.token) unlinkQuietly(held.token);
    }
  }

  /**
   * Moves several refs together, as git's `update-ref --stdin` transaction does (sync moves its
   * local refs this way): every lock is taken, in name order so that two transactions never
   * wait on each other in a cycle, and every current value checked before any ref moves; on a
   * mismatch none moves (RefCasError). Then every lock is written and fsynced (a batch at a
   * time, reopened by name: a lock held is a name, not an open fd), and renamed over
   * its ref. As in git, the renames are separate steps: a reader may see some refs moved before
   * the others, and a crash between them leaves some moved (each to a value whose objects are
   * on disk). Deletions are not handled (a packed ref's deletion rewrites packed-refs).
   */
  async casMany(
    updates: ReadonlyArray<{ ref: string; expected: string | null; next: string }>,
  ): Promise<void> {
    const sorted = [...updates].sort((a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0));
    sorted.forEach((u, i) => {
      assertRefName(u.ref);
      if (!OID_RE.test(u.next))
        throw new ZzError('internal', `refusing to write non-oid to ${u.ref}`);
      if (i > 0 && sorted[i - 1]!.ref === u.ref) {
        throw new ZzError('internal', `${u.ref} is named twice in one ref transaction`);
      }
    });
    const held: Array<{ fd: number; token: string | null; lock: string; path: string }> = [];
    let renamed = 0;
    try {
      for (const u of sorted) {
        const path = this.refPath(u.ref);
        const lock = path + '.lock';
        const h = { ...(await this.acquire(u.ref, lock)), lock, path };
        held.push(h);
        // The lock is held by its name, not its fd: one fd a ref held open until the commit
        // made a transaction of 20,000 refs (pushed by anyone into a remote) fail with EMFILE
        // under the usual limit of 1,024, every sync round (hostile review H4).
        closeQuietly(h.fd);
        h.fd = -1;
      }
      for (const u of sorted) {
        const current = this.readRef(u.ref, true);
        if (current !== u.expected) throw new RefCasError(u.ref, u.expected, current);
      }
      // Written and synced a batch at a time, each lock opened again by name (ours: nobody
      // removes a live process's lock), so that at most WRITE_BATCH fds are open at once.
      // settleAll, as in cas(): no lock's fd is closed while its sync is still in the pool.
      for (let i = 0; i < held.length; i += WRITE_BATCH) {
        const batch = held.slice(i, i + WRITE_BATCH);
        try {
          batch.forEach((h, j) => {
            h.fd = fs.openSync(h.lock, 'r+');
            fs.writeSync(h.fd, sorted[i + j]!.next + '\n', 0);
          });
          if (this.fsync) await settleAll(batch.map((h) => fdatasyncFd(h.fd)));
        } finally {
          // Quietly: a close that threw would leave h.fd set, and the clean-up below would
          // close that number again, by then perhaps another file's.
          for (const h of batch) {
            if (h.fd >= 0) closeQuietly(h.fd);
            h.fd = -1;
          }
        }
      }
      held.forEach((h, i) => {
        this.replace(h.lock, h.path, sorted[i]!.expected);
        renamed++;
      });
    } finally {
      held.forEach((h, i) => {
        if (h.fd >= 0) closeQuietly(h.fd);
        // A lock must never outlive the proof that it is ours (see cas): one that cannot be
        // removed (EIO) keeps its token. Each lock on its own: the first such failure thrown
        // out of this loop left every lock after it held by this live process (ref_locked for
        // zz and git until a restart) and replaced the transaction's own error, in flight
        // whenever a lock is still to remove here (the renames all done, none is).
        if (i >= renamed) {
          try {
            unlinkIfThere(h.lock);
          } catch {
            return;
          }
        }
        if (h.token) unlinkQuietly(h.token); // as in cas: a failure here is not the write's
      });
    }
  }

  /**
   * Renames the lock over the ref, the ref's old file kept alive meanwhile by a second name
   * (when there is a loose one: `previous` set), removed after in the pool. Renaming over
   * the last name of a file frees its data block, and on an ext4 mounted with `discard` and
   * no journal (this project's VMs) a free is a synchronous discard: 0.3–0.8 ms on the event
   * loop, a third of a durable write, where the link costs ~12 µs and the rename then the
   * same. The second name is in zz/blanks/: a process killed before it goes leaves it to
   * the sweep of dead processes' blanks (blank-files.ts).
   */
  private replace(lock: string, path: string, previous: string | null): void {
    let hold: string | null = null;
    if (previous !== null && this.linkable) {
      hold = `${this.blanks}${sep}${ownedName()}.old`;
      try {
        fs.linkSync(path, hold);
      } catch {
        hold = null; // packed only (no loose file), or no links here: rename as is
      }
    }
    try {
      try {
        fs.renameSync(lock, path);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'EISDIR' && code !== 'ENOTEMPTY' && code !== 'EEXIST') throw e;
        // A directory in the ref's place that holds no ref (left by refs deleted, or made by
        // hand) is removed and the ref written, as git's update-ref does; one holding refs is
        // refused below.
        if (!removeEmptyDirs(path)) throw e;
        fs.renameSync(lock, path);
      }
    } catch (e) {
      // A directory of refs where this ref's file would go (git: "there is a non-empty
      // directory blocking reference"): the caller's to resolve, not an internal fault.
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'EISDIR' && code !== 'ENOTEMPTY' && code !== 'EEXIST') throw e;
      const ref = path.slice(this.refBase.length).split(sep).join('/');
      throw new ZzError(
        'conflict',
        `${ref} cannot be written: refs named ${ref}/… are in its place (a ref cannot also be a directory of refs); delete them with git update-ref -d, or use another name`,
      );
    } finally {
      if (hold) unlinkLater(hold);
    }
  }

  /**
   * Our owner token (an empty file whose name says who we are) and its fd: a blank made ahead
   * (blank-files.ts: creating it here was a fifth of a durable write), else created now.
   */
  private newToken(): { fd: number; token: string } {
    const token = this.lockDir + sep + ownedName();
    const blank = this.tokenBlanks.take();
    if (blank) {
      // Named a token by a rename into zz/locks/ (the blank is ours alone until then).
      for (let i = 0; ; i++) {
        try {
          fs.renameSync(blank.path, token);
          return { fd: blank.fd, token };
        } catch (e) {
          if (
            (e as NodeJS.ErrnoException).code === 'ENOENT' &&
            i === 0 &&
            fs.existsSync(blank.path)
          ) {
            fs.mkdirSync(this.lockDir, { recursive: true });
            continue;
          }
          closeQuietly(blank.fd);
          unlinkQuietly(blank.path);
          break; // created below, as without blanks
        }
      }
    }
    for (let i = 0; ; i++) {
      try {
        return { fd: fs.openSync(token, 'wx', 0o644), token };
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || i > 0) throw e;
        fs.mkdirSync(this.lockDir, { recursive: true });
      }
    }
  }

  private async acquire(ref: string, lock: string): Promise<{ fd: number; token: string | null }> {
    const deadline = Date.now() + this.lockTimeoutMs;
    let delay = 1;
    let waits = 0;
    let missingDir = 0;
    let linkable = this.linkable;
    let held: { fd: number; token: string } | null = null;
    if (linkable) {
      held = this.reserved ?? this.newToken();
      this.reserved = null;
      if (!this.sweptTokens) {
        this.sweptTokens = true;
        await sweepOrphanTokens(this.lockDir, this.refPath(ref));
      }
    }
    try {
      for (;;) {
        try {
          if (held) {
            fs.linkSync(held.token, lock);
            return held;
          }
          return { fd: fs.openSync(lock, 'wx', 0o644), token: null };
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          if (code === 'ENOENT' && missingDir++ < 20) {
            // The ref's directory is missing, or `git pack-refs` pruned it (or a parent) as
            // empty a moment after we made it; git retries the same way (raceproof_create_file).
            try {
              fs.mkdirSync(dirname(lock), { recursive: true });
            } catch (m) {
              if ((m as NodeJS.ErrnoException).code !== 'ENOENT') throw m;
            }
            continue;
          }
          if (held && LINK_UNSUPPORTED.has(code ?? '')) {
            this.linkable = linkable = false;
            closeQuietly(held.fd);
            unlinkIfThere(held.token);
            held = null;
            continue;
          }
          if (code !== 'EEXIST') throw e;
        }
        if (linkable && (await removeIfStale(this.lockDir, lock))) continue;
        if (Date.now() > deadline) {
          const age = await fsp
            .stat(lock)
            .then((s) => Math.round((Date.now() - s.mtimeMs) / 1000))
            .catch(() => 0);
          throw new ZzError(
            'ref_locked',
            `${ref} is locked by another process (${lock} exists, ${age}s old); if no git or zz process is running, remove that file`,
            { lock },
          );
        }
        await new Promise((r) => setTimeout(r, delay));
        // Most holders are brief (git update-ref, the prune step of `git pack-refs`, another
        // zz write: ~1 ms), so poll at 1 ms for a while before backing off: sleeping 8-16 ms
        // behind a 1 ms prune let a native writer slip in and fail our CAS over and over.
        if (++waits > 10) delay = Math.min(delay * 2, 50);
      }
    } catch (e) {
      if (held) {
        closeQuietly(held.fd);
        unlinkIfThere(held.token);
      }
      throw e;
    }
  }
}
