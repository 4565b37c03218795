import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, promises as fsp } from 'node:fs';
import { join } from 'node:path';
import * as zlib from 'node:zlib';
import { settleAll } from './fs-calls.js';

// Writes a set of objects as one packfile plus its index, the way `git index-pack` leaves a
// fetched pack: a commit of a few thousand objects (a full Ladder build) costs two files and
// two fsyncs instead of a few thousand loose files, their fsyncs and a flood in objects/??/.
//
// Format (git's Documentation/gitformat-pack.adoc, SHA-1 repositories only):
// - pack: "PACK", version 2, object count (all big-endian u32); per object an undeltified
//   entry: a size varint whose first byte holds the 3-bit type (commit 1, tree 2, blob 3) and
//   the low 4 bits of the size (later bytes 7 bits each, least significant first), then the
//   zlib stream of the body (no "type size\0" header, unlike a loose object); trailer: the SHA-1
//   of everything before it.
// - idx v2: "\377tOc", version 2, a 256-entry fan-out (count of oids whose first byte is ≤ i),
//   the sorted oids, the CRC32 (zlib's) of each packed entry (header + compressed bytes), u32
//   offsets whose MSB marks an index into the u64 table that follows (packs past 2 GiB), the
//   pack's checksum, and the SHA-1 of the index itself.
// - name: pack-<pack checksum>.{pack,idx}, as current git names packs.
//
// Order, as git does it (pack-write.c stage_tmp_packfiles then rename_tmp_packfile_idx,
// "tb/pack-finalize-ordering", git 2.34): both files are written as tmp_* files and fsynced,
// then the .pack is renamed into place, the .idx last, then objects/pack/ is fsynced. Git finds
// packs by listing *.idx files (packfile.c add_packed_git is handed an .idx path and looks for
// the .pack beside it), so a pack becomes visible at the moment its .idx appears, and it must
// be complete then: a reader must never see an index whose pack is missing or partial. A crash
// between the two renames leaves a .pack without .idx, which every git ignores (count-objects
// calls it garbage) exactly as it would after git's own crash at that point; a crash earlier
// leaves tmp_* files, which `git gc` (prune) removes once they are old.
//
// All of it completes before writePack resolves, and so before any ref may point at its objects
// (the caller moves refs only after). A git process that is already running (our long-lived
// `git cat-file --batch`) re-scans objects/pack when it misses an object, so it sees the new
// pack without a restart (test/git/pack-writer.test.ts proves it).
//
// Concurrent `git gc`: repack deletes only the packs it listed when it started, and objects of
// a pack written since are in no such list; if it did list ours before our ref moved, its
// unreachable objects are kept (loosened with the pack's fresh mtime, or put in a cruft pack),
// never pruned. Two windows are not safe:
// - repack lists packs by their .pack files (collect_pack_filenames), while its pack-objects
//   loads them by their .idx. A .pack listed before its .idx appeared is deleted when repack
//   ends, and its objects were never seen, so not even -A (gc --auto) loosens them: lost
//   (found after a long load test: a Lane's commit gone after a gc --auto; a lone .pack
//   deleted by `git repack -a -d` is reproduced in test/git/pack-writer.test.ts).
// - A manual `git repack -a -d` (without -A: it drops unreachable objects of the packs it
//   replaces) that lists our pack between its appearing and our ref moving drops its objects.
// So a pack written for a ref update (`holdKeep`: a Ladder build, a large Lane commit, a sync
// merge) carries a .keep from before its .pack appears until the caller's ref has moved, as
// `git fetch` guards the same window (index-pack --keep); small-packs.ts holds and releases
// it (pack-keeps.ts sweeps the .keep a crashed process left). Hazard: a pack written without `holdKeep` (a
// changeset's code commit, GitStore.writeCodeCommit, whose ref the caller moves later) still
// has both windows; the first lasts from one rename to the next.
// An object already in the repository is written again here, like a loose rewrite freshens its
// mtime (see ObjectWriter.write).

/** objects.ts's ObjectType, spelled out here: objects.ts imports this module, not the reverse. */
export type PackObjectType = 'blob' | 'tree' | 'commit';

