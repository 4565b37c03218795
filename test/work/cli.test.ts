import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, killAll, privateEnv, spawnZz, zz } from '../e2e/zz-process.js';
import { asksOf, demoLane, served, type Served } from './harness.js';

// The built `zz work` as a person runs it: against the checkout's daemon (found through
// daemon.json) with ZZ_TOKEN, an exec: model, output on a pipe, --json, and Ctrl-C.

let s: Served | null = null;
const dirs: string[] = [];
beforeAll(() => ensureBuilt());
afterEach(async () => {
  await killAll();
  await s?.cleanup();
  s = null;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function agentScript(body: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'zz-cli-agent-'));
  dirs.push(dir);
  const file = join(dir, 'agent.mjs');
  writeFileSync(
    file,
    `const chunks = []; process.stdin.on('data', (c) => chunks.push(c));
process.stdin.on('end', () => { const req = JSON.parse(Buffer.concat(chunks).toString('utf8')); ${body} });\n`,
  );
  chmodSync(file, 0o755);
  return file;
}

const CHANGE = JSON.stringify({
  object: { message: 'Add NOTES.md', files: [{ path: 'NOTES.md', content: 'notes\n' }] },
  usage: { input_tokens: 120, output_tokens: 30 },
});

async function setup(): Promise<{ env: NodeJS.ProcessEnv; lane: string }> {
  s = await served();
  const lane = await demoLane(s);
  return { env: privateEnv({ ZZ_TOKEN: s.agentToken }), lane };
}

describe('zz work (the binary)', () => {
  it('prints one line per step on a pipe and exits 0 after --once', async () => {
    const { env, lane } = await setup();
    await s!.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Write \x1b[31mNOTES.md' });
    const script = agentScript(`process.stdout.write(${JSON.stringify(CHANGE)});`);
    const r = await zz(s!.dir, env, [
      'work',
      '--lane',
      lane,
      '--once',
      '--model',
      `exec:node ${script}`,
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toBe(`zz work: lane demo as owner@example.com[bot] with exec:node ${script}`);
    expect(lines[1]).toMatch(/^ask-[0-9a-f]{10} claimed \(work\): Write \\x1b\[31mNOTES\.md$/);
    expect(lines.slice(2, -2).map((l) => l.replace(/^ask-\w+ /, ''))).toEqual([
      'context',
      'model',
      'answer complete',
    ]);
    expect(lines.at(-2)).toMatch(
      /^ask-\w+ answered complete in \d+\.\ds, changeset cs-\w+; follow-up ask-\w+ \(changeset_review\)$/,
    );
    expect(lines.at(-1)).toBe(
      'done: 1 ask (1 answered, 0 released); model usage 120 tokens in, 30 out, 1 call',
    );
  });

  it('says there is nothing to do and exits 0; --json prints one event per line', async () => {
    const { env, lane } = await setup();
    const r = await zz(s!.dir, env, ['work', '--lane', lane, '--once', '--model', 'exec:true']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('nothing to do in lane demo');
    const j = await zz(s!.dir, env, [
      'work',
      '--lane',
      lane,
      '--once',
      '--json',
      '--model',
      'exec:true',
    ]);
    expect(j.code).toBe(0);
    const events = j.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string });
    expect(events.map((e) => e.type)).toEqual(['start', 'idle', 'done']);
    expect(events[2]).toMatchObject({ asks: 0, usage: { calls: 0 } });
  });

  it('releases the claim on Ctrl-C (SIGINT) and exits', async () => {
    const { env, lane } = await setup();
    const posted = await s!.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Slow work' });
    const askId = (posted.ask as { ask_id: string }).ask_id;
    const script = agentScript(`setInterval(() => {}, 1000);`);
    const child = spawnZz(s!.dir, env, [
      'work',
      '--lane',
      lane,
      '--json',
      '--model',
      `exec:node ${script}`,
    ]);
    child.stdin.end();
    let out = '';
    await new Promise<void>((resolve) => {
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString('utf8');
        if (out.includes('"step":"model"')) resolve();
      });
    });
    expect((await asksOf(s!, lane)).find((a) => a.ask_id === askId)!.state).toBe('claimed');
    child.kill('SIGINT');
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(code).toBe(0);
    const types = out
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { type: string }).type);
    expect(types.slice(-3)).toEqual(['error', 'released', 'done']);
    const ask = (await asksOf(s!, lane)).find((a) => a.ask_id === askId)!;
    expect(ask).toMatchObject({ state: 'open', holder: null });
  });
});
