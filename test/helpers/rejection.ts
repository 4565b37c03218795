import { expect } from 'vitest';
import { ZzError } from '../../src/errors.js';

// The one "this call must fail" helper: awaits `p`, fails the test if it resolves or rejects
// with anything but a ZzError (anything else is a bug), and answers the error for assertions.

export async function zzErrorOf(p: Promise<unknown>): Promise<ZzError> {
  const e = await p.then(
    () => {
      throw new Error('expected a ZzError, but the call succeeded');
    },
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(ZzError);
  return e as ZzError;
}