export interface PackEntry {
  oid: string;
  type: PackObjectType;
  /** The object's content, without the loose "type size\0" header. */
  body: Buffer;
}

export interface WrittenPack {
  /** The pack's checksum, hex: the files are objects/pack/pack-<name>.{pack,idx}. */
  name: string;
  /** The .keep made with `holdKeep` (null: none asked, or one was there already). */
  keep: string | null;
  /** Objects in the pack (duplicates in the input are written once). */
  count: number;
  bytes: number;
}

const TYPE_CODE: Record<PackObjectType, number> = { commit: 1, tree: 2, blob: 3 };

/** zlib level for pack entries: the Ladder's rung blobs are small JSON, speed matters more. */
const LEVEL = 1;
// Trees are stored (zlib's level 0: the bytes as they are, in a valid zlib stream). A tree is
// mostly 20-byte binary oids, which do not compress: a Lane's `asks/` tree of 256 fan-out
// entries (7.4 KiB) came to 82% of its size at level 1, for ~0.4 ms of deflate on the loaded
// 2-vCPU VM (~10x level 0's time) on every Lane op, the largest CPU cost of a durable write
// after the fsyncs. The price: such an entry is ~20% larger until git's gc repacks it (gc
// tries deltas for every entry it reuses, and a tree's versions delta well).
// The stored stream is written here (storedZlib), not by zlib: each zlib call builds a stream
// object and a compressor state (~10 µs, most of it for a tree of a few entries), and a Lane
// op writes three trees (issue 17: ~2% of a durable write's CPU).
// Blobs and commits up to STORED_MAX bytes are stored too (a Lane op's Ask and its one-op
// commit). At that size zlib's fixed cost is the whole cost: each deflateSync builds a stream
// object (a Transform) and a compressor state, ~10 µs per object in a tight loop and 2-4x that
// in the daemon between requests, where level 1 saves 60-440 bytes (an Ask of 253 bytes: 193
// deflated; a one-op commit of 663: 223). Larger bodies (a group commit's message of many
// ops, a Ladder rung) are deflated as before. Stored entries delta like any other when git's
// repack or gc searches for deltas.
const STORED_MAX = 1024;
/**
 * The zlib window for a body of `size` bytes: no larger than the body needs. zlib allocates
 * state in proportion to the window (256 KiB at the default 15 bits), for every one of a few
 * thousand small rung blobs; sized windows halved the deflate time of a Ladder build's pack
 * (a 2,400-object micro-benchmark: 135 → 64 ms under load). Any inflater reads such a stream
 * (the window size is in its header, and git inflates with the largest window).
 */
function windowBitsFor(size: number): number {
  return Math.min(15, Math.max(9, Math.ceil(Math.log2(size + 1))));
}

/** Buffers handed to one write system call (below any IOV_MAX). */
const WRITE_CHUNK = 512;

const TMP_PREFIX = randomBytes(4).toString('hex');
let tmpCounter = 0;

/** A fresh suffix for tmp_pack_* / tmp_idx_* names: this process's, never reused. */
export function tmpTag(): string {
  return `zz_${process.pid}_${TMP_PREFIX}${(tmpCounter++).toString(36)}`;
}

/** A pack entry's header: type and size, as a little-endian base-128 varint. */
export function entryHeader(type: PackObjectType, size: number): Buffer {
  const bytes: number[] = [];
  let c = (TYPE_CODE[type] << 4) | (size & 0x0f);
  // Sizes past 2^31 are written with division, not shifts, which would wrap at 32 bits.
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    bytes.push(c | 0x80);
    c = rest & 0x7f;
    rest = Math.floor(rest / 128);
  }
  bytes.push(c);
  return Buffer.from(bytes);
}

/** One packed entry, ready to be placed in any pack: its header and zlib stream, and their CRC. */
export interface EncodedEntry {
  oid: string;
  /** The entry's type-and-size header followed by the deflated body. */
  data: Buffer;
  crc: number;
}

/** The encoded pack and index, before anything touches the disk. */
export interface EncodedPack {
  /** The pack file's contents, in order (header, entries, trailer). */
  pack: Buffer[];
  idx: Buffer;
  name: string;
  count: number;
  bytes: number;
  /** The entries in pack order, one per oid: another pack can be assembled from them. */
  entries: EncodedEntry[];
}

