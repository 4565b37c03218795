// The one keyed queue: work for one key (a repository, a gitdir) runs one piece at a time, in
// call order, within this process; different keys run side by side. A piece that fails does
// not stop the next. Other processes are not held off: that is what file locks and ref CAS are
// for.

export class KeyedQueue {
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const next = (this.tails.get(key) ?? Promise.resolve()).then(fn);
    const tail = next.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    // The last piece for a key leaves no entry behind.
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return next;
  }

  /** Keys with work queued or running (tests check that none is left behind). */
  get size(): number {
    return this.tails.size;
  }
}
