import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createModel, defaultModelSpec, splitCommand } from '../../src/models/index.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// `exec:` runs a real process per call: the request on stdin, the answer on stdout, argv split
// without a shell. The scripts are node programs started with an explicit interpreter.

let dir: string;
const script = (name: string, body: string) => {
  const file = join(dir, name);
  writeFileSync(file, `#!/usr/bin/env node\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
};

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'zz exec '));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const READ_STDIN = `const chunks = []; process.stdin.on('data', (c) => chunks.push(c));
process.stdin.on('end', () => main(JSON.parse(Buffer.concat(chunks).toString('utf8'))));`;

describe('exec: adapter', () => {
  it('sends the §9 request on stdin and reads tool calls and usage from stdout', async () => {
    const log = join(dir, 'req.json');
    const agent = script(
      'agent one.mjs',
      `import { writeFileSync } from 'node:fs';
${READ_STDIN}
function main(req) {
  writeFileSync(process.argv[2], JSON.stringify({ req, argv: process.argv.slice(3) }));
  process.stdout.write(JSON.stringify({ content: 'hi', tool_calls: [{ name: 'ask_post', arguments: { title: 't' } }], usage: { input_tokens: 7, output_tokens: 3 } }));
}`,
    );
    const m = createModel(`exec:node '${agent}' '${log}' "a b" c\\ d '|' x`);
    const r = await m.chat({
      system: 'sys',
      messages: [{ role: 'user', content: 'go' }],
      tools: [{ name: 'ask_post', description: 'post', input_schema: { type: 'object' } }],
    });
    expect(r).toMatchObject({
      content: 'hi',
      tool_calls: [{ id: 'call_0', name: 'ask_post', arguments: { title: 't' } }],
    });
    expect(m.usage()).toEqual({ input_tokens: 7, output_tokens: 3, calls: 1 });
    const seen = JSON.parse(readFileSync(log, 'utf8'));
    expect(seen.argv).toEqual(['a b', 'c d', '|', 'x']);
    expect(seen.req).toEqual({
      model: `node '${agent}' '${log}' "a b" c\\ d '|' x`,
      system: 'sys',
      messages: [{ role: 'user', content: 'go' }],
      tools: [{ name: 'ask_post', description: 'post', input_schema: { type: 'object' } }],
    });
  });

  it('passes response_schema and takes `object` as the structured answer', async () => {
    const agent = script(
      'structured.mjs',
      `${READ_STDIN}
function main(req) {
  const ok = req.response_schema && req.response_schema.properties.decision;
  process.stdout.write(JSON.stringify({ object: { decision: ok ? 'grant' : 'deny', reasons: [] } }));
}`,
    );
    const r = await createModel(`exec:node '${agent}'`).object({
      system: 's',
      messages: [{ role: 'user', content: 'q' }],
      schema: z.object({ decision: z.enum(['grant', 'deny']), reasons: z.array(z.string()) }),
    });
    expect(r.object).toEqual({ decision: 'grant', reasons: [] });
  });

  it("does not hand zz's token to the model process", async () => {
    const agent = script(
      'env.mjs',
      `process.stdout.write(JSON.stringify({ content: (process.env.ZZ_TOKEN ?? 'none') + ' ' + process.env.OTHER }));`,
    );
    const r = await createModel(`exec:node '${agent}'`, {
      env: { PATH: process.env.PATH, ZZ_TOKEN: 'zzt_secret', OTHER: 'kept' },
    }).chat({ system: 's', messages: [] });
    expect(r.content).toBe('none kept');
  });

  it('takes the keys in its environment out of what a failed script printed', async () => {
    // The reviewer's case: a shell script whose failing curl line names the key.
    const env = {
      PATH: process.env.PATH,
      ANTHROPIC_API_KEY: 'sk-ant-secret-0123456789abcdef',
      MY_SECRET_THING: 'hunter2-hunter2',
      GH_TOKEN: 'ghp_0123456789abcdefXYZ',
      SHORT_TOKEN: 'abc', // under 8 characters: left alone, or every "abc" would go
    };
    const err = await createModel(
      'exec:sh -c "echo Error: curl -H x-api-key:$ANTHROPIC_API_KEY $MY_SECRET_THING $GH_TOKEN abc failed >&2; exit 1"',
      { env },
    )
      .chat({ system: 's', messages: [] })
      .catch((e: Error) => e);
    const msg = String((err as Error).message);
    expect(msg).toMatch(
      /^exec:sh exited 1: Error: curl -H x-api-key:\[redacted\] \[redacted\] \[redacted\] abc failed$/,
    );
    // And on stdout, when what it printed is not an answer (quoted in the error).
    const out = await createModel(
      `exec:sh -c "echo Bearer: $GH_TOKEN; echo ${'z'.repeat(285)}$ANTHROPIC_API_KEY"`,
      { env },
    )
      .chat({ system: 's', messages: [] })
      .catch((e: Error) => e);
    const text = String((out as Error).message);
    expect(text).toContain('[redacted]');
    expect(text).not.toContain('0123456789');
    expect(text).not.toContain('sk-ant-sec');
  });

  it('reports a failing, silent, babbling or stuck script clearly', async () => {
    const fail = script('fail.mjs', `console.error('boom: no model here'); process.exit(3);`);
    await expect(
      createModel(`exec:node '${fail}'`).chat({ system: 's', messages: [] }),
    ).rejects.toThrow(/exited 3: boom: no model here/);
    // An uncaught exception: node prints the stack, then "Node.js v…"; the error line is what
    // the message must name (it was "} Node.js v20.20.2" for a missing module).
    const missing = join(dir, 'no-such-agent.mjs');
    await expect(
      createModel(`exec:node '${missing}'`).chat({ system: 's', messages: [] }),
    ).rejects.toThrow(/exited 1: Error: Cannot find module '.*no-such-agent\.mjs'/);
    const thrown = script('throws.mjs', `const o = null;\nconsole.log(o.answer);`);
    await expect(
      createModel(`exec:node '${thrown}'`).chat({ system: 's', messages: [] }),
    ).rejects.toThrow(/exited 1: TypeError: Cannot read properties of null \(reading 'answer'\)$/);
    // A script that logged a lot first: what counts is how stderr ends, not how it began.
    const chatty = script(
      'chatty.mjs',
      // fs.writeSync: console.error on a full pipe queues, and a process ended by an uncaught
      // exception drops what is queued (seen on Node 24), taking the tail of stderr with it.
      `import { writeSync } from 'node:fs';\nfor (let i = 0; i < 400; i++) writeSync(2, 'Error: early retry ' + i + ' ' + 'x'.repeat(80) + '\\n');\nthrow new RangeError('the real failure');`,
    );
    await expect(
      createModel(`exec:node '${chatty}'`).chat({ system: 's', messages: [] }),
    ).rejects.toThrow(/exited 1: RangeError: the real failure$/);
    const prose = script('prose.mjs', `console.log('I think the answer is 42');`);
    await expect(
      createModel(`exec:node '${prose}'`).chat({ system: 's', messages: [] }),
    ).rejects.toThrow(/not one JSON object: I think the answer is 42/);
    const stuck = script('stuck.mjs', `setInterval(() => {}, 1000);`);
    await expect(
      createModel(`exec:node '${stuck}'`, { timeoutMs: 300 }).chat({ system: 's', messages: [] }),
    ).rejects.toThrow(/no answer within 300 ms/);
    await expect(
      createModel(`exec:'${join(dir, 'missing')}'`).chat({ system: 's', messages: [] }),
    ).rejects.toThrow(/could not start/);
  });
});

describe('splitCommand', () => {
  it('splits like a shell splits words, and does nothing else', () => {
    expect(splitCommand(`python3 -u 'my agent.py' --x "a \\"b\\" $HOME" c\\ d`)).toEqual([
      'python3',
      '-u',
      'my agent.py',
      '--x',
      'a "b" $HOME',
      'c d',
    ]);
    expect(splitCommand(`./a.sh | rm -rf ~ ; echo $(id) ''`)).toEqual([
      './a.sh',
      '|',
      'rm',
      '-rf',
      '~',
      ';',
      'echo',
      '$(id)',
      '',
    ]);
    expect(() => splitCommand('  ')).toThrow(/is empty/);
    expect(() => splitCommand(`node 'x`)).toThrow(/unterminated/);
  });
});

describe('default model', () => {
  it('takes --model, else git config zz.model, else says how to set one', async () => {
    const repo = makeRepo();
    try {
      const sub = join(repo.dir, 'sub');
      mkdirSync(sub);
      await expect(defaultModelSpec(undefined, sub)).rejects.toThrow(/git config zz.model/);
      sh(repo.dir, 'config', 'zz.model', 'openai:qwen2.5-coder');
      expect(await defaultModelSpec(undefined, sub)).toBe('openai:qwen2.5-coder');
      expect(await defaultModelSpec('exec:./a.sh', sub)).toBe('exec:./a.sh');
    } finally {
      repo.cleanup();
    }
  });
});
