import { promises as fsp } from 'node:fs';
import { dirname } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ZzError } from '../errors.js';
import { credentialsFile } from './paths.js';

// ~/.config/zz/credentials.json (mode 0600), keyed by server URL: the person's token and the
// tokens of their agents. Written atomically; the file never leaves this machine.

export interface ServerCredentials {
  actor: string;
  token: string;
  agents?: Record<string, { actor: string; token: string }>;
}

export interface CredentialsFile {
  servers: Record<string, ServerCredentials>;
}

export async function readCredentials(env?: NodeJS.ProcessEnv): Promise<CredentialsFile> {
  try {
    const data = JSON.parse(await fsp.readFile(credentialsFile(env), 'utf8')) as CredentialsFile;
    return data && typeof data.servers === 'object' ? data : { servers: {} };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { servers: {} };
    throw new ZzError(
      'invalid_argument',
      `cannot read ${credentialsFile(env)}: ${(e as Error).message}`,
    );
  }
}

export async function writeCredentials(
  data: CredentialsFile,
  env?: NodeJS.ProcessEnv,
): Promise<void> {
  const file = credentialsFile(env);
  await fsp.mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  await fsp.writeFile(tmp, JSON.stringify(data, null, 2) + '\n', { mode: 0o600 });
  await fsp.rename(tmp, file);
  await fsp.chmod(file, 0o600);
}

export function normalizeServer(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new ZzError('invalid_argument', `--server: "${url}" is not a URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new ZzError('invalid_argument', '--server must be an http(s) URL');
  }
  return `${u.protocol}//${u.host}`;
}
