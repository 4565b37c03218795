import type { Client } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { makeRepo } from '../helpers/temp-repo.js';
import { connectStreams, initializeRequest, spawnZzMcp, textOf } from './helpers.js';

// `zz mcp` as a client starts it: a spawned process on stdio (the built zz).

const open: Array<{ client: Client; exited: Promise<number | null> }> = [];

afterEach(async () => {
  for (const o of open.splice(0)) {
    await o.client.close().catch(() => {});
    await o.exited;
  }
});

async function zzMcp(cwd: string, args: string[] = [], env: NodeJS.ProcessEnv = cliEnv()) {
  const child = spawnZzMcp(cwd, env, args);
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const client = await connectStreams(child.stdout, child.stdin);
  open.push({ client, exited });
  return { client, exited, stderr: () => stderr };
}

/** `zz mcp` spoken to line by line (no client): what it wrote, once it has exited. */
function rawMcp(cwd: string, env: NodeJS.ProcessEnv) {
  const child = spawnZzMcp(cwd, env);
  const seen = { stdout: '', stderr: '' };
  child.stdout.on('data', (c: Buffer) => (seen.stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (seen.stderr += c.toString('utf8')));
  const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
  return { child, exited, out: () => seen };
}

describe('zz mcp', { timeout: 150_000 }, () => {
  it('outside a repository completes the handshake and reports the setup error through MCP', async () => {
    const nowhere = tempDir('zz-not-a-repo-');
    const { client, exited, stderr } = await zzMcp(nowhere);
    expect(client.getInstructions()).toMatch(/^zz is not set up: .*--repo PATH/);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['zz_setup_error']);
    expect(tools[0]!.description).toMatch(/not set up/);
    const r = await client.callTool({ name: 'zz_setup_error', arguments: {} });
    expect(r.isError).toBe(true);
    expect(textOf(r)).toMatch(/^Error not_a_repository: zz is not set up/);
    await client.close();
    // When the client hangs up: one line on stderr and a failing exit code.
    expect(await exited).not.toBe(0);
    expect(stderr().trim().split('\n')).toHaveLength(1);
    expect(stderr()).toMatch(/^zz: /);
  });

  it('with ZZ_TOKEN set but empty serves no tool, only the error (never the git identity)', async () => {
    // What Cursor's "ZZ_TOKEN": "${env:ZZ_TOKEN}" starts when the variable is not exported.
    const r = makeRepo();
    const { client } = await zzMcp(r.dir, [], { ...cliEnv(), ZZ_TOKEN: '' });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['zz_setup_error']);
    const e = await client.callTool({ name: 'zz_setup_error', arguments: {} });
    expect(e.isError).toBe(true);
    expect(textOf(e)).toMatch(/ZZ_TOKEN is set but empty/);
  });

  it('--repo PATH serves that checkout from anywhere', async () => {
    const r = makeRepo();
    const elsewhere = tempDir('zz-elsewhere-');
    const { client } = await zzMcp(elsewhere, ['--repo', r.dir]);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain('repo_state');
    const state = await client.callTool({ name: 'repo_state', arguments: {} });
    expect(state.isError).toBeFalsy();
    expect((state.structuredContent as { actor: string }).actor).toBe('owner@example.com');
  });

  it('stdin closed at once: every request piped in is answered, writes made, before exit 0', async () => {
    const r = makeRepo();
    const env = cliEnv();
    expect((await zz(r.dir, env, 'init')).code).toBe(0);
    const { child, exited, out } = rawMcp(r.dir, env);
    const call = (id: number, name: string, args: Record<string, unknown>) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name, arguments: args },
    });
    const titles = ['first', 'second', 'third'];
    const messages = [
      initializeRequest(1),
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      ...titles.map((title, i) =>
        call(2 + i, 'ask_post', { lane_id: '_repo', kind: 'work', title }),
      ),
      call(5, 'repo_state', {}),
    ];
    // One write and an immediate end: the client has said everything and hung up its side.
    // The last line has no newline (`printf '…' | zz mcp`): it is a line all the same.
    child.stdin.end(messages.map((m) => JSON.stringify(m)).join('\n'));
    expect(await exited, out().stderr).toBe(0);
    const answers = out()
      .stdout.trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: number; result?: { isError?: boolean } });
    expect(answers.map((a) => a.id).sort()).toEqual([1, 2, 3, 4, 5]);
    for (const a of answers) expect(a.result?.isError, JSON.stringify(a)).toBeFalsy();
    const listed = await zz(r.dir, env, 'ask', 'list', '--lane-id', '_repo', '--json');
    const posted = (listed.json() as { asks: Array<{ title: string }> }).asks.map((a) => a.title);
    expect(posted.sort()).toEqual([...titles].sort());
  });

  it('answers a bad line with a short JSON-RPC error naming its first problem, and serves on', async () => {
    const r = makeRepo();
    const env = cliEnv();
    expect((await zz(r.dir, env, 'init')).code).toBe(0);
    const { child, exited, out } = rawMcp(r.dir, env);
    const lines = [
      'not json',
      JSON.stringify(initializeRequest(1)),
      '{"jsonrpc":"2.0","id":2,"method":5}',
      `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":"${'p'.repeat(100_000)}"}`,
      '{"foo":1}',
      '[{"jsonrpc":"2.0","id":4,"method":"ping"}]',
      // Past the 10 MiB a line may hold: answered and skipped, not the end of the session.
      `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"${'x'.repeat(11 << 20)}"}}`,
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      JSON.stringify({
        jsonrpc: '2.0',
        id: 6,
        method: 'tools/call',
        params: { name: 'repo_state', arguments: {} },
      }),
    ];
    child.stdin.end(lines.join('\n') + '\n');
    expect(await exited, out().stderr).toBe(0);
    const answers = out()
      .stdout.trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as {
            id: number | null;
            result?: { isError?: boolean };
            error?: { code: number; message: string };
          },
      );
    const errors = answers
      .filter((a) => a.error)
      .map((a) => [a.id, a.error!.code, a.error!.message]);
    expect(errors).toEqual([
      [null, -32700, `Parse error: Unexpected token 'o', "not json" is not valid JSON`],
      [2, -32600, 'Invalid Request: method: expected string, received number'],
      [3, -32600, 'Invalid Request: params: expected object, received string'],
      [null, -32600, 'Invalid Request: jsonrpc: expected "2.0"'],
      [
        null,
        -32600,
        'Invalid Request: a batch (JSON array) is not supported; send one message per line',
      ],
      [null, -32600, `Invalid Request: a message longer than ${10 << 20} bytes; it was skipped`],
    ]);
    for (const a of answers.filter((x) => x.error))
      expect(JSON.stringify(a).length).toBeLessThanOrEqual(500);
    // The valid lines around them were served: the handshake and the call after them all.
    expect(answers.filter((a) => a.result).map((a) => a.id)).toEqual([1, 6]);
    expect(answers.find((a) => a.id === 6)!.result!.isError).toBeFalsy();
    // stderr: one short line per bad line, no zod dump.
    expect(out().stderr.trim().split('\n')).toHaveLength(6);
    expect(out().stderr.length).toBeLessThan(6 * 500);
  });
});
