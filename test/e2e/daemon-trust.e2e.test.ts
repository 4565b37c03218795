import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { processStamp } from '../../src/local/file-lock.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';
import { killAll, privateEnv, serve, zz } from './zz-process.js';

// The CLI sends its bearer token only to the daemon that wrote daemon.json. After a SIGKILL the
// file stays behind; its pid can go to another process and its port to another server. Here
// that is made real: a daemon is killed, a `sleep` stands in for the process given its pid,
// and a server of the test's listens where the file points, answering /healthz with that pid
// (as a hostile one could) and recording every Authorization header it is sent.

const closers: Array<() => void> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) c();
  await killAll();
});

/** An HTTP server on loopback that records each request's Authorization header. */
async function stranger(pid: () => number) {
  const seen: Array<{ path: string; authorization: string | undefined }> = [];
  const server: Server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', authorization: req.headers.authorization });
    res.setHeader('content-type', 'application/json');
    if (req.url === '/healthz') return res.end(JSON.stringify({ ok: true, pid: pid() }));
    req.resume();
    res.end(JSON.stringify({ result: { lanes: [], more: false } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

function sleeper(): ChildProcess {
  const child = spawn('sleep', ['300'], { stdio: 'ignore' });
  closers.push(() => child.kill('SIGKILL'));
  return child;
}

const linux = processStamp(process.pid) !== null;

describe('a daemon.json left by a killed daemon', { timeout: 120_000 }, () => {
  it.runIf(linux)(
    'naming a reused pid and a stranger on the port: the token never goes there, the CLI works as with no daemon',
    async () => {
      const { dir } = makeRepo();
      const env = privateEnv();
      expect((await zz(dir, env, ['init'])).code).toBe(0);
      const daemon = await serve(dir, env);
      const login = await zz(dir, env, ['login']);
      expect(login.code, login.stderr).toBe(0);
      const file = join(dir, '.git', 'zz', 'daemon.json');
      const written = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
      expect(written).toMatchObject({
        pid: daemon.child.pid,
        process_start: processStamp(daemon.child.pid!),
        url: daemon.url,
      });
      daemon.child.kill('SIGKILL');
      await daemon.exited;
      // The token the fast path would send: the stored login's.
      const creds = readFileSync(join(env.XDG_CONFIG_HOME!, 'zz', 'credentials.json'), 'utf8');
      const token = /"token":\s*"([^"]+)"/.exec(creds)![1]!;

      const other = sleeper();
      const srv = await stranger(() => other.pid!);
      const leftBehind: Record<string, unknown> = { ...written, pid: other.pid, url: srv.url };
      writeFileSync(file, JSON.stringify(leftBehind));
      const read = await zz(dir, env, ['lane', 'list', '--json']);
      const write = await zz(dir, env, ['lane', 'propose', '--lane-id', 'web', '--title', 'Web']);
      expect(srv.seen.filter((s) => s.authorization !== undefined)).toEqual([]);
      // As with no daemon: in-process, as the checkout's git identity.
      expect(read.code, read.stderr).toBe(0);
      expect(read.json().lanes.map((l: { lane_id: string }) => l.lane_id)).toEqual(['_repo']);
      expect(write.code, write.stderr).toBe(0);
      expect(sh(dir, 'rev-parse', '--verify', '-q', 'refs/zz/lanes/web')).toMatch(/^[0-9a-f]{40}$/);

      // A file of an older zz (no stamp): the server must answer /healthz with the pid first;
      // this one answers with another, and is sent nothing.
      const { process_start: _s, ...unstamped } = leftBehind;
      const wrongPid = await stranger(() => other.pid! + 1);
      writeFileSync(file, JSON.stringify({ ...unstamped, url: wrongPid.url }));
      expect((await zz(dir, env, ['lane', 'list', '--json'])).code).toBe(0);
      expect(wrongPid.seen.map((s) => s.path)).toContain('/healthz');
      expect(wrongPid.seen.filter((s) => s.authorization !== undefined)).toEqual([]);

      // The control: a file naming a live process with its own stamp (this test's) is trusted,
      // and the token goes straight to its URL, with no /healthz first.
      const trusted = await stranger(() => process.pid);
      writeFileSync(
        file,
        JSON.stringify({
          ...written,
          pid: process.pid,
          process_start: processStamp(process.pid),
          url: trusted.url,
        }),
      );
      await zz(dir, env, ['lane', 'list', '--json']);
      expect(trusted.seen[0]).toEqual({
        path: expect.stringMatching(/\/tools\/lane_list$/),
        authorization: `Bearer ${token}`,
      });
      expect(trusted.seen.map((s) => s.path)).not.toContain('/healthz');
    },
  );
});
