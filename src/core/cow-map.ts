// A map whose copies are cheap: fork() answers a copy that may be changed without touching the
// original, in time proportional to an array copy rather than a Map's rebuild. A Lane's state
// is copied for every group commit (the draft the commit's ops are applied to, while readers
// keep the state they hold), and `new Map(asks)` of a 6,000-Ask Lane took ~1 ms on Node 20:
// several per group commit, for the few Asks the commit changes.
//
// How: keys get positions in first-insertion order. The key → position index and the array of
// keys are shared, append-only, by a chain of forks (each the first fork of the one before);
// each map keeps its own length and its own array of values (copied by fork: a flat copy of
// pointers). A key is in a map when its position is below that map's length. Only the newest
// map of a chain (the one not yet forked) ever appends; a forked map that must add a key, and
// a map forked a second time (a draft thrown away, then another), first take a private copy of
// the index (O(n), rare), so no two maps ever give one position to two keys.
//
// Deliberately small: no delete (a Lane's Asks, keys and dependents are only ever added to or
// replaced), iteration in first-insertion order like Map. Not a Map subclass: its data lives in
// private fields, so structuredClone, util.inspect and Map.prototype methods called on it would
// not see it; it implements ReadonlyMap, and vitest compares two of them by their entries in
// order (the private fields are not own enumerable properties).

export class CowMap<K, V> implements ReadonlyMap<K, V> {
  /** key → position; shared along a chain of first forks, entries past #len are not ours. */
  #index: Map<K, number>;
  /** Keys by position; shared like #index (append-only: positions below any #len never change). */
  #keys: K[];
  /** This map's values by position (its own array). */
  #vals: V[];
  #len: number;
  /** Forked once already: the shared index and keys may hold a newer map's entries past #len. */
  #forked = false;

  constructor(entries?: Iterable<readonly [K, V]>) {
    this.#index = new Map();
    this.#keys = [];
    this.#vals = [];
    this.#len = 0;
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
    return i >= 0 ? this.#vals[i] : undefined;
  }

  set(key: K, value: V): this {
    const i = this.#at(key);
    if (i >= 0) {
      this.#vals[i] = value;
      return this;
    }
    // A new key: appending to shared arrays is for the newest map of a chain only.
    if (this.#forked) this.#detach();
    this.#index.set(key, this.#len);
    this.#keys.push(key);
    this.#vals.push(value);
    this.#len++;
    return this;
  }

  /**
   * A copy to change without touching this one (nor this one's later changes touching it).
   * The first fork shares the index; later ones copy it.
   */
  fork(): CowMap<K, V> {
    const c = new CowMap<K, V>();
    if (this.#forked) {
      const keys = this.#keys.slice(0, this.#len);
      c.#keys = keys;
      c.#index = indexOf(keys);
    } else {
      c.#keys = this.#keys;
      c.#index = this.#index;
      this.#forked = true;
    }
    c.#vals = this.#vals.slice(0, this.#len);
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
    for (let i = 0; i < this.#len; i++) yield [this.#keys[i]!, this.#vals[i]!];
  }

  *keys(): MapIterator<K> {
    for (let i = 0; i < this.#len; i++) yield this.#keys[i]!;
  }

  /**
   * The values in order, as a new array: a flat copy, where spreading values() (or a for-of
   * over it at a call site that sees other iterators too) allocated a result per value.
   */
  valuesArray(): V[] {
    return this.#vals.slice();
  }

  values(): MapIterator<V> {
    // #vals is this map's own and exactly #len long: its iterator is the fast one to spread.
    return this.#vals.values();
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }

  forEach(f: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    for (let i = 0; i < this.#len; i++) f.call(thisArg, this.#vals[i]!, this.#keys[i]!, this);
  }
}

function indexOf<K>(keys: readonly K[]): Map<K, number> {
  const index = new Map<K, number>();
  keys.forEach((k, i) => index.set(k, i));
  return index;
}
