import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { httpClient } from '../../src/cli/client.js';
import { initRepo, ladderBuild } from '../../src/core/index.js';
import { startTestDaemon, type TestDaemon } from '../helpers/test-daemon.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';
import { fakeModelServer, type FakeModelServer } from '../models/fake-model-server.js';
import {
  AGENT,
  OWNER,
  demoLane,
  fakeOpenAI,
  goodChange,
  workOnce,
  type Served,
} from './harness.js';

// `zz work`'s "Relevant Ladder rungs" come from the repository it works on alone, though the
// daemon's search index spans every repository it serves and the agent may read another (a
// public one here): a rung of another codebase in the prompt reads as this one's.

let t: TestDaemon | null = null;
let server: FakeModelServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
  await t?.close();
  t = null;
});

function checkout(key: string, file: string): string {
  const { dir } = makeRepo('zz-work-scope-');
  sh(dir, 'config', 'zz.repo', key);
  writeFileSync(
    join(dir, file),
    `// The bluefalcon ledger of ${key}.\nexport const ledger = [];\n`,
  );
  sh(dir, 'add', '.');
  sh(dir, 'commit', '-q', '-m', 'bluefalcon');
  return dir;
}

describe('zz work context', () => {
  it('lists Ladder rungs of its own repository only', async () => {
    const other = checkout('acme/other', 'omega-ledger.js');
    t = await startTestDaemon({
      dir: checkout('acme/main', 'alpha-ledger.js'),
      owner: OWNER,
      daemon: { repos: [other] },
    });
    const pub = t.daemon.repos.get('acme/other')!;
    await initRepo(pub, { owner: OWNER, default_branch: 'main', visibility: 'public' });
    await ladderBuild(t.repo, { actor: OWNER });
    await ladderBuild(pub, { actor: OWNER });
    const agent = httpClient(t.url, t.key, await t.token(AGENT, 'bot'));
    const owner = httpClient(t.url, t.key, await t.token(OWNER, 'login'));
    // Both Ladders are searchable for the agent (the other repository is public).
    const until = Date.now() + 30_000;
    for (;;) {
      const r = await agent.call('ladder_search', { query: 'bluefalcon ledger', limit: 50 });
      const paths = (r.hits as { path: string }[]).map((h) => h.path);
      if (paths.includes('alpha-ledger.js') && paths.includes('omega-ledger.js')) break;
      if (Date.now() > until) throw new Error(`never indexed: ${paths.join(', ')}`);
      await new Promise((res) => setTimeout(res, 50));
    }
    const s = {
      repoKey: t.key,
      agent: (tool: string, args: Record<string, unknown>) => agent.call(tool, args),
      owner: (tool: string, args: Record<string, unknown>) => owner.call(tool, args),
    } as unknown as Served;
    const lane = await demoLane(s);
    await s.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Fix the bluefalcon ledger' });
    server = await fakeModelServer(() => goodChange);
    const { summary } = await workOnce(s, fakeOpenAI(server), lane);
    expect(summary).toMatchObject({ answered: 1 });
    const prompt = JSON.stringify(server.requests[0]!.body.messages);
    expect(prompt).toContain('Relevant Ladder rungs');
    expect(prompt).toContain('alpha-ledger.js');
    expect(prompt).not.toContain('omega-ledger.js');
  });
});
