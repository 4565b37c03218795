import { describe, expect, it } from 'vitest';
import { roleTimeline } from '../../src/core/role-timeline.js';
import { parseConfigOp, type ConfigOp } from '../../src/schema/index.js';

// The config as of a Lane op's recorded time (role-timeline.ts): exactly the config ops at or
// before that time, folded in the config's publication order, whatever order the times are in.

const T0 = Date.parse('2026-12-01T00:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
let n = 0;
function op(
  actor: string,
  secs: number,
  spec: { op: string; args: Record<string, unknown> },
): ConfigOp {
  n++;
  const p = parseConfigOp({
    id: `op-${String(n).padStart(8, '0')}`,
    actor,
    lamport: n,
    time: at(secs),
    ...spec,
  });
  if (!p.ok) throw new Error(p.error);
  return p.op;
}
const init = (secs: number) =>
  op('o@x', secs, { op: 'repo_init', args: { owners: ['o@x'], default_branch: 'main' } });
const grant = (secs: number, who: string, revoke = false) =>
  op('o@x', secs, { op: 'role_grant', args: { grantee: who, role: 'owner', revoke } });

describe('role timeline', () => {
  it('in time order: each op counts from its time on; before the init, the init counts', () => {
    const t = roleTimeline([init(10), grant(20, 'c@x'), grant(30, 'c@x', true)]);
    expect(t.at(at(5))?.owners).toEqual(['o@x']);
    expect(t.at(at(19))?.owners).toEqual(['o@x']);
    expect(t.at(at(20))?.owners).toEqual(['o@x', 'c@x']);
    expect(t.at(at(29))?.owners).toEqual(['o@x', 'c@x']);
    expect(t.at(at(30))?.owners).toEqual(['o@x']);
  });

  it('a revocation published after a grant but recorded before a later op still counts for it', () => {
    // Published: init, grant at 20, then an offline owner's revocation recorded at 25 that
    // arrived after ops recorded at 40: those ops are judged without c@x as an owner.
    const t = roleTimeline([init(10), grant(20, 'c@x'), grant(50, 'd@x'), grant(25, 'c@x', true)]);
    expect(t.at(at(22))?.owners).toEqual(['o@x', 'c@x']);
    expect(t.at(at(40))?.owners).toEqual(['o@x']);
    expect(t.at(at(60))?.owners).toEqual(['o@x', 'd@x']);
  });

  it('no config at all: nobody is an owner', () => {
    expect(roleTimeline([]).at(at(1))).toBeNull();
  });
});
