import { describe, expect, it } from 'vitest';
import { localSandbox, type Sandbox } from '../../src/work/index.js';
import { TEST_TAIL } from '../../src/work/flows.js';
import { fakeModelServer, reply } from '../models/fake-model-server.js';
import { AGENT, asksOf, demoLane, endEachTest, fakeOpenAI, served, workOnce } from './harness.js';

// --test-cmd runs model-written code as the user: a test that read ~/.config/zz and
// /proc/*/environ printed tokens, and its output went into the Ask's deny answer, to every
// member and remote. The answer now carries only the tail of the output, secrets out; so does
// what is fed back to the model. A real daemon over HTTP, a real sandbox, a fake model.

const t = endEachTest();
const API_KEY = 'sk-live-0123456789abcdefXYZ';

describe('test output in an answer', () => {
  it('is its tail, with zz tokens and known keys taken out', async () => {
    const s = (t.s = await served());
    const lane = await demoLane(s);
    await s.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Write check.mjs' });
    // The model's own test prints the agent's real token and the API key, padding, and again.
    const leak = `console.log(${JSON.stringify(`creds: {"token":"${s.agentToken}"} OPENAI_API_KEY=${API_KEY}`)});`;
    const script =
      `${leak}\nfor (let i = 0; i < 500; i++) console.log('filler line ' + i);\n` +
      `${leak}\nconsole.error('pad'.repeat(100)); console.log(${JSON.stringify(s.agentToken.slice(0, 30))});\nprocess.exitCode = 1;\n`;
    const model = (t.model = await fakeModelServer(() =>
      reply(JSON.stringify({ message: 'check', files: [{ path: 'check.mjs', content: script }] })),
    ));
    const sandbox: Sandbox = await localSandbox({
      cwd: s.dir,
      repoKey: s.repoKey,
      actor: AGENT,
      command: ['node', 'check.mjs'],
    });
    try {
      await workOnce(s, fakeOpenAI(model), lane, { sandbox, testRounds: 2, secrets: [API_KEY] });
    } finally {
      await sandbox.close();
    }
    const work = (await asksOf(s, lane)).find((a) => a.kind === 'work')!;
    expect(work.answer?.outcome).toBe('deny');
    const result = work.answer!.result!;
    expect(result).toMatch(/Tests still fail after 2 rounds/);
    expect(result).not.toContain(s.agentToken.slice(4, 20));
    expect(result).not.toContain(API_KEY);
    expect(result).toContain('[redacted]');
    // Only the tail: the last lines, not the first of the 500.
    expect(result.length).toBeLessThan(TEST_TAIL + 200);
    expect(result).not.toContain('filler line 0\n');
    // Nor does the model endpoint (another machine) get them back.
    expect(model.requests).toHaveLength(2);
    const fedBack = JSON.stringify(model.requests[1]!.body.messages.at(-1));
    expect(fedBack).toContain('filler line 499');
    expect(fedBack).not.toContain(s.agentToken.slice(4, 20));
    expect(fedBack).not.toContain(API_KEY);
  });
});
