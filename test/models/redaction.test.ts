import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createModel } from '../../src/models/index.js';
import { fakeModelServer, type FakeModelServer } from './fake-model-server.js';

// Secrets in model text the error path did not see: a refusal (thrown after the answer was
// read), a script's stderr cut to its last 16 KiB, and credentials by shape that are not the
// adapter's own key (schema/redact.ts, shared with github/).

const KEY = 'sk-test-secret-0123456789abcdefWXYZ';
let server: FakeModelServer | null = null;
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'zz-redaction-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  await server?.close();
  server = null;
});

const openai = (s: FakeModelServer) =>
  createModel('openai:gpt-x', {
    env: { OPENAI_BASE_URL: `${s.url}/v1`, OPENAI_API_KEY: KEY },
    maxRetries: 0,
  });
const failure = (p: Promise<unknown>) =>
  p.then(
    () => '(no error)',
    (e: Error) => e.message,
  );

describe('model text redacted where the error path did not reach', () => {
  it('redacts an OpenAI-compatible refusal that echoes the key, and bounds it', async () => {
    server = await fakeModelServer([
      {
        body: {
          choices: [
            {
              message: {
                role: 'assistant',
                content: null,
                refusal: `no: ${KEY} ${'r'.repeat(5000)}`,
              },
            },
          ],
        },
      },
    ]);
    const msg = await failure(openai(server).chat({ system: 's', messages: [] }));
    expect(msg).toMatch(/^openai:gpt-x at .* refused: no: \[redacted\] r+…$/);
    expect(msg).not.toContain('0123456789');
    expect(msg.length).toBeLessThan(1200);
  });

  it('redacts credentials of another identity in an error body by shape', async () => {
    const pat = `github_pat_${'A'.repeat(30)}`;
    server = await fakeModelServer([
      {
        status: 400,
        body: {
          error: {
            message: `upstream said token ${'t'.repeat(40)} and ${pat} ghp_${'G'.repeat(36)}`,
          },
        },
      },
    ]);
    const msg = await failure(openai(server).chat({ system: 's', messages: [] }));
    expect(msg).toContain('token [redacted] and [redacted] [redacted]');
    for (const piece of ['tttttttt', 'AAAAAAAA', 'GGGGGGGG']) expect(msg).not.toContain(piece);
  });

  it("takes a key's tail off the start of the stderr tail an exec: script is cut to", async () => {
    // One long line, so the quoted gist is the start of the kept 16 KiB: there the key's last
    // characters begin, too short a piece for the exact match.
    const file = join(dir, 'noisy.js');
    for (const filler of [0, 20_000]) {
      // Cut at close (under 32 KiB) and while reading (over it): the same tail either way.
      writeFileSync(
        file,
        `process.stderr.write('y'.repeat(${filler}) + process.env.ANTHROPIC_API_KEY + 'x'.repeat(${16 * 1024 - 12}));\nprocess.exit(1);\n`,
      );
      const msg = await failure(
        createModel(`exec:${process.execPath} ${file}`, {
          env: { PATH: process.env.PATH, ANTHROPIC_API_KEY: KEY },
        }).chat({ system: 's', messages: [] }),
      );
      expect(msg, `filler ${filler}`).toMatch(/exited 1: \[redacted\]x+…$/);
      expect(msg, `filler ${filler}`).not.toContain('WXYZ');
    }
  });
});
