import { createHash } from 'node:crypto';
import { assertRefName, assertTreePath, RefCasError } from '../git/index.js';
import type { CodeCommitRequest, CommitRecord, CommitRequest, Store } from './store.js';

// The same contract held in memory: for tests of the layers above and as the reference the
// git store is checked against. Revisions are content hashes so they look like git's.

interface MemCommit {
  files: Map<string, string>;
  parents: string[];
  ops: CommitRecord['ops'];
}

export class MemoryStore implements Store {
  readonly kind = 'memory' as const;
  private readonly refs = new Map<string, string>();
  private readonly commits = new Map<string, MemCommit>();
  private counter = 0;

  async head(ref: string): Promise<string | null> {
    return this.refs.get(ref) ?? null;
  }

  async listRefs(prefix: string): Promise<Map<string, string>> {
    return new Map([...this.refs].filter(([r]) => r.startsWith(prefix)));
  }

  async refNames(prefix: string): Promise<string[]> {
    return [...this.refs.keys()].filter((r) => r.startsWith(prefix)).sort();
  }

  async listNames(prefix: string): Promise<string[]> {
    const names = new Set<string>();
    for (const r of this.refs.keys()) {
      if (r.startsWith(prefix)) names.add(r.slice(prefix.length).split('/')[0]!);
    }
    return [...names].sort();
  }

  async readFile(revision: string, path: string): Promise<string | null> {
    return this.commits.get(revision)?.files.get(path) ?? null;
  }

  async readAll(revision: string, dir = ''): Promise<Map<string, string>> {
    const files = this.commits.get(revision)?.files ?? new Map<string, string>();
    if (!dir) return new Map(files);
    return new Map([...files].filter(([p]) => p.startsWith(dir + '/')));
  }

  async history(ref: string, since?: string | null): Promise<CommitRecord[]> {
    const out: CommitRecord[] = [];
    let cur = this.refs.get(ref) ?? null;
    while (cur && cur !== since) {
      const c = this.commits.get(cur);
      if (!c) break;
      out.push({ revision: cur, parents: c.parents, ops: c.ops });
      cur = c.parents[0] ?? null;
    }
    return out.reverse();
  }

  async commit(ref: string, req: CommitRequest): Promise<string> {
    // Refused exactly as the git store refuses them.
    assertRefName(ref);
    for (const p of req.changes.keys()) assertTreePath(p);
    const current = this.refs.get(ref) ?? null;
    if (current !== req.parent) throw new RefCasError(ref, req.parent, current);
    const files = new Map(req.parent ? this.commits.get(req.parent)?.files : undefined);
    for (const [p, c] of req.changes) {
      if (c === null) files.delete(p);
      else files.set(p, c);
    }
    const oid = createHash('sha1')
      .update(`${ref}\0${req.parent}\0${++this.counter}\0${JSON.stringify(req.ops)}`)
      .digest('hex');
    this.commits.set(oid, {
      files,
      parents: req.parent ? [req.parent] : [],
      ops: structuredClone(req.ops),
    });
    this.refs.set(ref, oid);
    return oid;
  }

  async writeCodeCommit(req: CodeCommitRequest): Promise<string> {
    const files = new Map(this.commits.get(req.base)?.files);
    for (const [p, c] of req.changes) {
      if (c === null) files.delete(p);
      else files.set(p, c.toString('utf8'));
    }
    const oid = createHash('sha1')
      .update(`code\0${req.base}\0${++this.counter}\0${req.message}`)
      .digest('hex');
    this.commits.set(oid, { files, parents: [req.base], ops: [] });
    return oid;
  }

  async setRef(ref: string, expected: string | null, oid: string): Promise<void> {
    const current = this.refs.get(ref) ?? null;
    if (current !== expected) throw new RefCasError(ref, expected, current);
    this.refs.set(ref, oid);
  }

  close(): void {}
}
