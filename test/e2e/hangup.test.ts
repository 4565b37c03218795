import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo } from '../helpers/temp-repo.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { ensureBuilt, killAll, privateEnv, zz, ZZ_MAIN } from './zz-process.js';

// A hang-up (the terminal closed, an ssh session dropped) ends `zz work` as Ctrl-C does: it
// releases the Ask it holds. It once died of SIGHUP's default action holding the Ask until the
// lease ran out.

beforeAll(() => ensureBuilt());
afterEach(() => killAll());

type Child = ReturnType<typeof spawn>;
const exitOf = (child: Child) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once('exit', (code, signal) => r({ code, signal })),
  );

/** A repository with a Lane and one `work` Ask; a model that never answers. */
async function heldAsk() {
  const { dir, cleanup } = makeRepo();
  const script = join(tempDir('zz-hangup-'), 'slow.mjs');
  writeFileSync(script, 'setTimeout(() => {}, 120_000);\n');
  const env = privateEnv();
  expect((await zz(dir, env, ['init'])).code).toBe(0);
  expect((await zz(dir, env, ['lane', 'propose', '--lane-id', 'p', '--title', 'P'])).code).toBe(0);
  const posted = await zz(dir, env, [
    ...['ask', 'post', '--lane-id', 'p', '--kind', 'work', '--title', 'Hold me', '--json'],
  ]);
  const askId = (posted.json() as { ask: { ask_id: string } }).ask.ask_id;
  const work = () => {
    const args = [ZZ_MAIN, 'work', '--lane', 'p', '--model', `exec:${process.execPath} ${script}`];
    const child = spawn(process.execPath, args, { cwd: dir, env });
    child.stdin!.end();
    const claimed = new Promise<void>((resolve) => {
      let out = '';
      child.stdout!.on('data', (c: Buffer) => {
        out += c.toString('utf8');
        if (out.includes('claimed')) resolve();
      });
    });
    return { child, claimed };
  };
  const state = async () =>
    (
      (await zz(dir, env, ['ask', 'get', '--ask-id', askId, '--json'])).json() as {
        ask: { state: string; holder: string | null };
      }
    ).ask;
  return { work, state, cleanup };
}

describe('a hang-up', () => {
  it('stops zz work as Ctrl-C does: the Ask is released and zz dies of SIGHUP', async () => {
    const { work, state, cleanup } = await heldAsk();
    try {
      const { child, claimed } = work();
      const exited = exitOf(child);
      await claimed;
      expect((await state()).state).toBe('claimed');
      child.kill('SIGHUP');
      expect(await exited).toEqual({ code: null, signal: 'SIGHUP' });
      expect(await state()).toMatchObject({ state: 'open', holder: null });
    } finally {
      cleanup();
    }
  }, 180_000);
});
