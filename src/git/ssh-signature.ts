import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  sign as cryptoSign,
  verify as cryptoVerify,
  type KeyObject,
} from 'node:crypto';
import { ZzError } from '../errors.js';

// Commits signed in git's SSH signature format (`gpg.format = ssh`): an `sshsig` envelope
// (OpenSSH PROTOCOL.sshsig) over the commit without its signature header, armoured, in a
// `gpgsig` header after the committer line. Only ed25519 keys, which node:crypto signs and
// verifies natively, so no ssh-keygen is needed at run time; `git verify-commit` and
// `ssh-keygen -Y verify` accept what this writes (test/sync/ssh-signature.test.ts).

const MAGIC = Buffer.from('SSHSIG');
const NAMESPACE = 'git';
const HASH = 'sha512';
const KEY_TYPE = 'ssh-ed25519';
const ARMOR_BEGIN = '-----BEGIN SSH SIGNATURE-----';
const ARMOR_END = '-----END SSH SIGNATURE-----';
/** DER prefix of an ed25519 SubjectPublicKeyInfo; the raw 32-byte key follows. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export interface SshSigningKey {
  /** `ssh-ed25519 AAAA…` (authorized_keys / allowed signers format, no comment). */
  publicKey: string;
  privateKey: KeyObject;
}

function sshString(b: Buffer | string): Buffer {
  const body = typeof b === 'string' ? Buffer.from(b, 'utf8') : b;
  const len = Buffer.alloc(4);
  len.writeUInt32BE(body.length);
  return Buffer.concat([len, body]);
}

class Reader {
  private off = 0;
  constructor(private readonly b: Buffer) {}
  u32(): number {
    if (this.off + 4 > this.b.length) throw new Error('truncated');
    const v = this.b.readUInt32BE(this.off);
    this.off += 4;
    return v;
  }
  bytes(n: number): Buffer {
    if (this.off + n > this.b.length) throw new Error('truncated');
    const v = this.b.subarray(this.off, this.off + n);
    this.off += n;
    return v;
  }
  string(): Buffer {
    return this.bytes(this.u32());
  }
}

function rawEd25519(pub: KeyObject): Buffer {
  const der = pub.export({ type: 'spki', format: 'der' });
  if (!der.subarray(0, ED25519_SPKI_PREFIX.length).equals(ED25519_SPKI_PREFIX)) {
    throw new ZzError('invalid_argument', 'only ed25519 keys can sign zz commits');
  }
  return der.subarray(ED25519_SPKI_PREFIX.length);
}

function publicKeyBlob(raw: Buffer): Buffer {
  return Buffer.concat([sshString(KEY_TYPE), sshString(raw)]);
}

export function publicKeyLine(pub: KeyObject): string {
  return `${KEY_TYPE} ${publicKeyBlob(rawEd25519(pub)).toString('base64')}`;
}

/** Parses `ssh-ed25519 AAAA… [comment]` into a key; null when it is not an ed25519 key. */
export function parsePublicKeyLine(line: string): KeyObject | null {
  const [type, b64] = line.trim().split(/\s+/);
  if (type !== KEY_TYPE || !b64) return null;
  try {
    const r = new Reader(Buffer.from(b64, 'base64'));
    if (r.string().toString('utf8') !== KEY_TYPE) return null;
    const raw = r.string();
    if (raw.length !== 32) return null;
    return createPublicKey({
      key: Buffer.concat([ED25519_SPKI_PREFIX, raw]),
      format: 'der',
      type: 'spki',
    });
  } catch {
    return null;
  }
}

/** The key's canonical line without comment, for comparing keys. */
export function normalizeKeyLine(line: string): string | null {
  const k = parsePublicKeyLine(line);
  return k ? publicKeyLine(k) : null;
}

