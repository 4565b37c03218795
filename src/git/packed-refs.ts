import fs from 'node:fs';
import { join } from 'node:path';
import { OID_RE } from './ref-names.js';

// A repository's packed-refs, parsed and cached (RefStore's reads of refs not loose).

export class PackedRefs {
  private cached: { key: string; refs: Map<string, string> } | null = null;

  constructor(private readonly gitdir: string) {}

  // The parsed packed-refs is cached by the file's identity and mtime. That cache serves reads
  // outside the lock only: git's own update-ref trusts a snapshot validated the same way, and
  // loses updates when `git pack-refs` rewrites the file with a reused inode and the same size
  // within the timestamp granularity (reproduced with git 2.39 on ext4). Under the lock we
  // always read the file itself.
  //
  // Reads of refs are synchronous (see the header): an async open/stat/readdir waits in libuv's
  // 4-thread pool behind the fsyncs of concurrent durable writes, and a `lane_list` under a
  // writer storm then waited tens of ms for a few microseconds of work.
  read(fresh = false): Map<string, string> {
    const file = join(this.gitdir, 'packed-refs');
    // No file, or the cache still good: one stat instead of an open that throws (an Error
    // with its stack) or open, fstat and close (every lane_list lists the refs; a system call
    // costs ~5-10 µs on the 2-vCPU VMs, an open more). The same identity as the fstat's below,
    // which git's snapshot validation uses too; a cached map was always parsed from the file
    // that had that identity. A changed file, or a fresh read, opens the file as before.
    if (!fresh) {
      const st = fs.statSync(file, { bigint: true, throwIfNoEntry: false });
      if (!st) {
        this.cached = null;
        return new Map();
      }
      if (this.cached?.key === keyOf(st)) return this.cached.refs;
    }
    let fd: number;
    try {
      fd = fs.openSync(file, 'r');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      this.cached = null;
      return new Map();
    }
    try {
      // Key and content from the same open file, so a concurrent rewrite cannot pair them up.
      const st = fs.fstatSync(fd, { bigint: true });
      const key = keyOf(st);
      if (!fresh && this.cached?.key === key) return this.cached.refs;
      const text = fs.readFileSync(fd, 'utf8');
      const refs = new Map<string, string>();
      for (const line of text.split('\n')) {
        if (line.length < 42 || line[0] === '#' || line[0] === '^') continue;
        const oid = line.slice(0, 40);
        if (OID_RE.test(oid)) refs.set(line.slice(41), oid);
      }
      this.cached = { key, refs };
      return refs;
    } finally {
      fs.closeSync(fd);
    }
  }
}

function keyOf(st: fs.BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}
