import { randomBytes, randomFillSync } from 'node:crypto';

// Op ids: a replica id and 128 random bits, drawn from a pooled CSPRNG (Entity's group commit
// makes one per op, on the event loop).

/** A per-process replica id for stores that keep none (memory; a store that cannot write one). */
export const PROCESS_REPLICA = randomBytes(8).toString('hex');

/** `<16 hex replica>-<32 hex random>`: 128 random bits, unique across machines and restarts. */
export function newOpId(replica: string = PROCESS_REPLICA): string {
  return `${replica}-${randomHex(16)}`;
}

// Ids are drawn from a pool of CSPRNG bytes filled 4 KiB at a time, as crypto.randomUUID()
// does: randomBytes(16) per op cost ~4 µs (a call into the CSPRNG and a new Buffer each), a
// measurable part of a group commit's synchronous work. Each byte is handed out once.
const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let poolAt = POOL_BYTES;

/** `bytes` (≤ 64) fresh random bytes as hex. */
export function randomHex(bytes: number): string {
  if (!Number.isInteger(bytes) || bytes < 1 || bytes > 64) {
    throw new RangeError(`randomHex takes 1 to 64 bytes, not ${bytes}`);
  }
  if (poolAt + bytes > POOL_BYTES) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const hex = pool.toString('hex', poolAt, poolAt + bytes);
  poolAt += bytes;
  return hex;
}
