import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, privateEnv, spawnZz, ZZ_MAIN, zz } from '../e2e/zz-process.js';
import { zzMain } from '../helpers/cli-harness.js';
import { sh } from '../helpers/temp-repo.js';
import { fakeModelServer } from '../models/fake-model-server.js';
import { asksOf, demoLane, endEachTest, served } from './harness.js';

// The built `zz work` as a person runs it: against the checkout's daemon (found through
// daemon.json) with ZZ_TOKEN, an exec: model, output on a pipe, --json, and Ctrl-C.
// The tests of the process (output on a pipe and a pty, signals, a run stopped from outside)
// spawn the built zz; the others, about what `zz work` does and says, run it as the built zz
// would (zzMain) in this process: each spawn cost 0.6-1 s of CPU.

const t = endEachTest();
const dirs: string[] = [];
beforeAll(() => ensureBuilt());
afterEach(() => {
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

/** `zz work --lane LANE --once [extra…] --model MODEL`, run in this process as the built zz. */
function work(env: NodeJS.ProcessEnv, lane: string, model: string, ...extra: string[]) {
  return zzMain(t.s!.dir, env, ['work', '--lane', lane, '--once', ...extra, '--model', model]);
}

const CHANGE = JSON.stringify({
  object: { message: 'Add NOTES.md', files: [{ path: 'NOTES.md', content: 'notes\n' }] },
  usage: { input_tokens: 120, output_tokens: 30 },
});

async function setup(): Promise<{ env: NodeJS.ProcessEnv; lane: string }> {
  t.s = await served();
  const lane = await demoLane(t.s);
  return { env: privateEnv({ ZZ_TOKEN: t.s.agentToken }), lane };
}

describe('zz work (the binary)', () => {
  it('prints one line per step on a pipe and exits 0 after --once', async () => {
    const { env, lane } = await setup();
    await t.s!.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Write \x1b[31mNOTES.md' });
    const script = agentScript(`process.stdout.write(${JSON.stringify(CHANGE)});`);
    const r = await zz(t.s!.dir, env, [
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
    const r = await work(env, lane, 'exec:true');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('nothing to do in lane demo');
    const j = await work(env, lane, 'exec:true', '--json');
    expect(j.code).toBe(0);
    const events = j.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string });
    expect(events.map((e) => e.type)).toEqual(['start', 'idle', 'done']);
    expect(events[2]).toMatchObject({ asks: 0, usage: { calls: 0 } });
  });

  // Ctrl-C, and the SIGTERM a service manager or `kill` sends. (SIGHUP is left alone on
  // purpose: a handler would override `nohup zz work &`.)
  it.each(['SIGINT', 'SIGTERM'] as const)('releases the claim on %s and exits', async (sig) => {
    const { env, lane } = await setup();
    const posted = await t.s!.owner('ask_post', {
      lane_id: lane,
      kind: 'work',
      title: 'Slow work',
    });
    const askId = (posted.ask as { ask_id: string }).ask_id;
    const script = agentScript(`setInterval(() => {}, 1000);`);
    const child = spawnZz(t.s!.dir, env, [
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
    expect((await asksOf(t.s!, lane)).find((a) => a.ask_id === askId)!.state).toBe('claimed');
    child.kill(sig);
    const end = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
      (resolve) => child.once('close', (code, signal) => resolve({ code, signal })),
    );
    // After releasing, Ctrl-C ends zz by the signal itself (a shell loop around it stops);
    // SIGTERM, a service manager's orderly stop, is a clean exit.
    expect(end).toEqual(
      sig === 'SIGINT' ? { code: null, signal: 'SIGINT' } : { code: 0, signal: null },
    );
    const types = out
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { type: string }).type);
    expect(types.slice(-3)).toEqual(['error', 'released', 'done']);
    const ask = (await asksOf(t.s!, lane)).find((a) => a.ask_id === askId)!;
    expect(ask).toMatchObject({ state: 'open', holder: null });
  });

  // Every lost-race refusal used to read "its claim went to someone else", also for an Ask
  // cancelled while the model worked (found in review): the daemon's refusal says what happened.
  it('--once: an Ask cancelled while the model worked is said to be cancelled', async () => {
    const { env, lane } = await setup();
    const posted = await t.s!.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Doomed' });
    const askId = (posted.ask as { ask_id: string }).ask_id;
    // The model works until the test has cancelled the Ask (a file appears), then gives up: a
    // fixed 3 s here both cost 3 s a run and, on a machine loaded enough that the cancel took
    // longer, let the model give up first. Its own bound (60 s) ends it should the test fail
    // before the cancel and leave it orphaned.
    const flagDir = mkdtempSync(join(tmpdir(), 'zz-cli-cancelled-'));
    dirs.push(flagDir);
    const cancelled = join(flagDir, 'cancelled');
    const script = agentScript(
      `import('node:fs').then(({ existsSync }) => { const start = Date.now(); setInterval(() => {
  if (existsSync(${JSON.stringify(cancelled)}) || Date.now() - start > 60000) { process.stderr.write('model gave up'); process.exit(2); }
}, 20); });`,
    );
    const child = spawnZz(t.s!.dir, env, [
      'work',
      '--lane',
      lane,
      '--once',
      '--model',
      `exec:node ${script}`,
    ]);
    child.stdin.end();
    let out = '';
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
    await new Promise<void>((resolve) => {
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString('utf8');
        if (out.includes(`${askId} claimed`)) resolve();
      });
    });
    await t.s!.owner('ask_cancel', { lane_id: lane, ask_id: askId, reason: 'not wanted' });
    writeFileSync(cancelled, '');
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(code).not.toBe(0);
    expect(err).not.toMatch(/someone else/);
    expect(err).toMatch(new RegExp(`is no longer yours: ask ${askId} was cancelled by `));
    expect((await asksOf(t.s!, lane)).find((a) => a.ask_id === askId)).toMatchObject({
      state: 'cancelled',
      holder: null,
    });
  });

  it('--once exits non-zero when the Ask it took was given back, with the reason in the Lane', async () => {
    const { env, lane } = await setup();
    const posted = await t.s!.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Write it' });
    const askId = (posted.ask as { ask_id: string }).ask_id;
    const script = agentScript(`process.stderr.write('no GPU here\\n'); process.exit(3);`);
    const r = await work(env, lane, `exec:node ${script}`);
    // unavailable: the model failed (exit 7, `zz help exit-codes`).
    expect(r.code).toBe(7);
    expect(r.stdout).toMatch(
      new RegExp(`^${askId} released: exec:node exited 3: no GPU here$`, 'm'),
    );
    expect(r.stderr).toBe(
      `zz: ${askId} was not done and is released: exec:node exited 3: no GPU here\n`,
    );
    expect((await asksOf(t.s!, lane)).find((a) => a.ask_id === askId)).toMatchObject({
      state: 'open',
      holder: null,
    });
    const history = (await t.s!.owner('lane_get', { lane_id: lane })).history as {
      op: string;
      ask_id: string | null;
      args: { reason?: string };
    }[];
    const release = history.find((h) => h.op === 'ask_release' && h.ask_id === askId);
    expect(release?.args.reason).toBe('exec:node exited 3: no GPU here');
  });

  it('--once says plainly when the Ask could not be given back, and until when it stays held', async () => {
    const { env, lane } = await setup();
    const posted = await t.s!.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Write it' });
    const askId = (posted.ask as { ask_id: string }).ask_id;
    // The model fails, and by the time zz work gives the Ask back its daemon has stopped.
    t.model = await fakeModelServer(() => {
      void t.s!.daemon.close();
      return { status: 500, body: { error: { message: 'overloaded' } }, delayMs: 500 };
    });
    env.OPENAI_BASE_URL = `${t.model.url}/v1`;
    const r = await work(env, lane, 'openai:m');
    expect(r.code).toBe(7);
    expect(r.stdout).not.toMatch(new RegExp(`^${askId} released`, 'm'));
    expect(r.stdout).toMatch(/^done: 1 ask \(0 answered, 0 released\)/m);
    expect(r.stderr).toMatch(
      new RegExp(
        `^zz: ${askId} was not done \\(.*overloaded.*\\) and could not be released \\(cannot reach the zz daemon.*\\): it stays claimed by you until its lease runs out at \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z; \`zz ask release --ask-id ${askId}\` gives it back$`,
        'm',
      ),
    );
  }, 55_000);

  it('--max-turns bounds the open loop: that many model calls, then the Ask is released', async () => {
    const { env } = await setup();
    await t.s!.owner('lane_propose', {
      lane_id: 'triage',
      title: 'Triage',
      ask_kinds: { triage: 'member' },
    });
    const posted = await t.s!.owner('ask_post', {
      lane_id: 'triage',
      kind: 'triage',
      title: 'Look',
    });
    const askId = (posted.ask as { ask_id: string }).ask_id;
    const script = agentScript(
      // A model that never stops reading: one tool call per turn, never an answer.
      `appendFileSync(process.env.CALLS_LOG, JSON.stringify(req.tools.map((t) => t.name)) + '\\n');
process.stdout.write(JSON.stringify({ tool_calls: [{ name: 'ladder_tree', arguments: {} }] }));`,
    );
    writeFileSync(
      script,
      `import { appendFileSync } from 'node:fs';\n${readFileSync(script, 'utf8')}`,
    );
    const log = join(dirs.at(-1)!, 'calls.log');
    env.CALLS_LOG = log;
    const r = await work(env, 'triage', `exec:node ${script}`, '--max-turns', '2');
    const calls = readFileSync(log, 'utf8').trim().split('\n');
    expect(calls).toHaveLength(2);
    // Member scope: no landing, no Ladder writes offered.
    for (const c of calls) {
      const tools = JSON.parse(c) as string[];
      expect(tools).toContain('ask_answer');
      expect(tools).not.toContain('commit_changeset');
      expect(tools).not.toContain('ladder_write_rung');
    }
    expect(r.code).toBe(7);
    expect(r.stdout).toContain(`${askId} released: no answer after 2 turns`);
    expect((await asksOf(t.s!, 'triage')).find((a) => a.ask_id === askId)!.state).toBe('open');
  });

  it('on a terminal (a real pty): the steps are one live status line, the rest are lines', async () => {
    let hasScript = true;
    try {
      execFileSync('script', ['--version'], { stdio: 'ignore' });
    } catch {
      hasScript = false;
    }
    if (!hasScript) return; // util-linux `script` gives the child a pty; without it, nothing to check
    const { env, lane } = await setup();
    const posted = await t.s!.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Notes' });
    const askId = (posted.ask as { ask_id: string }).ask_id;
    const script = agentScript(`process.stdout.write(${JSON.stringify(CHANGE)});`);
    const q = (a: string) => `'${a.replace(/'/g, `'\\''`)}'`;
    const cmd = [
      process.execPath,
      ZZ_MAIN,
      'work',
      '--lane',
      lane,
      '--once',
      '--model',
      `exec:node ${script}`,
    ]
      .map(q)
      .join(' ');
    const raw = await new Promise<string>((resolve, reject) =>
      execFile(
        'script',
        ['-qfec', cmd, '/dev/null'],
        { cwd: t.s!.dir, env, timeout: 30_000 },
        (err, stdout) => (err ? reject(err) : resolve(stdout)),
      ),
    );
    // Each step overwrites the one before it on the same line (CR, erase line); a step that
    // runs past a second is redrawn with its running time (taken out here) ...
    const steps = raw.replace(/\r\x1b\[K[^\r\n]*? \(\d+s\)/g, '');
    expect(steps).toContain(
      `${askId} context\r\x1b[K${askId} model\r\x1b[K${askId} answer complete\r\x1b[K`,
    );
    // ... and only the lasting lines end in a newline.
    const lines = steps
      .split(/\r?\n/)
      .map((l) => l.replace(/^[^]*\x1b\[K/, ''))
      .filter(Boolean);
    expect(lines[1]).toBe(`${askId} claimed (work): Notes`);
    expect(lines[2]).toMatch(new RegExp(`^${askId} answered complete in `));
    expect(lines[3]).toMatch(/^done: 1 ask \(1 answered, 0 released\)/);
    expect(steps).not.toMatch(new RegExp(`${askId} context\\r?\\n`));
  });

  it('zz ladder build --model (bare) uses git config zz.model through the same adapters', async () => {
    const { env } = await setup();
    const script = agentScript(
      `process.stdout.write(JSON.stringify({ object: { summary: 'Summarised by the script.' }, usage: { input_tokens: 7, output_tokens: 3 } }));`,
    );
    execFileSync('git', ['config', 'zz.model', `exec:node ${script}`], { cwd: t.s!.dir });
    const r = await zzMain(t.s!.dir, env, ['ladder', 'build', '--model']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const m =
      /^Model exec:node \S+: (\d+) files written, 0 from cache, 0 extractive; (\d+) input \+ (\d+) output tokens in (\d+) calls\.$/m.exec(
        r.stdout,
      );
    expect(m, r.stdout).not.toBeNull();
    const [written, input, output, calls] = m!.slice(1).map(Number);
    expect(written).toBeGreaterThan(0);
    expect([input, output, calls]).toEqual([7 * written!, 3 * written!, written]);
  });

  it('acts as the stored login when there is no ZZ_TOKEN; --kinds takes a comma list', async () => {
    t.s = await served();
    const lane = await demoLane(t.s);
    const env = privateEnv();
    execFileSync('git', ['config', 'user.email', 'owner@example.com'], { cwd: t.s.dir });
    const login = await zzMain(t.s.dir, env, ['login']);
    expect(login.code, login.stderr).toBe(0);
    const r = await zzMain(t.s.dir, env, [
      'work',
      '--lane',
      lane,
      '--once',
      '--kinds',
      'work,ladder_update',
      '--model',
      'exec:true',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe(
      'zz work: lane demo as owner@example.com with exec:true (kinds: work, ladder_update)',
    );
  });

  it('drives a posted work Ask through review and submit to a commit on main, then waits', async () => {
    const { env, lane } = await setup();
    await t.s!.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Write NOTES.md' });
    const script = agentScript(
      `const review = !!req.response_schema?.properties?.decision;
process.stdout.write(review
  ? JSON.stringify({ object: { decision: 'grant', reasons: ['fine'] } })
  : ${JSON.stringify(CHANGE)});`,
    );
    const child = spawnZz(t.s!.dir, env, [
      'work',
      '--lane',
      lane,
      '--model',
      `exec:node ${script}`,
    ]);
    child.stdin.end();
    let out = '';
    await new Promise<void>((resolve) => {
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString('utf8');
        // Work, review, submit answered, and back to waiting: the queue is empty.
        if ((out.match(/ answered /g) ?? []).length === 3 && /waiting for work[^]*$/.test(out))
          resolve();
      });
    });
    child.kill('SIGINT');
    const signal = await new Promise<NodeJS.Signals | null>((resolve) =>
      child.once('close', (_code, sig) => resolve(sig)),
    );
    expect(signal).toBe('SIGINT');
    const claimed = [...out.matchAll(/^ask-\w+ claimed \((\w+)\)/gm)].map((m) => m[1]);
    expect(claimed).toEqual(['work', 'changeset_review', 'submit_changeset']);
    expect(out).toMatch(/^ask-\w+ answered grant in /m);
    expect(out).toMatch(/^ask-\w+ answer complete: [0-9a-f]{12} on main$/m);
    expect(out.trim().split('\n').at(-1)).toBe(
      'done: 3 asks (3 answered, 0 released); model usage 120 tokens in, 30 out, 2 calls',
    );
    expect(sh(t.s!.dir, 'show', 'main:NOTES.md')).toBe('notes');
    expect(sh(t.s!.dir, 'log', '-1', '--format=%s', 'main')).toBe('Add NOTES.md');
    expect((await asksOf(t.s!, lane)).every((a) => a.state === 'answered')).toBe(true);
  });

  it('openai: waits out a 429 as Retry-After says, and shows the retry', async () => {
    const { env, lane } = await setup();
    await t.s!.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Write NOTES.md' });
    const change = { message: 'Add NOTES.md', files: [{ path: 'NOTES.md', content: 'notes\n' }] };
    t.model = await fakeModelServer([
      { status: 429, headers: { 'retry-after': '1' }, body: { error: { message: 'slow down' } } },
      {
        body: {
          choices: [{ message: { role: 'assistant', content: JSON.stringify(change) } }],
          usage: { prompt_tokens: 300, completion_tokens: 40 },
        },
      },
    ]);
    env.OPENAI_BASE_URL = `${t.model.url}/v1`;
    const r = await work(env, lane, 'openai:m', '--json');
    expect(r.code, r.stderr).toBe(0);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(events.find((e) => e.type === 'model_retry')).toMatchObject({
      attempt: 1,
      delay_ms: 1000,
      reason: 'HTTP 429: slow down',
    });
    expect(events.find((e) => e.type === 'answered')).toMatchObject({ outcome: 'complete' });
    expect(events.at(-1)).toMatchObject({
      type: 'done',
      usage: { input_tokens: 300, output_tokens: 40, calls: 1 },
    });
    expect(t.model.requests).toHaveLength(2);
  });

  it('a model endpoint that never answers: each call times out (ZZ_MODEL_TIMEOUT_MS), then the Ask is released', async () => {
    const { env, lane } = await setup();
    const posted = await t.s!.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Write it' });
    const askId = (posted.ask as { ask_id: string }).ask_id;
    t.model = await fakeModelServer(() => ({ hang: true }));
    env.OPENAI_BASE_URL = `${t.model.url}/v1`;
    env.ZZ_MODEL_TIMEOUT_MS = '300';
    const r = await work(env, lane, 'openai:m');
    expect(r.code).toBe(7);
    // The first try and 4 retries, each cut off at 300 ms.
    expect(t.model.requests).toHaveLength(5);
    expect(r.stdout).toMatch(
      new RegExp(
        `^${askId} released: openai:m at http://127\\.0\\.0\\.1:\\d+/v1 failed after 5 attempts: no answer within 300 ms$`,
        'm',
      ),
    );
    expect((await asksOf(t.s!, lane)).find((a) => a.ask_id === askId)!.state).toBe('open');
  }, 55_000);

  it('names --test-cmd, not an exec: model, when the test command cannot be split', async () => {
    const { env, lane } = await setup();
    for (const [cmd, why] of [
      ['', 'is empty'],
      ["npm 'test", 'has an unterminated'],
    ]) {
      const r = await zzMain(t.s!.dir, env, ['work', '--lane', lane, '--once', '--test-cmd', cmd!]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`zz: --test-cmd "${cmd}" ${why}`);
      expect(r.stderr).not.toContain('exec:');
    }
  });

  it('--test-cmd tests each change in a sandbox and feeds the failure back to the model', async () => {
    const { env, lane } = await setup();
    writeFileSync(
      join(t.s!.dir, 'check.mjs'),
      `import { readFileSync } from 'node:fs';
if (readFileSync('NOTES.md', 'utf8') !== 'notes\\n') { console.error('NOTES.md must say notes'); process.exit(1); }\n`,
    );
    sh(t.s!.dir, 'add', 'check.mjs');
    sh(t.s!.dir, 'commit', '-q', '-m', 'add the check');
    await t.s!.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Write NOTES.md' });
    // Wrong the first time; right once the test output came back to it.
    const script = agentScript(
      `const fed = req.messages.find((m) => m.role === 'user' && m.content.startsWith('The tests failed'));
const content = fed && fed.content.includes('NOTES.md must say notes') ? 'notes\\n' : 'todo\\n';
process.stdout.write(JSON.stringify({ object: { message: 'Add NOTES.md', files: [{ path: 'NOTES.md', content }] } }));`,
    );
    const r = await work(env, lane, `exec:node ${script}`, '--test-cmd', 'node check.mjs');
    expect(r.code, r.stderr).toBe(0);
    const steps = r.stdout
      .split('\n')
      .filter((l) => /^ask-\w+ (context|model|test|answer)\b/.test(l))
      .map((l) => l.replace(/^ask-\w+ /, ''));
    expect(steps).toEqual([
      'context',
      'model',
      'test round 1',
      'model round 2',
      'test round 2',
      'answer complete',
    ]);
    const worked = (await asksOf(t.s!, lane)).find((a) => a.kind === 'work')!;
    expect(sh(t.s!.dir, 'show', `refs/zz/changesets/${worked.answer!.changeset_id}:NOTES.md`)).toBe(
      'notes',
    );
  });
});
