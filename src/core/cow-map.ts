// A map whose copies are cheap: fork() answers a copy that may be changed without touching the
// original, in time proportional to the number of chunks of values rather than a Map's rebuild
// or a copy of every value. A Lane's state is copied for every group commit (the draft the
// commit's ops are applied to, while readers keep the state they hold): `new Map(asks)` of a
// 6,000-Ask Lane took ~1 ms on Node 20, and a flat copy of its values (what fork did next) was
// still a 48 KB array per map per commit, kept alive until the next commit replaced the state:
// under a writer storm, young-generation garbage that survived the scavenges and was copied by
// them (issue 17).
//
// How: keys get positions in first-insertion order. The key → position index and the array of
// keys are shared, append-only, by a chain of forks (each the first fork of the one before);
// each map keeps its own length. A key is in a map when its position is below that map's
// length. Only the newest map of a chain (the one not yet forked) ever appends; a forked map
// that must add a key, and a map forked a second time (a draft thrown away, then another),
// first take a private copy of the index (O(n), rare), so no two maps ever give one position to
// two keys.
//
// Values sit in chunks of CHUNK positions. fork() copies only the array of chunks; the chunks
// themselves are shared until written. Each map knows which chunks are its own (`#own`): a
// write to a chunk it does not own first copies that chunk (one chunk, 2 KB, not the map).
// Hazard, the rule everything rests on: after a fork NEITHER map owns any chunk (both clear
// `#own`), since the original may be written again too (a draft thrown away); a chunk array is
// never written unless its map owns it. test/core/cow-map.test.ts holds every version to a Map
// copied at its fork, with a chunk of 2 so that chunks are shared and split in every round.
//
// Deliberately small: no delete (a Lane's Asks, keys and dependents are only ever added to or
// replaced), iteration in first-insertion order like Map. Not a Map subclass: its data lives in
// private fields, so structuredClone, util.inspect and Map.prototype methods called on it would
// not see it; it implements ReadonlyMap, and vitest compares two of them by their entries in
// order (the private fields are not own enumerable properties).

const CHUNK_BITS = 8;

export class CowMap<K, V> implements ReadonlyMap<K, V> {
  /** key → position; shared along a chain of first forks, entries past #len are not ours. */
  #index: Map<K, number>;
  /** Keys by position; shared like #index (append-only: positions below any #len never change). */
  #keys: K[];
  /** Values by position, in chunks of 1 << #bits; a chunk may be shared with other maps. */
  #chunks: V[][];
  /** #own[j]: chunk j is this map's alone, to write in place. */
  #own: boolean[];
  #len: number;
  readonly #bits: number;
  /** Forked once already: the shared index and keys may hold a newer map's entries past #len. */
  #forked = false;

  /** `chunkBits` (tests only): chunks of 2^chunkBits values; forks keep their original's. */
  constructor(entries?: Iterable<readonly [K, V]>, chunkBits: number = CHUNK_BITS) {
    this.#index = new Map();
    this.#keys = [];
    this.#chunks = [];
    this.#own = [];
    this.#len = 0;
    this.#bits = chunkBits;
    if (entries) for (const [k, v] of entries) this.set(k, v);
  }

  get size(): number {
    return this.#len;
  }

  get [Symbol.toStringTag](): string {
    return 'CowMap';
  }

  #at(key: K): number {
    const i = this.#index.get(key);
    return i !== undefined && i < this.#len ? i : -1;
  }

  has(key: K): boolean {
    return this.#at(key) >= 0;
  }

  get(key: K): V | undefined {
    const i = this.#at(key);
    return i >= 0 ? this.at(i) : undefined;
  }

  /** The value at position i (0 ≤ i < size, first-insertion order), else undefined. */
  at(i: number): V | undefined {
    if (!(i >= 0 && i < this.#len)) return undefined;
    return this.#chunks[i >> this.#bits]![i & ((1 << this.#bits) - 1)];
  }

  /** Chunk j, made this map's own first (a copy of its first `n` values) when it is shared. */
  #writable(j: number, n: number): V[] {
    let c = this.#chunks[j]!;
    if (!this.#own[j]) {
      c = this.#chunks[j] = c.slice(0, n);
      this.#own[j] = true;
    }
    return c;
  }

  set(key: K, value: V): this {
    const mask = (1 << this.#bits) - 1;
    const i = this.#at(key);
    if (i >= 0) {
      const j = i >> this.#bits;
      // A whole chunk (or the last one as far as this map goes): its positions are all ours.
      this.#writable(j, Math.min(mask + 1, this.#len - (j << this.#bits)))[i & mask] = value;
      return this;
    }
    // A new key: appending to shared arrays is for the newest map of a chain only.
    if (this.#forked) this.#detach();
    const at = this.#len;
    const j = at >> this.#bits;
    if (j === this.#chunks.length) {
      this.#chunks.push([value]);
      this.#own.push(true);
    } else {
      // The last chunk, partly filled: a shared one may hold another map's values past ours.
      this.#writable(j, at & mask).push(value);
    }
    this.#index.set(key, at);
    this.#keys.push(key);
    this.#len++;
    return this;
  }

  /**
   * A copy to change without touching this one (nor this one's later changes touching it).
   * The first fork shares the index; later ones copy it. Chunks are shared by both until
   * either writes one.
   */
  fork(): CowMap<K, V> {
    const c = new CowMap<K, V>(undefined, this.#bits);
    if (this.#forked) {
      const keys = this.#keys.slice(0, this.#len);
      c.#keys = keys;
      c.#index = indexOf(keys);
    } else {
      c.#keys = this.#keys;
      c.#index = this.#index;
      this.#forked = true;
    }
    c.#chunks = this.#chunks.slice();
    c.#own = new Array<boolean>(c.#chunks.length).fill(false);
    this.#own.fill(false);
    c.#len = this.#len;
    return c;
  }

  /** Takes private copies of the shared index and keys (this map's entries only). */
  #detach(): void {
    this.#keys = this.#keys.slice(0, this.#len);
    this.#index = indexOf(this.#keys);
    this.#forked = false;
  }

  *entries(): MapIterator<[K, V]> {
    for (let i = 0; i < this.#len; i++) yield [this.#keys[i]!, this.at(i)!];
  }

  *keys(): MapIterator<K> {
    for (let i = 0; i < this.#len; i++) yield this.#keys[i]!;
  }

  /**
   * The values in order, as a new array: a flat copy, where spreading values() (or a for-of
   * over it at a call site that sees other iterators too) allocated a result per value.
   */
  valuesArray(): V[] {
    const out = new Array<V>(this.#len);
    let i = 0;
    for (const c of this.#chunks) {
      for (let k = 0; k < c.length && i < this.#len; k++) out[i++] = c[k]!;
    }
    return out;
  }

  /** A generator (a result object per value): hot loops read by position with at(i). */
  *values(): MapIterator<V> {
    let i = 0;
    for (const c of this.#chunks) {
      for (let k = 0; k < c.length && i < this.#len; k++, i++) yield c[k]!;
    }
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }

  forEach(f: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    let i = 0;
    for (const c of this.#chunks) {
      for (let k = 0; k < c.length && i < this.#len; k++, i++) {
        f.call(thisArg, c[k]!, this.#keys[i]!, this);
      }
    }
  }
}

function indexOf<K>(keys: readonly K[]): Map<K, number> {
  const index = new Map<K, number>();
  keys.forEach((k, i) => index.set(k, i));
  return index;
}
