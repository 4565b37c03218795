import { expect } from 'vitest';
import { type ToolName } from '../../../src/tools/index.js';
import { type ZzRepo } from '../../../src/core/index.js';
import type { FakeClock } from '../../helpers/core-fixture.js';
import { ALICE, BOB, call, OWNER } from '../../helpers/core-fixture.js';
import {
  ACTORS,
  BOGUS_ASK,
  type Outcome,
  BUILTIN,
  SERVER_POSTED,
  KINDS,
  CUSTOM_KINDS,
  type MAsk,
} from './model.js';
import { type Action, type Step, POST, CLAIM, ANSWER } from './actions.js';
import { attempt, expectCode, RunnerBase, alter } from './runner-base.js';

// properties.test.ts's Runner: one random action run against the repository and the model
// (run), the set-up of a run and the loop of steps with their checks.

export class Runner extends RunnerBase {
  async run(a: Step): Promise<void> {
    const m = this.model;
    switch (a.t) {
      case 'propose': {
        const actor = ACTORS[a.actor]!;
        const args: Record<string, unknown> = { lane_id: a.lane, title: `Lane ${a.lane}` };
        if (a.maintainers) args.maintainers = a.maintainers.map((i) => ACTORS[i]!);
        if (a.kinds) args.ask_kinds = CUSTOM_KINDS;
        if (a.related) args.related_lanes = [a.related === 1 ? 'l1' : 'nope'];
        if (a.key) args.idempotency_key = m.newKey();
        if (a.spoof) args.from = this.spoofed(actor);
        const want =
          a.lane === '_repo'
            ? 'invalid_argument'
            : a.spoof
              ? 'forbidden'
              : a.related === 2
                ? 'not_found'
                : m.lanes.has(a.lane)
                  ? 'conflict'
                  : 'ok';
        const out = await attempt(call(this.repo, { actor }, 'lane_propose', args));
        expectCode(out, want, `lane_propose ${a.lane} by ${actor}`);
        if (out.code === 'ok') {
          const lane = (out.value as { lane: Record<string, unknown> }).lane;
          expect(lane.coordinators).toEqual([actor]);
          m.addLane(
            a.lane,
            [actor],
            (args.maintainers as string[] | undefined) ?? [actor],
            a.kinds ? CUSTOM_KINDS : {},
            out.value.revision as string,
          );
        }
        this.remember(actor, 'lane_propose', args, out, a.lane);
        return;
      }
      case 'post': {
        const laneId = this.lane(a.lane);
        const l = m.lanes.get(laneId);
        const coordinator = l?.coordinators[a.actor % l.coordinators.length];
        const actor = a.asCoordinator && coordinator ? coordinator : ACTORS[a.actor]!;
        const kind = KINDS[a.kind]!;
        const deps = [
          ...(l && l.asks.length > 0 ? a.deps.map((i) => l.asks[i % l.asks.length]!) : []),
          ...(a.bogusDep ? [BOGUS_ASK] : []),
        ];
        const args: Record<string, unknown> = { lane_id: laneId, kind, title: `${kind} task` };
        if (deps.length) args.depends_on = deps;
        if (a.priority !== null) args.priority = a.priority;
        if (a.key) args.idempotency_key = m.newKey();
        if (a.spoof) args[a.kind % 2 ? 'from' : 'actor'] = this.spoofed(actor);
        const want = a.spoof
          ? 'forbidden'
          : !l
            ? 'not_found'
            : !(kind in BUILTIN) && !(kind in l.kinds)
              ? 'invalid_argument' // a kind neither built in nor defined by the Lane
              : // resolve_conflict: the server's alone, not even a coordinator's by hand.
                SERVER_POSTED.has(kind) &&
                  (kind === 'resolve_conflict' || !m.isCoordinator(l, actor))
                ? 'forbidden'
                : a.bogusDep
                  ? 'not_found'
                  : 'ok';
        const out = await attempt(call(this.repo, { actor }, 'ask_post', args));
        expectCode(out, want, `ask_post ${kind} in ${laneId} by ${actor}`);
        if (out.code === 'ok' && l) {
          const ask = (out.value as { ask: { ask_id: string; blocked: boolean } }).ask;
          const k: MAsk = {
            id: ask.ask_id,
            lane: laneId,
            kind,
            priority: a.priority ?? 2,
            posted: m.now(),
            deps: [...new Set(deps)],
            state: 'open',
            holder: null,
            until: null,
            outcome: null,
            openLease: null,
          };
          expect(m.asks.has(k.id)).toBe(false);
          m.asks.set(k.id, k);
          l.asks.push(k.id);
          expect(ask.blocked).toBe(m.blocked(k));
          m.count(l, 'ask_post');
          this.commitRevision(l, out);
        }
        this.remember(actor, 'ask_post', args, out, laneId);
        return;
      }
      case 'claim': {
        const [laneId, askId] = this.pick(a.ask, 'open', a.focus, a.target);
        const actor = a.byScope ? this.inScopeActor(a.actor, askId) : ACTORS[a.actor]!;
        const args: Record<string, unknown> = { lane_id: laneId, ask_id: askId };
        if (a.lease !== null) args.lease_seconds = a.lease;
        if (a.key) args.idempotency_key = m.newKey();
        if (a.spoof) args.actor = this.spoofed(actor);
        const rev = this.revArg(laneId, a.rev);
        if (rev.expected_revision) args.expected_revision = rev.expected_revision;
        const want = a.spoof
          ? 'forbidden'
          : rev.stale
            ? 'revision_mismatch'
            : this.claimWant(laneId, askId, actor);
        const out = await attempt(call(this.repo, { actor }, 'ask_claim', args));
        expectCode(out, want, `ask_claim ${askId} in ${laneId} by ${actor}`);
        if (out.code === 'ok') this.applyClaim(laneId, askId, actor, a.lease, out);
        this.remember(actor, 'ask_claim', args, out, laneId);
        return;
      }
      case 'race': {
        // Distinct actors claim one Ask at once: at most one wins, and one does whenever any
        // of them may claim it.
        const [laneId, askId] = this.pick(a.ask, 'open');
        const actors = a.actors.map((i) => ACTORS[i]!);
        const wants = actors.map((x) => this.claimWant(laneId, askId, x));
        const outs = await Promise.all(
          actors.map((x) =>
            attempt(call(this.repo, { actor: x }, 'ask_claim', { lane_id: laneId, ask_id: askId })),
          ),
        );
        const winners = outs.flatMap((o, i) => (o.code === 'ok' ? [i] : []));
        const eligible = wants.flatMap((w, i) => (w === 'ok' ? [i] : []));
        expect(winners.length).toBe(eligible.length > 0 ? 1 : 0);
        outs.forEach((o, i) => {
          if (wants[i] !== 'ok') expectCode(o, wants[i]!, `racing ask_claim by ${actors[i]}`);
          else if (o.code !== 'ok')
            expectCode(o, 'already_claimed', `racing ask_claim by ${actors[i]}`);
        });
        if (winners.length === 1) {
          const w = winners[0]!;
          this.applyClaim(laneId, askId, actors[w]!, null, outs[w]!);
        }
        return;
      }
      case 'release': {
        const [laneId, askId] = this.pick(a.ask, 'claimed');
        const actor = this.actorFor(a.actor, a.byHolder, askId);
        const l = m.lanes.get(laneId);
        const k = m.asks.get(askId);
        const args: Record<string, unknown> = { lane_id: laneId, ask_id: askId };
        if (a.key) args.idempotency_key = m.newKey();
        if (a.spoof) args.actor = this.spoofed(actor);
        const rev = this.revArg(laneId, a.rev);
        if (rev.expected_revision) args.expected_revision = rev.expected_revision;
        const want = a.spoof
          ? 'forbidden'
          : rev.stale
            ? 'revision_mismatch'
            : !l || !k || k.lane !== laneId
              ? 'not_found'
              : k.state !== 'claimed'
                ? 'conflict'
                : k.holder !== actor && !m.isCoordinator(l, actor)
                  ? 'forbidden'
                  : 'ok';
        const out = await attempt(call(this.repo, { actor }, 'ask_release', args));
        expectCode(out, want, `ask_release ${askId} in ${laneId} by ${actor}`);
        if (out.code === 'ok' && l && k) {
          m.touch(l, k);
          k.state = 'open';
          k.holder = null;
          k.until = null;
          m.count(l, 'ask_release');
          this.commitRevision(l, out);
        }
        this.remember(actor, 'ask_release', args, out, laneId);
        return;
      }
      case 'answer': {
        const [laneId, askId] = this.pick(a.ask, 'claimed', a.focus, a.target);
        const actor = this.actorFor(a.actor, a.byHolder, askId);
        const l = m.lanes.get(laneId);
        const k = m.asks.get(askId);
        const k0 = this.model.asks.get(askId);
        // Mostly an outcome the kind accepts (so that reviews get granted), else any.
        const outcome =
          a.fitting && k0 && a.outcome !== 'approve'
            ? (BUILTIN[k0.kind]?.outcomes[a.ask % 2] ??
              (a.outcome === 'grant' ? 'deny' : a.outcome))
            : a.outcome;
        const args: Record<string, unknown> = { lane_id: laneId, ask_id: askId, outcome };
        if (a.result) args.result = `answer from ${actor}`;
        if (a.changeset)
          args.changeset = {
            base: this.base,
            message: 'Change',
            files: [{ path: `src/f${a.ask % 7}.txt`, content: `v${a.ask}\n` }],
          };
        if (a.key) args.idempotency_key = m.newKey();
        if (a.spoof) args.actor = this.spoofed(actor);
        const rule = l && k ? m.rule(l, k.kind) : null;
        const want =
          outcome === 'approve'
            ? 'invalid_argument'
            : a.spoof
              ? 'forbidden'
              : !l || !k || !rule || k.lane !== laneId
                ? 'not_found'
                : k.state === 'answered'
                  ? 'conflict'
                  : !m.inScope(l, k.kind, actor)
                    ? 'forbidden'
                    : k.state !== 'claimed' || k.holder !== actor
                      ? 'forbidden'
                      : m.expired(k)
                        ? 'conflict'
                        : !rule.outcomes.includes(outcome as Outcome)
                          ? 'invalid_argument'
                          : a.changeset && !(k.kind === 'work' && outcome === 'complete')
                            ? 'invalid_argument'
                            : k.kind === 'work' &&
                                outcome === 'complete' &&
                                !a.changeset &&
                                !a.result
                              ? 'invalid_argument'
                              : 'ok';
        const out = await attempt(call(this.repo, { actor }, 'ask_answer', args));
        expectCode(out, want, `ask_answer ${outcome} on ${k?.kind} ${askId} by ${actor}`);
        if (out.code === 'ok' && l && k) {
          m.touch(l, k);
          k.state = 'answered';
          k.until = null;
          k.outcome = outcome as Outcome;
          m.count(l, 'ask_answer');
          const v = out.value as {
            follow_ups: Array<{ ask_id: string; kind: string; posted_by: string }>;
            changeset_id: string | null;
          };
          expect(v.changeset_id === null).toBe(!a.changeset);
          const wantKinds =
            k.kind === 'work' && outcome === 'complete' && a.changeset
              ? ['changeset_review']
              : k.kind === 'changeset_review'
                ? [outcome === 'grant' ? 'submit_changeset' : 'work']
                : [];
          expect(v.follow_ups.map((f) => f.kind)).toEqual(wantKinds);
          for (const f of v.follow_ups) {
            const fk: MAsk = {
              id: f.ask_id,
              lane: laneId,
              kind: f.kind,
              priority: k.priority,
              posted: m.now(),
              deps: [],
              state: 'open',
              holder: null,
              until: null,
              outcome: null,
              openLease: null,
            };
            m.asks.set(fk.id, fk);
            l.asks.push(fk.id);
            m.count(l, 'ask_post');
          }
          this.commitRevision(l, out);
        }
        this.remember(actor, 'ask_answer', args, out, laneId);
        return;
      }
      case 'grant': {
        const actor = ACTORS[a.actor]!;
        const grantee = ACTORS[a.grantee]!;
        const laneId = this.lane(a.lane);
        const l = m.lanes.get(laneId);
        const args: Record<string, unknown> = { lane_id: laneId, grantee, role: a.role };
        if (a.revoke) args.revoke = true;
        if (a.key) args.idempotency_key = m.newKey();
        if (a.spoof) args.actor = this.spoofed(actor);
        const rev = this.revArg(laneId, a.rev);
        if (rev.expected_revision) args.expected_revision = rev.expected_revision;
        const want = a.spoof
          ? 'forbidden'
          : rev.stale
            ? 'revision_mismatch'
            : !l
              ? 'not_found'
              : !m.isCoordinator(l, actor) && !m.isOwner(actor)
                ? 'forbidden'
                : a.revoke &&
                    a.role === 'coordinator' &&
                    laneId !== '_repo' &&
                    l.coordinators.every((c) => c === grantee)
                  ? 'conflict'
                  : 'ok';
        const out = await attempt(call(this.repo, { actor }, 'lane_grant', args));
        expectCode(
          out,
          want,
          `lane_grant ${a.revoke ? 'revoke' : 'grant'} ${a.role} ${grantee} in ${laneId} by ${actor}`,
        );
        if (out.code === 'ok' && l) {
          const field = a.role === 'coordinator' ? 'coordinators' : 'maintainers';
          l[field] = l[field].filter((x) => x !== grantee);
          if (!a.revoke) l[field].push(grantee);
          m.count(l, 'lane_grant');
          this.commitRevision(l, out);
        }
        this.remember(actor, 'lane_grant', args, out, laneId);
        return;
      }
      case 'role': {
        const actor = ACTORS[a.actor]!;
        const grantee = ACTORS[a.grantee]!;
        const args: Record<string, unknown> = { grantee, role: 'owner' };
        if (a.revoke) args.revoke = true;
        if (a.key) args.idempotency_key = m.newKey();
        if (a.spoof) args.actor = this.spoofed(actor);
        const want = a.spoof
          ? 'forbidden'
          : !m.isOwner(actor)
            ? 'forbidden'
            : a.revoke && m.owners.every((o) => o === grantee)
              ? 'conflict'
              : 'ok';
        const out = await attempt(call(this.repo, { actor }, 'role_grant', args));
        expectCode(out, want, `role_grant ${a.revoke ? 'revoke' : 'grant'} ${grantee} by ${actor}`);
        if (out.code === 'ok') {
          m.owners = m.owners.filter((o) => o !== grantee);
          if (!a.revoke) m.owners.push(grantee);
          expect((out.value as { owners: string[] }).owners).toEqual(m.owners);
        }
        this.remember(actor, 'role_grant', args, out, null);
        return;
      }
      case 'advance':
        this.clock.advance(a.seconds);
        return;
      case 'flow': {
        const newest = (kind: string) => {
          const ks = [...m.asks.values()].filter((k) => k.kind === kind && k.state === 'open');
          return ks.at(-1)?.id;
        };
        const before = m.asks.size;
        await this.run({ ...POST, actor: a.actor, asCoordinator: true, lane: a.lane });
        if (m.asks.size === before) return;
        const work = [...m.asks.keys()].at(-1)!;
        await this.run({ ...CLAIM, actor: a.actor, target: work });
        await this.run({ ...ANSWER, actor: a.actor, key: a.key, target: work });
        const review = newest('changeset_review');
        if (!review) return;
        await this.run({ ...CLAIM, actor: a.actor, target: review });
        const outcome = a.grant ? 'grant' : 'deny';
        await this.run({ ...ANSWER, actor: a.actor, outcome, changeset: false, target: review });
        return;
      }
      case 'replay': {
        if (m.keyed.length === 0) return;
        const prior = m.keyed[a.pick % m.keyed.length]!;
        const args = a.alter ? alter(prior.tool, prior.args) : prior.args;
        const out = await attempt(
          call(this.repo, { actor: prior.actor }, prior.tool as ToolName, args),
        );
        const what = `${a.alter ? 'altered ' : ''}replay of ${prior.tool} ${JSON.stringify(prior.args)} by ${prior.actor}`;
        if (a.alter) {
          expectCode(out, 'idempotency_conflict', what);
          return;
        }
        expectCode(out, 'ok', what);
        expect(out.code === 'ok' && out.value.replayed, what).toBe(true);
        if (out.code === 'ok' && prior.lane) {
          // Nothing new was written: the revision is still the latest one.
          expect(out.value.revision).toBe(m.lanes.get(prior.lane)!.revisions.at(-1));
        }
        return;
      }
    }
  }
}

