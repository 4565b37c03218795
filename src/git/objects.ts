import { createHash, randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';

// Our own loose-object writer. isomorphic-git's writeBlob/writeTree/writeCommit write in place
// and a crash leaves a truncated object that is never repaired (a later write of the same oid
// is skipped because the file exists). Here every object goes to a temp file in its fan-out
// directory and is renamed into place, so an object file is either absent or complete.

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

// Git sorts tree entries by name, comparing directories as if their name ended in '/'.
function treeSortKey(e: TreeEntry): string {
  return e.mode === '040000' ? e.name + '/' : e.name;
}

export function serializeTree(entries: readonly TreeEntry[]): Buffer {
  const sorted = [...entries].sort((a, b) => {
    const ka = treeSortKey(a);
    const kb = treeSortKey(b);
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
  const parts: Buffer[] = [];
  for (const e of sorted) {
    // Tree modes are written without the leading zero ("40000"), as git does.
    const mode = e.mode === '040000' ? '40000' : e.mode;
    parts.push(Buffer.from(`${mode} ${e.name}\0`), Buffer.from(e.oid, 'hex'));
  }
  return Buffer.concat(parts);
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
  const text = body.toString('utf8');
  const split = text.indexOf('\n\n');
  const head = split < 0 ? text : text.slice(0, split);
  const message = split < 0 ? '' : text.slice(split + 2);
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

export interface ObjectWriterOptions {
  /** fsync object data before the rename (power-loss durability; costs ~1 ms per object). */
  fsync?: boolean;
}

export class ObjectWriter {
  private readonly knownDirs = new Set<string>();

  constructor(
    private readonly gitdir: string,
    private readonly opts: ObjectWriterOptions = {},
  ) {}

  /** Writes one object atomically; returns its oid. Existing objects are never rewritten. */
  async write(type: ObjectType, body: Buffer): Promise<string> {
    const { oid, raw } = hashObject(type, body);
    const dir = join(this.gitdir, 'objects', oid.slice(0, 2));
    const file = join(dir, oid.slice(2));
    // An existing file is complete: nothing ever writes object files in place here, and git
    // only renames finished objects into place too. Like git (freshen_loose_object) we touch
    // it instead of rewriting it: an old unreachable object we are about to reference must not
    // look prunable to a `git gc` running beside us. If we cannot touch it, write a fresh copy.
    try {
      const now = new Date();
      await fsp.utimes(file, now, now);
      return oid;
    } catch {
      /* absent (or not ours to touch): write it */
    }
    if (!this.knownDirs.has(dir)) {
      await fsp.mkdir(dir, { recursive: true });
      this.knownDirs.add(dir);
    }
    const tmp = join(dir, `tmp_obj_zz_${process.pid}_${randomBytes(6).toString('hex')}`);
    const fh = await fsp.open(tmp, 'wx', 0o444);
    try {
      await fh.writeFile(deflateSync(raw, { level: 1 }));
      if (this.opts.fsync) await fh.sync();
    } finally {
      await fh.close();
    }
    try {
      await fsp.rename(tmp, file);
    } catch (e) {
      await fsp.rm(tmp, { force: true });
      throw e;
    }
    return oid;
  }

  blob(content: Buffer | string): Promise<string> {
    return this.write('blob', typeof content === 'string' ? Buffer.from(content, 'utf8') : content);
  }

  tree(entries: readonly TreeEntry[]): Promise<string> {
    return this.write('tree', serializeTree(entries));
  }

  commit(c: CommitData): Promise<string> {
    return this.write('commit', serializeCommit(c));
  }
}

export const EMPTY_TREE_OID = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
