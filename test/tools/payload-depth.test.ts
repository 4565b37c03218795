import { describe, expect, it } from 'vitest';
import { ZzError } from '../../src/errors.js';
import { parseArgs, registry } from '../../src/tools/index.js';

// An Ask's payload, as every front end's arguments are checked (HTTP, MCP, CLI): nested at most
// one level less than an op's args may be when read back from a commit (store/op-message.ts),
// so nothing written here is refused by the next reader. MCP arguments are not depth-checked
// as HTTP bodies are: a very deep one is refused by name, not thrown as a stack overflow.

const nest = (levels: number): Record<string, unknown> => {
  let v: Record<string, unknown> = { a: 1 };
  for (let i = 1; i < levels; i++) v = { a: v };
  return v;
};

const post = (payload: Record<string, unknown>) =>
  parseArgs(registry.get('ask_post')!.input, {
    lane_id: 'web',
    kind: 'work',
    title: 't',
    payload,
  });

describe('ask_post payload depth', () => {
  it('takes 63 levels, refuses 64 and 100,000 with a clear error', () => {
    expect(() => post(nest(63))).not.toThrow();
    for (const levels of [64, 100_000]) {
      let err: unknown = null;
      try {
        post(nest(levels));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ZzError);
      expect((err as ZzError).code).toBe('invalid_argument');
      expect((err as ZzError).message).toMatch(/nested at most 63 levels/);
    }
  });
});
