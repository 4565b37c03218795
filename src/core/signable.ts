import { ZzError } from '../errors.js';
import { personOf } from '../schema/ids.js';
import { normalizeKeyLine } from '../git/index.js';
import { GitStore } from '../store/index.js';
import { isActorKey, isOwnerKey, type ConfigState } from './config-state.js';
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
 * Throws `forbidden` when `caller`'s write to `entity` would be committed unsigned, or signed
 * by a key refs/zz/config does not list as needed, and so refused on import (the rules of
 * sync/authenticity.ts ownerOpProblem and the signed-repository check). Reads the config
 * only when this process signs. A Lane's write checks inside its group commit instead
 * (signableCheck, write-op.ts), against the config that group read anyway.
 */
export async function assertSignable(
  repo: ZzRepo,
  caller: Caller,
  entity: object,
  tool: string,
): Promise<void> {
  const check = await signableCheck(repo, caller, entity, tool);
  if (check) check((await repo.config.read()).state);
}

/**
 * assertSignable in two steps: what needs no config (whom this process signs for, the key it
 * has for the caller: looked up now, asynchronously), then a synchronous check against a
 * config state, which a Lane's write runs in decide() against the config its group commit
 * read (ZzRepo.configStateSeenByLanes): no read of refs/zz/config a write (every signed write
 * read it here before, ~25 µs of a write's CPU), and a config at least as fresh as one read
 * when the request arrived. Null when this process signs for nobody (nothing to check).
 */
export async function signableCheck(
  repo: ZzRepo,
  caller: Caller,
  entity: object,
  tool: string,
): Promise<((state: ConfigState) => void) | null> {
  const store = repo.store;
  if (!(store instanceof GitStore) || store.signsFor === null) return null;
  const signsFor = store.signsFor;
  const person = personOf(caller.actor);
  const isConfig = entity === repo.config;
  if (person !== signsFor) {
    // A change to the config is refused whatever the config says: before any read of it.
    if (isConfig) refuseForeign(null, caller, true, tool, signsFor);
    return (state) => refuseForeign(state, caller, false, tool, signsFor);
  }
  // (repo_init is no writeOp: initRepo registers the key that signs it, trust on first use.)
  // The key is looked up whether or not the repository requires signatures: the commit signs
  // with it anyway (GitStore.commit), and the lookup is remembered (signAs, signInProcess).
  const key = (await store.signer?.(caller.actor)) ?? null;
  return (state) => {
    if (!isConfig && !state.signed) return;
    if (key === null) {
      throw new ZzError(
        'forbidden',
        `${tool} by ${caller.actor} cannot be written here: no signing key on this machine for ${person}: run zz init (unsigned, ${isConfig ? "a change to the repository's config" : 'an op in this repository, which requires signatures,'} is refused by every other clone)`,
      );
    }
    if (!state.config) return; // not initialised: the write's own check says so
    const line = normalizeKeyLine(key.publicKey);
    // For the config an owner's key counts, and so does the actor's own (who may make the op
    // is then the guarded fold's question, which decide() already asks here).
    if (isActorKey(state, caller.actor, line) || (isConfig && isOwnerKey(state, line))) return;
    throw new ZzError(
      'forbidden',
      `${tool} by ${caller.actor} cannot be written here: this machine's signing key for ${person} is not registered in refs/zz/config, so every other clone would refuse ${isConfig ? "this change to the repository's config" : 'this op (the repository requires signatures)'}. ${registerKeyAdvice(state, person, line ?? key.publicKey)}`,
    );
  };
}

/**
 * What to run, and where, so that `line` counts as `person`'s key: a key_add is itself a
 * change to the config, taken by other clones only when signed by a key already registered
 * (the person's own, from another machine of theirs, or an owner's). Run on the machine whose
 * key is not registered, it is refused (assertSignable), so the advice names the other one.
 * One sentence, for `zz init`'s note, the daemon's log and the refusal alike.
 */
export function registerKeyAdvice(state: ConfigState, person: string, line: string): string {
  const cmd = `zz key add --actor ${person} --key "${line}"`;
  const theirs = (state.keys.get(person) ?? []).length > 0;
  const owners = state.config?.owners ?? [];
  const others = owners.filter((o) => o !== person);
  const named = `${others.slice(0, 5).join(', ')}${others.length > 5 ? ', …' : ''}`;
  const where = theirs
    ? `another machine of yours whose key refs/zz/config lists${others.length ? ` (or on an owner's: ${named})` : ''}`
    : `the machine of an owner whose key refs/zz/config lists${others.length ? ` (${named})` : ''}`;
  return `Not here (an unregistered key cannot vouch for itself) but on ${where}, run: ${cmd} ; then zz sync there, and zz sync here`;
}

/** A caller of another person than the one this process signs for (its commits unsigned). */
function refuseForeign(
  state: ConfigState | null,
  caller: Caller,
  isConfig: boolean,
  tool: string,
  signsFor: string,
): void {
  const person = personOf(caller.actor);
  const who = `${tool} by ${caller.actor} cannot be written here: this zz process signs commits only for ${signsFor} and their agents, not for ${person}`;
  const register = `zz key add --actor ${person} --key "<your public key>"`;
  if (isConfig) {
    throw new ZzError(
      'forbidden',
      `${who}; unsigned, a change to the repository's config (keys, owners, policy) is refused by every other clone. Ask an owner to make it (for your signing key: ${register}), or make it from your own clone with your own zz, signed by a key an owner has registered for you`,
    );
  }
  if (state?.signed) {
    throw new ZzError(
      'forbidden',
      `${who}; this repository requires every op to be signed by a key of its actor. Write from your own clone with your own zz (zz serve, or the CLI), whose key signs, once an owner has registered that key: ${register}`,
    );
  }
}