export function encodeEntry(e: PackEntry): EncodedEntry {
  const head = entryHeader(e.type, e.body.length);
  if (e.type === 'tree' || e.body.length <= STORED_MAX) {
    const data = storedZlib(e.body, head);
    return { oid: e.oid, data, crc: crc32(data) };
  }
  const data = zlib.deflateSync(e.body, { level: LEVEL, windowBits: windowBitsFor(e.body.length) });
  return { oid: e.oid, data: Buffer.concat([head, data]), crc: crc32(data, crc32(head)) };
}

/** Bytes in one stored deflate block at most (its length field is 16 bits). */
const STORED_BLOCK = 0xffff;

/**
 * `prefix` followed by a zlib stream (RFC 1950) of `body` in stored deflate blocks (RFC 1951,
 * BTYPE 00): what zlib's level 0 writes, byte for byte in the blocks and checksum (the header
 * says a 32 KiB window, which any inflater accepts).
 */
export function storedZlib(body: Buffer, prefix: Buffer = EMPTY): Buffer {
  const blocks = Math.max(1, Math.ceil(body.length / STORED_BLOCK));
  const out = Buffer.allocUnsafe(prefix.length + 2 + 5 * blocks + body.length + 4);
  prefix.copy(out, 0);
  let o = prefix.length;
  out[o++] = 0x78; // deflate, 32 KiB window
  out[o++] = 0x01; // no dictionary, fastest; (0x78 << 8 | 0x01) % 31 === 0
  for (let k = 0; k < blocks; k++) {
    const start = k * STORED_BLOCK;
    const len = Math.min(STORED_BLOCK, body.length - start);
    out[o] = k === blocks - 1 ? 1 : 0; // BFINAL on the last; BTYPE 00; the rest of the byte 0
    out.writeUInt16LE(len, o + 1);
    out.writeUInt16LE(len ^ 0xffff, o + 3);
    o += 5;
    o += body.copy(out, o, start, start + len);
  }
  out.writeUInt32BE(adler32(body), o);
  return out;
}

const EMPTY = Buffer.alloc(0);

/** zlib's Adler-32 of `buf`. */
export function adler32(buf: Uint8Array): number {
  let a = 1;
  let b = 0;
  // The modulo once per 5552 bytes (zlib's NMAX: b stays below 2^32; a Number is exact far
  // beyond that).
  for (let i = 0; i < buf.length;) {
    const end = Math.min(i + 5552, buf.length);
    for (; i < end; i++) {
      a += buf[i]!;
      b += a;
    }
    a %= 65521;
    b %= 65521;
  }
  return b * 65536 + a;
}

export function encodePack(objects: readonly PackEntry[]): EncodedPack {
  // One entry per oid: an index with a duplicate name is corrupt.
  const unique = new Map<string, PackEntry>();
  for (const o of objects) {
    if (!/^[0-9a-f]{40}$/.test(o.oid)) throw new Error(`pack: not a SHA-1 object id: ${o.oid}`);
    if (!unique.has(o.oid)) unique.set(o.oid, o);
  }
  return assemblePack([...unique.values()].map(encodeEntry));
}

/**
 * A pack of entries already encoded (by encodeEntry, or taken from other packs: an entry does
 * not depend on where it sits, so merging packs costs no inflate or deflate). Duplicate oids
 * are placed once.
 */
export function assemblePack(input: readonly EncodedEntry[]): EncodedPack {
  const seen = new Set<string>();
  const entries = input.filter((e) => !seen.has(e.oid) && (seen.add(e.oid), true));
  const header = Buffer.alloc(12);
  header.write('PACK', 0, 'latin1');
  header.writeUInt32BE(2, 4);
  header.writeUInt32BE(entries.length, 8);
  const pack: Buffer[] = [header];
  const sum = createHash('sha1').update(header);
  const index: Array<{ oid: string; offset: number; crc: number }> = [];
  let offset = header.length;
  for (const e of entries) {
    index.push({ oid: e.oid, offset, crc: e.crc });
    pack.push(e.data);
    sum.update(e.data);
    offset += e.data.length;
  }
  const checksum = sum.digest();
  pack.push(checksum);
  const idx = encodeIndex(index, checksum);
  return {
    pack,
    idx,
    name: checksum.toString('hex'),
    count: entries.length,
    bytes: offset + checksum.length,
    entries,
  };
}

