import { beforeAll, describe, expect, it } from 'vitest';
import { zzMain as zz } from '../helpers/cli-harness.js';
import { makeRepo } from '../helpers/temp-repo.js';
import { ensureBuilt, privateEnv } from './zz-process.js';

// A flag given twice that is not an array flag is refused, by the fast path
// (src/cli/fast-path.ts) as by the full command table it hands such a command line to. The fast
// path used to take the last one: `--title a --title b` made a Lane titled "b", and
// `zz ask cancel --ask-id X --ask-id Y` cancelled Y alone. No daemon runs here: the fast path
// parses, then runs the tool in-process (runParsed). The commands run as the built zz runs them
// (zzMain).

beforeAll(() => ensureBuilt());

describe('a flag given twice on the fast path', () => {
  it('is refused as the full command table refuses it, and nothing is written', async () => {
    const { dir, cleanup } = makeRepo();
    const env = privateEnv();
    try {
      expect((await zz(dir, env, ['init'])).code).toBe(0);
      const twice = await zz(dir, env, [
        'lane',
        'propose',
        '--description',
        'x',
        '--title',
        'a',
        '--title=b',
        '--lane-id',
        't2',
      ]);
      expect(twice.stderr).toBe('zz: title: must be a string (got an array)\n');
      expect(twice.code).toBe(2);
      expect((await zz(dir, env, ['lane', 'get', '--lane-id', 't2'])).code).toBe(4);

      const lane = ['--lane-id', 'fp'];
      expect((await zz(dir, env, ['lane', 'propose', ...lane, '--title', 'L'])).code).toBe(0);
      const ids: string[] = [];
      for (const title of ['one', 'two']) {
        const posted = await zz(dir, env, [
          ...['ask', 'post', ...lane, '--kind', 'work', '--title', title, '--json'],
        ]);
        expect(posted.code, posted.stderr).toBe(0);
        ids.push(posted.json().ask.ask_id as string);
      }
      const cancel = await zz(dir, env, [
        ...['ask', 'cancel', ...lane, '--ask-id', ids[0]!, '--ask-id', ids[1]!],
      ]);
      expect(cancel.code).toBe(2);
      expect(cancel.stderr).toMatch(/ask_id: must be a string \(got an array\)/);
      for (const id of ids) {
        const got = await zz(dir, env, ['ask', 'get', '--ask-id', id, '--json']);
        expect(got.json().ask.state, id).toBe('open');
      }
      // A boolean and --args twice go to the full table too; it decides them as it always did.
      const args = await zz(dir, env, ['lane', 'list', '--args', '{}', '--args', '{}']);
      expect(args.code).toBe(2);
      expect(args.stderr).toMatch(/^zz: --args is not valid JSON/);

      // An array flag is repeatable: each one counts.
      const listed = await zz(dir, env, [
        ...['ask', 'list', ...lane, '--state', 'open', '--state', 'cancelled', '--json'],
      ]);
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.json().total).toBe(2);
    } finally {
      cleanup();
    }
  });
});
