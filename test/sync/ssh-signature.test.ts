import { execFileSync, spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  generateSigningKey,
  openRepository,
  serializeCommit,
  signCommitBody,
  sshSign,
  sshVerify,
  verifyCommitBody,
} from '../../src/git/index.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// zz's SSH signatures against the real tools: git verify-commit and ssh-keygen -Y verify
// accept them, and our verifier refuses tampering and other keys.

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const hasSshKeygen = spawnSync('ssh-keygen', ['-?']).error === undefined;

describe('ssh signatures', () => {
  it('verifies its own signatures and refuses tampering or a swapped key', () => {
    const { key } = generateSigningKey();
    const other = generateSigningKey().key;
    const msg = Buffer.from('tree x\n\nhello\n');
    const sig = sshSign(msg, key);
    expect(sshVerify(msg, sig)).toBe(key.publicKey);
    expect(sshVerify(Buffer.from('tree x\n\nhellO\n'), sig)).toBeNull();
    expect(sshVerify(msg, sshSign(msg, other))).toBe(other.publicKey);
    expect(sshVerify(msg, sig.replace(/A/, 'B'))).toBeNull();
  });

  it.skipIf(!hasSshKeygen)(
    'ssh-keygen -Y verify and git verify-commit accept a signed zz commit',
    async () => {
      const { dir, cleanup } = makeRepo('zz-sig-');
      dirs.push(dir);
      void cleanup;
      const { key } = generateSigningKey();
      const allowed = join(dir, '.git', 'allowed_signers');
      writeFileSync(allowed, `owner@example.com ${key.publicKey}\n`);
      // ssh-keygen on a detached message.
      const msgFile = join(dir, '.git', 'msg');
      const msg = Buffer.from('some payload\n');
      writeFileSync(msgFile, msg);
      writeFileSync(msgFile + '.sig', sshSign(msg, key) + '\n');
      const out = execFileSync(
        'ssh-keygen',
        [
          '-Y',
          'verify',
          '-f',
          allowed,
          '-I',
          'owner@example.com',
          '-n',
          'git',
          '-s',
          msgFile + '.sig',
        ],
        { input: msg, encoding: 'utf8' },
      );
      expect(out).toMatch(/Good "git" signature for owner@example.com/);
      // A whole commit, written as an object and checked by git.
      const repo = await openRepository(dir);
      const tree = sh(dir, 'rev-parse', 'HEAD^{tree}');
      const body = serializeCommit({
        tree,
        parents: [sh(dir, 'rev-parse', 'HEAD')],
        author: { name: 'Owner', email: 'owner@example.com', time: 1_700_000_000 },
        committer: { name: 'zz', email: 'zz@localhost', time: 1_700_000_000 },
        message: 'signed by zz\n',
      });
      const signed = signCommitBody(body, key);
      expect(verifyCommitBody(signed)).toBe(key.publicKey);
      expect(verifyCommitBody(body)).toBeNull();
      const oid = await repo.objects.write('commit', signed);
      repo.close();
      sh(dir, 'config', 'gpg.format', 'ssh');
      sh(dir, 'config', 'gpg.ssh.allowedSignersFile', allowed);
      const v = spawnSync('git', ['verify-commit', '--raw', oid], { cwd: dir, encoding: 'utf8' });
      expect(v.status, v.stderr).toBe(0);
      expect(v.stderr).toMatch(/Good "git" signature/);
      // git's own SSH-signed commit verifies with ours.
      const keyFile = join(dir, '.git', 'zzkey');
      execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', keyFile]);
      sh(dir, 'config', 'user.signingkey', keyFile);
      sh(dir, 'commit', '-q', '--allow-empty', '-S', '-m', 'signed by git');
      const raw = execFileSync('git', ['cat-file', 'commit', 'HEAD'], { cwd: dir });
      const pub = execFileSync('ssh-keygen', ['-y', '-f', keyFile], { encoding: 'utf8' });
      expect(verifyCommitBody(raw)).toBe(pub.trim().split(' ').slice(0, 2).join(' '));
    },
  );
});