export function encodeIndex(
  index: Array<{ oid: string; offset: number; crc: number }>,
  packChecksum: Buffer,
): Buffer {
  // Lowercase hex sorts as the bytes do.
  index.sort((a, b) => (a.oid < b.oid ? -1 : a.oid > b.oid ? 1 : 0));
  const n = index.length;
  const large = index.filter((e) => e.offset > 0x7fffffff).length;
  const out = Buffer.alloc(8 + 256 * 4 + n * (20 + 4 + 4) + large * 8 + 40);
  out.writeUInt32BE(0xff744f63, 0); // "\377tOc"
  out.writeUInt32BE(2, 4);
  const fanout = 8;
  const names = fanout + 256 * 4;
  const crcs = names + n * 20;
  const offsets = crcs + n * 4;
  const offsets64 = offsets + n * 4;
  const counts = new Array<number>(256).fill(0);
  let nextLarge = 0;
  index.forEach((e, i) => {
    counts[parseInt(e.oid.slice(0, 2), 16)]!++;
    out.write(e.oid, names + i * 20, 'hex');
    out.writeUInt32BE(e.crc >>> 0, crcs + i * 4);
    if (e.offset > 0x7fffffff) {
      out.writeUInt32BE((0x80000000 | nextLarge) >>> 0, offsets + i * 4);
      out.writeBigUInt64BE(BigInt(e.offset), offsets64 + nextLarge * 8);
      nextLarge++;
    } else {
      out.writeUInt32BE(e.offset, offsets + i * 4);
    }
  });
  let running = 0;
  for (let b = 0; b < 256; b++) {
    running += counts[b]!;
    out.writeUInt32BE(running, fanout + b * 4);
  }
  const trailer = offsets64 + large * 8;
  packChecksum.copy(out, trailer);
  createHash('sha1')
    .update(out.subarray(0, trailer + 20))
    .digest()
    .copy(out, trailer + 20);
  return out;
}

export interface WritePackOptions {
  fsync?: boolean;
  /**
   * Makes pack-<name>.keep before the .pack makes the pack visible (see small-packs.ts,
   * "In-flight packs"; PackKeeps.hold: a link to the process's owner file) and answers its
   * path, or null when one exists already; the caller removes it once a ref names the objects.
   */
  holdKeep?: (path: string) => string | null;
}

/**
 * Writes `objects` as objects/pack/pack-<checksum>.{pack,idx} (see the order above). With
 * `fsync`, both files and the directory entries are on disk when this resolves.
 */
export function writePack(
  gitdir: string,
  objects: readonly PackEntry[],
  opts: WritePackOptions = {},
): Promise<WrittenPack> {
  return writeEncodedPack(gitdir, encodePack(objects), opts);
}