export async function setup(repo: ZzRepo, clock: FakeClock, base: string): Promise<Runner> {
  const r = new Runner(repo, clock, base);
  const repoLane = await repo.lane('_repo').read();
  r.model.addLane('_repo', [OWNER.actor], [OWNER.actor], {}, repoLane.revision!);
  const l1 = await call(repo, ALICE, 'lane_propose', {
    lane_id: 'l1',
    title: 'Lane one',
    maintainers: [BOB.actor],
    ask_kinds: CUSTOM_KINDS,
  });
  r.model.addLane('l1', [ALICE.actor], [BOB.actor], CUSTOM_KINDS, l1.revision);
  // A few Asks to start from, so that short runs claim and answer something.
  await r.run({ ...POST, actor: 1 });
  await r.run({ ...POST, actor: 2, kind: 7, priority: 1 });
  await r.run({ ...POST, actor: 3, deps: [0], priority: 0 });
  return r;
}

export const TIMES = { run: 0, check: 0 };
export async function runAll(r: Runner, actions: Action[], fold: (step: number) => boolean) {
  await r.check({ fold: true, validate: true });
  for (let i = 0; i < actions.length; i++) {
    await r.run(actions[i]!);
    const last = i === actions.length - 1;
    await r.check({ fold: fold(i) || last, validate: last });
  }
}
