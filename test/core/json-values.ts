import fc from 'fast-check';

// Generated JSON-like values for tests that hold a JSON helper to JSON.stringify (paging.ts's
// jsonBytes, json-text.ts's jsonText): strings of every kind (ASCII, escapes, control
// characters, astral and lone surrogates), odd numbers, undefined, nested arrays and objects.

export function jsonValues(opts: { sparse?: boolean } = {}): fc.Arbitrary<unknown> {
  const text = fc.oneof(
    fc.string(),
    fc.string({ unit: 'grapheme' }),
    fc.string({ unit: 'binary' }),
    fc.constantFrom(
      '',
      '"',
      '\\',
      '\n',
      '\u0000',
      '\u2028',
      'é',
      '😀',
      '\ud800',
      'a\u007fb',
      'toJSON',
    ),
  );
  return fc.letrec((tie) => ({
    any: fc.oneof(
      { depthSize: 'small' },
      text,
      fc.double(),
      fc.integer(),
      fc.constantFrom(-0, NaN, Infinity, -Infinity, true, false, null, undefined),
      fc.array(tie('any'), { maxLength: 5 }),
      ...(opts.sparse ? [fc.sparseArray(tie('any'), { maxLength: 5 })] : []),
      fc.dictionary(text, tie('any'), { maxKeys: 5 }),
    ),
  })).any;
}
