import type MiniSearch from 'minisearch';

// minisearch 7.2's private fields, read by the compact shard codec and the direct scorer.
// package.json pins minisearch, and every use goes through internalsOf(), which checks the
// shape and returns null when it differs, so callers fall back to the public API
// (toJSON/loadJS, search) instead of misreading an index.

/** field id → doc short id → term frequency */
export type Postings = Map<number, Map<number, number>>;

export interface TermMap {
  _tree: Map<string, unknown>;
  _prefix: string;
  _size: number | undefined;
  set(term: string, value: Postings): unknown;
  get(term: string): Postings | undefined;
  [Symbol.iterator](): Iterator<[string, Postings]>;
}

export interface Internals {
  _index: TermMap;
  _documentCount: number;
  _nextId: number;
  _documentIds: Map<number, string>;
  _idToShortId: Map<string, number>;
  _fieldIds: Record<string, number>;
  _fieldLength: Map<number, number[]>;
  _avgFieldLength: number[];
  _storedFields: Map<number, Record<string, unknown> | undefined>;
  _dirtCount: number;
}

export function internalsOf<T>(ms: MiniSearch<T>): Internals | null {
  // as unknown as: these fields are private to minisearch; the checks below verify the shape.
  const i = ms as unknown as Partial<Internals>;
  const ok =
    i._index !== undefined &&
    i._index._tree instanceof Map &&
    i._index._prefix === '' &&
    typeof i._index.set === 'function' &&
    typeof i._index.get === 'function' &&
    typeof i._documentCount === 'number' &&
    typeof i._nextId === 'number' &&
    i._documentIds instanceof Map &&
    i._idToShortId instanceof Map &&
    i._fieldLength instanceof Map &&
    i._storedFields instanceof Map &&
    Array.isArray(i._avgFieldLength) &&
    typeof i._fieldIds === 'object' &&
    i._fieldIds !== null &&
    typeof i._dirtCount === 'number';
  return ok ? (i as Internals) : null;
}