export function generateSigningKey(): { key: SshSigningKey; pem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    key: { privateKey, publicKey: publicKeyLine(publicKey) },
    pem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

export function signingKeyFromPem(pem: string): SshSigningKey {
  const privateKey = createPrivateKey(pem);
  return { privateKey, publicKey: publicKeyLine(createPublicKey(privateKey)) };
}

/** DER prefix of an ed25519 PKCS#8 private key; the 32-byte seed follows. */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const OPENSSH_BEGIN = '-----BEGIN OPENSSH PRIVATE KEY-----';
const OPENSSH_END = '-----END OPENSSH PRIVATE KEY-----';

/**
 * An unencrypted ed25519 key in OpenSSH's private key format (what `ssh-keygen -t ed25519`
 * writes; PROTOCOL.key), for signing as the key git's `user.signingkey` names. A key with a
 * passphrase cannot be used in-process: that is said, never prompted for.
 */
export function signingKeyFromOpenSsh(text: string): SshSigningKey {
  const bad = (why: string) => new ZzError('invalid_argument', `cannot use this SSH key: ${why}`);
  const start = text.indexOf(OPENSSH_BEGIN);
  const end = text.indexOf(OPENSSH_END);
  if (start < 0 || end < start) throw bad('not an OpenSSH private key');
  const blob = Buffer.from(
    text.slice(start + OPENSSH_BEGIN.length, end).replace(/\s+/g, ''),
    'base64',
  );
  const magic = Buffer.from('openssh-key-v1\0');
  if (!blob.subarray(0, magic.length).equals(magic)) throw bad('not an OpenSSH private key');
  try {
    const r = new Reader(blob.subarray(magic.length));
    const cipher = r.string().toString();
    r.string(); // kdf name
    r.string(); // kdf options
    if (cipher !== 'none')
      throw bad('it has a passphrase (zz signs in-process and cannot ask for it)');
    if (r.u32() !== 1) throw bad('it holds more than one key');
    r.string(); // public key
    const priv = new Reader(r.string());
    if (priv.u32() !== priv.u32()) throw bad('its check bytes differ (corrupt)');
    if (priv.string().toString() !== KEY_TYPE) throw bad('only ed25519 keys can sign zz commits');
    priv.string(); // public key (32 bytes)
    const secret = priv.string(); // seed ‖ public key
    if (secret.length !== 64) throw bad('malformed ed25519 key');
    const privateKey = createPrivateKey({
      key: Buffer.concat([ED25519_PKCS8_PREFIX, secret.subarray(0, 32)]),
      format: 'der',
      type: 'pkcs8',
    });
    return { privateKey, publicKey: publicKeyLine(createPublicKey(privateKey)) };
  } catch (e) {
    if (e instanceof ZzError) throw e;
    throw bad('truncated or malformed');
  }
}

function signedData(message: Buffer): Buffer {
  return Buffer.concat([
    MAGIC,
    sshString(NAMESPACE),
    sshString(''),
    sshString(HASH),
    sshString(createHash(HASH).update(message).digest()),
  ]);
}

/** An armoured sshsig signature of `message` in the git namespace. */
export function sshSign(message: Buffer, key: SshSigningKey): string {
  const raw = rawEd25519(createPublicKey(key.privateKey));
  const sig = cryptoSign(null, signedData(message), key.privateKey);
  const blob = Buffer.concat([
    MAGIC,
    Buffer.from([0, 0, 0, 1]),
    sshString(publicKeyBlob(raw)),
    sshString(NAMESPACE),
    sshString(''),
    sshString(HASH),
    sshString(Buffer.concat([sshString(KEY_TYPE), sshString(sig)])),
  ]);
  const b64 = blob.toString('base64');
  const lines = [ARMOR_BEGIN];
  for (let i = 0; i < b64.length; i += 76) lines.push(b64.slice(i, i + 76));
  lines.push(ARMOR_END);
  return lines.join('\n');
}

/** The public key (as a line) that made a valid signature of `message`, else null. */
export function sshVerify(message: Buffer, armored: string): string | null {
  const body = armored
    .trim()
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== ARMOR_BEGIN && l !== ARMOR_END)
    .join('');
  try {
    const r = new Reader(Buffer.from(body, 'base64'));
    if (!r.bytes(6).equals(MAGIC) || r.u32() !== 1) return null;
    const pubBlob = r.string();
    if (r.string().toString('utf8') !== NAMESPACE) return null;
    r.string(); // reserved
    const hash = r.string().toString('utf8');
    if (hash !== 'sha512' && hash !== 'sha256') return null;
    const sigBlob = new Reader(r.string());
    if (sigBlob.string().toString('utf8') !== KEY_TYPE) return null;
    const sig = sigBlob.string();
    const line = `${KEY_TYPE} ${pubBlob.toString('base64')}`;
    const pub = parsePublicKeyLine(line);
    if (!pub) return null;
    const data = Buffer.concat([
      MAGIC,
      sshString(NAMESPACE),
      sshString(''),
      sshString(hash),
      sshString(createHash(hash).update(message).digest()),
    ]);
    return cryptoVerify(null, data, pub, sig) ? publicKeyLine(pub) : null;
  } catch {
    return null;
  }
}

/** Adds a `gpgsig` header (after the committer line) signing the commit body as git does. */
export function signCommitBody(body: Buffer, key: SshSigningKey): Buffer {
  const text = body.toString('utf8');
  const end = text.indexOf('\n\n');
  if (end < 0) throw new ZzError('internal', 'not a commit body');
  const armored = sshSign(body, key);
  const header = 'gpgsig ' + armored.split('\n').join('\n ');
  return Buffer.from(`${text.slice(0, end)}\n${header}${text.slice(end)}`, 'utf8');
}

/**
 * Splits a raw commit into the signed payload and its SSH signature and verifies it. Returns
 * the signing key's line, or null when the commit is unsigned, signed otherwise, or forged.
 */
export function verifyCommitBody(raw: Buffer): string | null {
  const text = raw.toString('utf8');
  const end = text.indexOf('\n\n');
  const head = end < 0 ? text : text.slice(0, end);
  const lines = head.split('\n');
  const kept: string[] = [];
  const sig: string[] = [];
  let inSig = false;
  for (const line of lines) {
    if (line.startsWith('gpgsig ')) {
      inSig = true;
      sig.push(line.slice(7));
    } else if (inSig && line.startsWith(' ')) sig.push(line.slice(1));
    else {
      inSig = false;
      kept.push(line);
    }
  }
  if (sig.length === 0 || !sig[0]!.startsWith(ARMOR_BEGIN)) return null;
  const payload = Buffer.from(kept.join('\n') + (end < 0 ? '' : text.slice(end)), 'utf8');
  return sshVerify(payload, sig.join('\n'));
}
