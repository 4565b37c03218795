import { describe, expect, it } from 'vitest';
import {
  redactAndCut,
  redactCutEnd,
  redactCutStart,
  redactSecrets,
} from '../../src/schema/redact.js';

// The one redaction helper models/ and github/ share: every case either of them handled
// before they shared it, for both.

const KEY = 'sk-test/AbC+dEf=0123456789abcdefghijklmnopqrstuv';
const GHP = 'ghp_' + 'S'.repeat(36);

describe('redactSecrets', () => {
  it('takes a known secret out as is, percent-encoded and JSON-escaped', () => {
    const forms = [KEY, encodeURIComponent(KEY), JSON.stringify(KEY).slice(1, -1)];
    forms.push(forms[2]!.replace(/\//g, '\\/'));
    for (const f of forms) expect(redactSecrets(`a ${f} b`, [KEY])).toBe('a [redacted] b');
    // Too short to take out without garbling the text: left.
    expect(redactSecrets('a b c', ['a'])).toBe('a b c');
  });

  it("takes out credentials by shape, whoever's they are", () => {
    const pat = `github_pat_${'A'.repeat(30)}`;
    expect(redactSecrets(`a ${GHP} b ${pat} c gho_${'x'.repeat(20)}`)).toBe(
      'a [redacted] b [redacted] c [redacted]',
    );
    expect(redactSecrets(`Authorization: token ${'t'.repeat(40)}`)).toBe(
      'Authorization: token [redacted]',
    );
    expect(redactSecrets('from Bearer sk-LANE-1234, then')).toBe('from Bearer [redacted], then');
    expect(redactSecrets(`Bearer ${'x'.repeat(30)}`)).toBe('Bearer [redacted]');
    expect(redactSecrets('Bearer abc.def.ghi')).toBe('Bearer [redacted]');
    expect(redactSecrets('https://bob:hunter2@example.com/x')).toBe(
      'https://[redacted]@example.com/x',
    );
    // A token as the URL's user name, and GitHub's 40-hex classic tokens after `token`.
    const hex = '0123456789abcdef'.repeat(2) + '01234567';
    expect(redactSecrets(`https://${hex}@github.com/o/r`)).toBe(
      'https://[redacted]@github.com/o/r',
    );
    expect(redactSecrets(`token ${'ab12'.repeat(10)} and token ${hex}`)).toBe(
      'token [redacted] and token [redacted]',
    );
  });

  it('leaves prose about tokens and bearers alone', () => {
    for (const t of [
      'the token cannot see it',
      'token authentication/authorization is refused',
      'see token src/core/token-store.ts for the hashing',
      'git clone ssh://git@example.com/o/r.git',
      'https://john.smith@example.com/o/r',
      'the bearer of bad news',
      'Bearer bonds.',
      '// TODO @alice',
    ])
      expect(redactSecrets(t)).toBe(t);
  });
});

describe("zz's own tokens", () => {
  // core/token-store.ts: `zzt_` and 43 base64url characters.
  const ZZT = 'zzt_' + 'aB3_-x'.repeat(7) + 'Q';

  it('are taken out by shape, wherever they sit', () => {
    expect(ZZT).toMatch(/^zzt_[A-Za-z0-9_-]{43}$/);
    for (const t of [
      `token ${ZZT}`,
      `{"token":"${ZZT}"}`,
      `ZZ_TOKEN=${ZZT}\0HOME=/root`,
      `ZZ_TOKEN_${ZZT}`,
    ]) {
      expect(redactSecrets(t)).not.toContain('aB3_-x');
      expect(redactSecrets(t)).toContain('[redacted]');
    }
    // Prose naming the prefix stays.
    expect(redactSecrets('a token starts with zzt_…')).toBe('a token starts with zzt_…');
  });

  it('are taken off the end of a cut that fell inside one', () => {
    expect(redactCutEnd(`x ${ZZT.slice(0, 10)}`)).toBe('x [redacted]');
  });
});

describe('the backstops for a cut', () => {
  it('takes a secret split by a cut off its end, or its start', () => {
    expect(redactCutEnd(`abc ${KEY.slice(0, 12)}`, [KEY])).toBe('abc [redacted]');
    expect(redactCutEnd(`abc ${KEY.slice(0, 5)}`, [KEY])).toBe(`abc ${KEY.slice(0, 5)}`);
    expect(redactCutEnd(`abc ${GHP.slice(0, 9)}`)).toBe('abc [redacted]');
    expect(redactCutEnd('abc Bearer sk-1')).toBe('abc [redacted]');
    expect(redactCutEnd('the bearer of')).toBe('the bearer of');
    expect(redactCutStart(`${KEY.slice(-12)} abc`, [KEY])).toBe('[redacted] abc');
    expect(redactCutStart(`${KEY.slice(-5)} abc`, [KEY])).toBe(`${KEY.slice(-5)} abc`);
  });

  it('redacts before it cuts', () => {
    const text = `${'x'.repeat(20)} ${KEY} tail`;
    expect(redactAndCut(text, 25, [KEY])).toBe(`${'x'.repeat(20)} [red…`);
    expect(redactAndCut(`${'x'.repeat(20)} ${KEY.slice(0, 30)}`, 40, [KEY])).toBe(
      `${'x'.repeat(20)} [redacted]…`,
    );
    expect(redactAndCut('short', 25, [KEY])).toBe('short');
  });
});
