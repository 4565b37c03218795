import { createHash } from 'node:crypto';

// Git's object formats, in memory: hashing, tree and commit bytes, and their parsing. No file
// system here: objects.ts writes what these make (loose objects, small packs), and the store,
// sync and queries read with parseTree / parseCommit.

export type ObjectType = 'blob' | 'tree' | 'commit';

export interface TreeEntry {
  mode: '100644' | '100755' | '040000' | '120000' | '160000';
  name: string;
  oid: string;
}

export interface Signature {
  name: string;
  email: string;
  /** Unix seconds. */
  time: number;
  /** Minutes east of UTC. */
  tzOffset?: number;
}

export interface CommitData {
  tree: string;
  parents: string[];
  author: Signature;
  committer: Signature;
  message: string;
}

export function hashObject(type: ObjectType, body: Buffer): { oid: string; raw: Buffer } {
  const raw = Buffer.concat([Buffer.from(`${type} ${body.length}\0`), body]);
  const oid = createHash('sha1').update(raw).digest('hex');
  return { oid, raw };
}

const HASHED: unique symbol = Symbol('hashed');

/**
 * An object and its id, the id computed here from the same bytes (hashedObject). A pack under
 * a wrong name is corrupt, so ObjectWriter.writeMany trusts the id of this type only and
 * hashes anything else itself: GitStore hashes each object once, to build the tree that names
 * it, and writeMany no longer hashes it again (a Lane op's ~9 KiB, twice, and a hash object per
 * object: ~3% of a durable write's CPU, issue 17).
 */
export interface HashedObject {
  readonly type: ObjectType;
  readonly body: Buffer;
  readonly oid: string;
  readonly [HASHED]: true;
}

/** `body`'s object id as git computes it, without hashObject's copy of header and body. */
export function hashedObject(type: ObjectType, body: Buffer): HashedObject {
  const oid = createHash('sha1').update(`${type} ${body.length}\0`).update(body).digest('hex');
  return { type, body, oid, [HASHED]: true };
}

/** Whether `o` was made by hashedObject (objects.ts trusts only those oids). */
export function isHashed(o: object): o is HashedObject {
  return HASHED in o;
}

// Git sorts tree entries by name, comparing directories as if their name ended in '/'.
// Compared in place, without building that key: under a writer storm every new Ask sorts its
// fan-out tree and the check of `asks/`'s 256 directories ran on every group commit, and the
// concatenated keys were a tenth of a storm's loop time with the GC they caused. (Code units,
// as JavaScript's `<` compares: the same order as git's bytes for the names zz writes.)
const SLASH = 47;

