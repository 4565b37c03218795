import { describe, expect, it } from 'vitest';
import { summarizeFile } from '../../src/core/ladder/extract.js';
import { mentionedWords, mentionsOf } from '../../src/core/ladder/extract/mentions.js';
import { toIndexRung } from '../../src/core/ladder/search-sync.js';
import type { Rung } from '../../src/schema/rung.js';

// A code file's comments and messages reach its outline as one "Mentions:" line and from there
// the search index: the words `git grep` sees and names and summaries leave out.

const SEMVER_LIKE = `/*
 * Copyright (c) Example Authors. Permission is hereby granted, free of charge.
 */
'use strict'
// Bumps a version: increment major, minor or patch.
class SemVer {
  inc (release) {
    if (!release) throw new Error('invalid increment argument: identifier is empty')
    // Otherwise increment the build number.
    return this.format({ key: 'prerelease' })
  }
}
module.exports = SemVer
`;

describe('mentions', () => {
  it('counts the words of comments and messages, most used first', () => {
    const words = mentionedWords(SEMVER_LIKE, new Set(['semver', 'inc', 'format']));
    expect(words[0]).toBe('increment');
    expect(words).toEqual(expect.arrayContaining(['bumps', 'major', 'minor', 'patch', 'invalid']));
    // Licence text, a string without a space (a key), the strict directive and glue words are
    // left out.
    expect(words).not.toContain('strict');
    expect(words).not.toContain('granted');
    expect(words).not.toContain('charge');
    expect(words).not.toContain('prerelease');
    expect(words).not.toContain('otherwise');
  });

  it('puts them in a code file outline and the index, not in the summary or symbols', () => {
    const e = summarizeFile('classes/semver.js', Buffer.from(SEMVER_LIKE))!;
    expect(e.summary).not.toMatch(/invalid/);
    expect(e.symbols).not.toContain('increment');
    expect(e.detail).toMatch(/^Mentions: increment, /m);
    expect(e.detail).toMatch(/\d+ lines\.$/);
    const rung = { path: 'classes/semver.js', kind: 'file', ...e } as unknown as Rung;
    expect(mentionsOf(rung.detail)).toContain('increment');
    expect(toIndexRung(rung).symbols).toEqual([...e.symbols, ...mentionsOf(e.detail)]);
    // Other rungs' details are not read for mentions.
    expect(toIndexRung({ ...rung, kind: 'directory' }).symbols).toEqual(e.symbols);
  });

  it('gives type declarations none (their prose documents the implementation beside them)', () => {
    const e = summarizeFile('lib/semver.d.ts', Buffer.from(SEMVER_LIKE))!;
    expect(mentionsOf(e.detail)).toEqual([]);
  });

  it('reads nothing from an outline without the line', () => {
    expect(mentionsOf(undefined)).toEqual([]);
    expect(mentionsOf('Exports: x\n3 lines.')).toEqual([]);
    expect(mentionsOf('Mentions: alpha, beta\n3 lines.')).toEqual(['alpha', 'beta']);
  });
});
