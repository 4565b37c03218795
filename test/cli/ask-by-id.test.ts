import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { makeRepo } from '../helpers/temp-repo.js';

// An Ask by its id alone, as `gh issue close 12` takes a number (issue 13.11): `zz ask claim`,
// `release`, `answer` and `cancel` find the Ask's Lane when --lane-id is left out, as
// `zz ask get --ask-id` does; a field left out of `zz call` JSON is named as required.

let repo: { dir: string; cleanup: () => void };
let env: NodeJS.ProcessEnv;
const run = (...argv: string[]) => zz(repo.dir, env, ...argv);

beforeAll(async () => {
  repo = makeRepo();
  env = cliEnv();
  expect((await run('init')).code).toBe(0);
  for (const lane of ['web', 'api'])
    expect((await run('lane', 'propose', '--lane-id', lane, '--title', lane)).code).toBe(0);
});
afterAll(() => repo.cleanup());

async function post(lane: string, title: string): Promise<string> {
  const r = await run(
    'ask',
    'post',
    '--lane-id',
    lane,
    '--kind',
    'work',
    '--title',
    title,
    '--json',
  );
  expect(r.code).toBe(0);
  return r.json().ask.ask_id as string;
}

describe('zz ask … --ask-id without --lane-id', () => {
  it('claims, releases, answers and cancels the Ask in whichever Lane holds it', async () => {
    await post('web', 'first');
    const id = await post('api', 'second');
    const claim = await run('ask', 'claim', '--ask-id', id, '--json');
    expect(claim.stderr).toBe('');
    expect(claim.json().ask).toMatchObject({ ask_id: id, lane_id: 'api', state: 'claimed' });
    expect((await run('ask', 'release', '--ask-id', id, '--json')).json().ask.state).toBe('open');
    await run('ask', 'claim', '--ask-id', id);
    const answer = await run(
      ...['ask', 'answer', '--ask-id', id, '--outcome', 'complete', '--result', 'done', '--json'],
    );
    expect(answer.json().ask.state).toBe('answered');
    const other = await post('web', 'third');
    const cancel = await run('ask', 'cancel', '--ask-id', other, '--reason', 'not needed');
    expect(cancel.code).toBe(0);
    expect(cancel.stdout).toMatch(/^ {2}state: cancelled$/m);
    expect(cancel.stdout).toMatch(/^ {2}lane_id: web$/m);
  });

  it('says which id it could not find, and --help shows --lane-id as optional', async () => {
    const missing = await run('ask', 'cancel', '--ask-id', 'ask-0000000000');
    expect(missing.code).toBe(4);
    expect(missing.stderr).toBe('zz: ask ask-0000000000 does not exist in any lane\n');
    // A Lane given is still the Lane used.
    const id = await post('web', 'fourth');
    const wrong = await run('ask', 'claim', '--lane-id', 'api', '--ask-id', id);
    expect(wrong.code).toBe(4);
    const help = await run('ask', 'cancel', '--help');
    expect(help.stdout).toMatch(/^ +--lane-id +Default: the Lane of --ask-id +\[string\]$/m);
    expect(help.stdout).toMatch(/^ +--ask-id +\[string\] \[required\]$/m);
  });

  it('zz call passes the JSON as given, and a field left out is named as required', async () => {
    const id = await post('web', 'fifth');
    const r = await run('call', 'ask_cancel', '--args', JSON.stringify({ ask_id: id }));
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('zz: lane_id is required\n');
  });
});
