import { ZzError } from '../errors.js';
import { personOf } from '../schema/ids.js';
import { GitStore } from '../store/index.js';
import type { Caller } from './access.js';
import type { ZzRepo } from './zz-repo.js';

// A write this process cannot sign, refused before it is committed (DESIGN §7). A daemon (or
// the CLI in-process) signs only for the checkout's person (git user.email) and that person's
// agents (sync/authenticity.ts signAs, signInProcess). Another person's token is accepted
// there, but its commits are unsigned, and every other machine refuses some unsigned ops on
// import: an owner-level op (everything on refs/zz/config) in every repository, and every op
// in a repository that requires signatures. Sync then holds the ref back (it would quarantine
// the remote's for everyone), and nothing written after it on that ref reaches the remote
// again, the owner's own writes included: one such write froze refs/zz/config or a Lane for
// good. A process that signs for nobody (an embedder with no key) is left as it was: its writes
// are held back at sync, which says so.

/**
 * Throws `forbidden` when `caller`'s write to `entity` would be committed unsigned and refused
 * on import. Reads the config only for a caller this process cannot sign for.
 */
export async function assertSignable(
  repo: ZzRepo,
  caller: Caller,
  entity: object,
  tool: string,
): Promise<void> {
  const store = repo.store;
  if (!(store instanceof GitStore) || store.signsFor === null) return;
  const signsFor = store.signsFor;
  const person = personOf(caller.actor);
  if (person === signsFor) return;
  const who = `${tool} by ${caller.actor} cannot be written here: this zz process signs commits only for ${signsFor} and their agents, not for ${person}`;
  const register = `zz key add --actor ${person} --key "<your public key>"`;
  if (entity === repo.config) {
    throw new ZzError(
      'forbidden',
      `${who}; unsigned, a change to the repository's config (keys, owners, policy) is refused by every other clone. Ask an owner to make it (for your signing key: ${register}), or make it from your own clone with your own zz, signed by a key an owner has registered for you`,
    );
  }
  if ((await repo.config.read()).state.signed) {
    throw new ZzError(
      'forbidden',
      `${who}; this repository requires every op to be signed by a key of its actor. Write from your own clone with your own zz (zz serve, or the CLI), whose key signs, once an owner has registered that key: ${register}`,
    );
  }
}
