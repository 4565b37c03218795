import type { TokenStore } from './token-store.js';
import { personOf } from '../schema/ids.js';
import { isPublicRepo } from './admin.js';
import type { ZzRepo } from './zz-repo.js';

// Which served repositories a caller may read beyond the one its token belongs to (DESIGN §4:
// a token belongs to one repository). The daemon serves several repositories from one process
// and keeps cross-repository views (the Ladder search, the list of served repositories); each
// must show a caller only: the repository it authenticated in, public ones, and — for a person,
// not an agent — those where that person holds a live token of that repository's own store (the
// same person could call that repository directly). A repository whose token file cannot be
// read counts as one the caller holds no token of. Anything else is treated as absent, never as "forbidden": a refusal
// that differs from "unknown" tells a private repository's existence.

/** Who is asking: an actor, authenticated in the repository keyed `repo`. */
export interface Reader {
  actor: string;
  repo: string;
}

/** Whether reader (null: anonymous) may read target; tokens is target's own token store. */
export async function mayReadRepo(
  target: ZzRepo,
  reader: Reader | null,
  tokens: TokenStore | undefined,
): Promise<boolean> {
  if (reader && reader.repo === target.key) return true;
  if (await isPublicRepo(target).catch(() => false)) return true;
  // An agent's name (`a@b[bot]`) is chosen per repository and recurs across them: another
  // repository's `a@b[bot]` is a different agent, perhaps given to someone else, so a name
  // match proves nothing. A person's name is that person's everywhere (their login).
  if (!reader || !tokens || personOf(reader.actor) !== reader.actor) return false;
  return tokens.holdsOrNone(reader.actor);
}

/**
 * The keys of repos reader may read, in the map's order; of `only` alone when given (a search
 * filtered to one repository need not stat every other one's token file).
 */
export async function readableRepos(
  repos: ReadonlyMap<string, ZzRepo>,
  reader: Reader | null,
  tokensFor: ((key: string) => TokenStore | undefined) | undefined,
  only?: string,
): Promise<string[]> {
  const keys = only === undefined ? [...repos.keys()] : repos.has(only) ? [only] : [];
  const ok = await Promise.all(keys.map((k) => mayReadRepo(repos.get(k)!, reader, tokensFor?.(k))));
  return keys.filter((_, i) => ok[i]);
}
