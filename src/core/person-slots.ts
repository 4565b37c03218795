import { ZzError } from '../errors.js';

/**
 * Places a person (their agents included) holds at once in one repository: event streams
 * (http/app.ts), waiting lane_events calls (events.ts). Per repository, as tokens are: a
 * person's places on one repository do not use up those on another. Past `max`, a 429 at once.
 */
export class PersonSlots {
  private readonly held = new Map<string, number>();

  constructor(
    private readonly max: number,
    /** The refusal's message, given whom and how many they hold. */
    private readonly refusal: (person: string, held: number) => string,
  ) {}

  /** Takes one of `person`'s places in `repoKey`, or throws; the release may be called twice. */
  take(repoKey: string, person: string): () => void {
    // NUL: in neither a repo key nor an actor.
    const key = `${repoKey}\0${person}`;
    const held = this.held.get(key) ?? 0;
    if (held >= this.max) throw new ZzError('too_many_requests', this.refusal(person, held));
    this.held.set(key, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const n = (this.held.get(key) ?? 1) - 1;
      if (n > 0) this.held.set(key, n);
      else this.held.delete(key);
    };
  }
}