function compareEntries(a: TreeEntry, b: TreeEntry): number {
  const x = a.name;
  const y = b.name;
  const n = x.length < y.length ? x.length : y.length;
  for (let i = 0; i < n; i++) {
    const d = x.charCodeAt(i) - y.charCodeAt(i);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  // One name is a prefix of the other: what follows is its next character, or the directory's
  // '/', or nothing (-1). A name holds no '/', so a tie here is the same name and kind.
  const cx = x.length > n ? x.charCodeAt(n) : a.mode === '040000' ? SLASH : -1;
  const cy = y.length > n ? y.charCodeAt(n) : b.mode === '040000' ? SLASH : -1;
  return cx < cy ? -1 : cx > cy ? 1 : 0;
}

function inTreeOrder(entries: readonly TreeEntry[]): boolean {
  for (let i = 1; i < entries.length; i++) {
    if (compareEntries(entries[i - 1]!, entries[i]!) >= 0) return false;
  }
  return true;
}

/**
 * Puts `entries` in git's tree order, in place (a check first: they mostly are). A caller that
 * keeps the list of a tree it serialised (GitStore's tree cache) sorts it with this first, so
 * the next write to that tree starts from sorted entries: a list kept as built (a new Ask
 * appended last) was sorted again on every later write to its tree, a Lane's `asks/` of 256
 * entries included (~3% of a durable write's CPU, issue 17).
 */
export function sortTreeEntries(entries: TreeEntry[]): TreeEntry[] {
  if (!inTreeOrder(entries)) entries.sort(compareEntries);
  return entries;
}

export function serializeTree(entries: readonly TreeEntry[]): Buffer {
  // Entries read from a tree come sorted and an update mostly replaces one in place: check
  // before paying for a sort.
  const sorted = inTreeOrder(entries) ? entries : [...entries].sort(compareEntries);
  return serializeSortedTree(sorted).body;
}

/**
 * serializeTree of entries already in tree order (sortTreeEntries), and where each entry's
 * 20-byte id starts in the body (`oidAt`): a caller that keeps both can write the next version
 * of the tree, when only ids change, by copying the body and writing the new ids there.
 */
export function serializeSortedTree(sorted: readonly TreeEntry[]): {
  body: Buffer;
  oidAt: Uint32Array;
} {
  // A lane's `asks/` tree has hundreds of entries and is serialised on every write to any of
  // them, each time with all but one entry unchanged (the same TreeEntry objects, from the
  // tree cache). So each entry's bytes are kept beside it and the tree is their concatenation:
  // 256 entries took ~250 µs encoded afresh (a string, its UTF-8 length, a hex decode each),
  // the largest CPU cost of a Lane op after deflate.
  // Only for trees as large as that: a record costs ~150 bytes for as long as its entry lives.
  const records = sorted.map(sorted.length >= RECORD_MIN_ENTRIES ? entryRecord : encodeEntry);
  const oidAt = new Uint32Array(records.length);
  let size = 0;
  records.forEach((r, i) => {
    size += r.length;
    oidAt[i] = size - 20;
  });
  return { body: Buffer.concat(records, size), oidAt };
}

/** An entry's serialised bytes, by entry object: checked against its fields on each use. */
const RECORDS = new WeakMap<
  TreeEntry,
  { mode: string; name: string; oid: string; bytes: Buffer }
>();

const RECORD_MIN_ENTRIES = 64;

function entryRecord(e: TreeEntry): Buffer {
  const hit = RECORDS.get(e);
  if (hit && hit.mode === e.mode && hit.name === e.name && hit.oid === e.oid) return hit.bytes;
  const bytes = encodeEntry(e);
  RECORDS.set(e, { mode: e.mode, name: e.name, oid: e.oid, bytes });
  return bytes;
}

function encodeEntry(e: TreeEntry): Buffer {
  // Tree modes are written without the leading zero ("40000"), as git does.
  const head = `${e.mode === '040000' ? '40000' : e.mode} ${e.name}\0`;
  const len = Buffer.byteLength(head, 'utf8');
  const bytes = Buffer.allocUnsafe(len + 20);
  bytes.write(head, 0, 'utf8');
  bytes.write(e.oid, len, 'hex');
  return bytes;
}

export function parseTree(body: Buffer): TreeEntry[] {
  const out: TreeEntry[] = [];
  let i = 0;
  while (i < body.length) {
    const sp = body.indexOf(32, i);
    const nul = body.indexOf(0, sp);
    const rawMode = body.subarray(i, sp).toString('latin1');
    const name = body.subarray(sp + 1, nul).toString('utf8');
    const oid = body.subarray(nul + 1, nul + 21).toString('hex');
    const mode = (rawMode === '40000' ? '040000' : rawMode) as TreeEntry['mode'];
    out.push({ mode, name, oid });
    i = nul + 21;
  }
  return out;
}

function formatSig(s: Signature): string {
  const tz = s.tzOffset ?? 0;
  const sign = tz < 0 ? '-' : '+';
  const abs = Math.abs(tz);
  const hh = String(Math.floor(abs / 60)).padStart(2, '0');
  const mm = String(abs % 60).padStart(2, '0');
  return `${s.name} <${s.email}> ${s.time} ${sign}${hh}${mm}`;
}

export function serializeCommit(c: CommitData): Buffer {
  let s = `tree ${c.tree}\n`;
  for (const p of c.parents) s += `parent ${p}\n`;
  s += `author ${formatSig(c.author)}\n`;
  s += `committer ${formatSig(c.committer)}\n\n`;
  s += c.message.endsWith('\n') ? c.message : c.message + '\n';
  return Buffer.from(s, 'utf8');
}

export function parseCommit(body: Buffer): CommitData {
  // Header and message decoded apart: an oid sliced from one string of the whole commit keeps
  // all of it alive (V8 sliced strings), and a ladder commit's message is megabytes of op.
  const split = body.indexOf('\n\n');
  const head = body.toString('utf8', 0, split < 0 ? body.length : split);
  const message = split < 0 ? '' : body.toString('utf8', split + 2);
  let tree = '';
  const parents: string[] = [];
  let author: Signature = { name: '', email: '', time: 0 };
  let committer: Signature = author;
  for (const line of head.split('\n')) {
    if (line.startsWith('tree ')) tree = line.slice(5);
    else if (line.startsWith('parent ')) parents.push(line.slice(7));
    else if (line.startsWith('author ')) author = parseSig(line.slice(7));
    else if (line.startsWith('committer ')) committer = parseSig(line.slice(10));
  }
  return { tree, parents, author, committer, message };
}

export function parseSig(s: string): Signature {
  const m = /^(.*) <(.*)> (\d+) ([+-])(\d\d)(\d\d)$/.exec(s);
  if (!m) return { name: s, email: '', time: 0 };
  const tz = (Number(m[5]) * 60 + Number(m[6])) * (m[4] === '-' ? -1 : 1);
  return { name: m[1]!, email: m[2]!, time: Number(m[3]), tzOffset: tz };
}
