import { describe, expect, it } from 'vitest';
import { parseZzCommit } from '../../src/core/sync/validate.js';
import { formatOpMessage, type OpRecord } from '../../src/store/index.js';

// Fetched commits are parsed with the store's parseOpMessage and the typed parser of the ref's
// entity: an op the fold would refuse is a problem of that commit (quarantined by ref), not a
// TypeError later.

const op = (o: Partial<OpRecord>): OpRecord => ({
  v: 1,
  id: '0123456789abcdef-00112233445566778899aabbccddeeff',
  actor: 'alice@example.com',
  lamport: 3,
  time: '2026-01-01T00:00:00.000Z',
  op: 'ask_post',
  args: {},
  ...o,
});

const commit = (ops: OpRecord[]) => ({
  oid: 'a'.repeat(40),
  parents: ['b'.repeat(40)],
  message: formatOpMessage('test', ops),
});

describe('parseZzCommit with typed parsers', () => {
  it('refuses a Lane op with the wrong arguments, and an op of another entity, by commit', () => {
    const bad = commit([op({ op: 'ask_post', args: { nonsense: true } })]);
    expect(parseZzCommit(bad, 'refs/zz/lanes/web').problem).toMatch(/ask_post|args/);
    const foreign = commit([op({ op: 'key_add', args: {} })]);
    expect(parseZzCommit(foreign, 'refs/zz/lanes/web').problem).not.toBeNull();
    // Without a ref (nothing to fold it into) only the envelope is checked.
    expect(parseZzCommit(bad).problem).toBeNull();
  });
});