/** writePack for a pack already encoded (see assemblePack). */
export async function writeEncodedPack(
  gitdir: string,
  enc: EncodedPack,
  opts: WritePackOptions = {},
): Promise<WrittenPack> {
  const dir = join(gitdir, 'objects', 'pack');
  // Synchronous: on an existing directory (nearly always) it is a lookup of a few µs, where an
  // async mkdir waited in libuv's pool behind the fsyncs of every write in flight.
  let madeDir: boolean;
  try {
    mkdirSync(dir);
    madeDir = true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    madeDir = false;
  }
  const tag = tmpTag();
  // `tmp_` is the prefix `git prune` sweeps from objects/pack once stale.
  const tmpPack = join(dir, `tmp_pack_${tag}`);
  const tmpIdx = join(dir, `tmp_idx_${tag}`);
  const final = join(dir, `pack-${enc.name}`);
  let keep: string | null = null;
  try {
    // settleAll, not all: on the first failure (ENOSPC) the other file may still be opening,
    // and removed before it exists it would be left behind as a tmp_ file on a full disk.
    await settleAll([
      writeFileDurably(tmpPack, enc.pack, opts.fsync ?? false),
      writeFileDurably(tmpIdx, [enc.idx], opts.fsync ?? false),
    ]);
    // The .keep before the .pack: git repack lists packs by their .pack files. One listed
    // before its .keep existed is "not kept", and repack deletes it when it finishes, even if
    // its .keep and .idx appeared meanwhile; its pack-objects, started before the .idx, never
    // saw the objects, so even -A (gc --auto) does not loosen them: they are lost.
    if (opts.holdKeep) keep = opts.holdKeep(`${final}.keep`);
    await renameInto(tmpPack, `${final}.pack`);
    await renameInto(tmpIdx, `${final}.idx`);
  } catch (e) {
    await Promise.all([
      fsp.rm(tmpPack, { force: true }),
      fsp.rm(tmpIdx, { force: true }),
      keep ? fsp.rm(keep, { force: true }) : undefined,
    ]);
    throw e;
  }
  if (opts.fsync) {
    await Promise.all([syncDir(dir), madeDir ? syncDir(join(gitdir, 'objects')) : undefined]);
  }
  return { name: enc.name, keep, count: enc.count, bytes: enc.bytes };
}

/**
 * Renames a tmp file into place. The same objects written the same way make the same pack name,
 * and then the file in place has the same bytes (the name is their checksum): where a read-only
 * file cannot be replaced (Windows), keeping it is as good.
 */
async function renameInto(tmp: string, final: string): Promise<void> {
  try {
    await fsp.rename(tmp, final);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const kept = code === 'EPERM' || code === 'EACCES' || code === 'EEXIST';
    if (
      !kept ||
      !(await fsp.stat(final).then(
        () => true,
        () => false,
      ))
    )
      throw e;
    await fsp.rm(tmp, { force: true });
  }
}

async function writeFileDurably(path: string, parts: Buffer[], fsync: boolean): Promise<void> {
  // Read-only like git's packs; 'wx': a tmp name is never reused.
  const fh = await fsp.open(path, 'wx', 0o444);
  try {
    for (let i = 0; i < parts.length; i += WRITE_CHUNK) {
      let chunk = parts.slice(i, i + WRITE_CHUNK);
      let want = chunk.reduce((s, b) => s + b.length, 0);
      // writev may write less than asked (a full disk, a signal): go on from where it stopped.
      while (want > 0) {
        const { bytesWritten } = await fh.writev(chunk);
        if (bytesWritten === want) break;
        if (bytesWritten <= 0) throw new Error(`pack: short write to ${path}`);
        chunk = skipBytes(chunk, bytesWritten);
        want -= bytesWritten;
      }
    }
    if (fsync) await fh.sync();
  } finally {
    await fh.close();
  }
}

/** `bufs` without their first `n` bytes (after a short write). */
export function skipBytes(bufs: Buffer[], n: number): Buffer[] {
  const out: Buffer[] = [];
  for (const b of bufs) {
    if (n >= b.length) n -= b.length;
    else {
      out.push(n > 0 ? b.subarray(n) : b);
      n = 0;
    }
  }
  return out;
}

async function syncDir(dir: string): Promise<void> {
  const d = await fsp.open(dir, 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}

// zlib's CRC-32 (the polynomial 0xEDB88320, reflected). Node's zlib.crc32 exists only from
// 20.15/22.2 and package.json allows 20.11, so a table version stands in where it is missing.
const CRC_TABLE = (() => {
  const t = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c;
  }
  return t;
})();

/** The table version of CRC-32 (exported for the test that compares it with zlib's). */
export function crc32Table(buf: Buffer, prev = 0): number {
  let c = ~prev;
  for (let i = 0; i < buf.length; i++) c = CRC_TABLE[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

const nativeCrc32 = (zlib as { crc32?: (data: Buffer, value?: number) => number }).crc32;

/** CRC-32 of `buf`, continuing from `prev` (the CRC of the bytes before it). */
export const crc32: (buf: Buffer, prev?: number) => number = nativeCrc32
  ? (buf, prev = 0) => nativeCrc32(buf, prev)
  : crc32Table;
