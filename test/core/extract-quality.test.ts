import { describe, expect, it } from 'vitest';
import { summarizeDirectory, summarizeFile, type Extract } from '../../src/core/ladder/extract.js';

// What issue 15 found on real code nobody here wrote: a 1,140-line class file read as "module
// exporting Ky" and was missed by searches for the retry, JSON and timeout logic it holds;
// README badges and sponsor blocks became summaries; `1 ..editorconfig` in folder censuses.
// The sources below are shaped like those files (ky's core class, eslint's and ajv's READMEs).

const file = (path: string, text: string): Extract => {
  const out = summarizeFile(path, Buffer.from(text));
  expect(out).not.toBeNull();
  return out!;
};

const KY = `import {HTTPError} from '../errors/HTTPError.js';
import {TimeoutError} from '../errors/TimeoutError.js';

export class Ky {
\tstatic create(input, options) {
\t\tconst ky = new Ky(input, options);
\t\tconst fn = async () => {
\t\t\tif (typeof ky._options.timeout === 'number' && ky._options.timeout > maxSafeTimeout) {
\t\t\t\tthrow new RangeError('The timeout option cannot be greater than ' + maxSafeTimeout);
\t\t\t}
\t\t\treturn ky._retry(fn);
\t\t};
\t\treturn fn;
\t}

\tpublic request: Request;
\tprotected abortController?: AbortController;
\tprivate _retryCount = 0;
\t#options: Options;

\tconstructor(input, options = {}) {
\t\tthis._input = input;
\t\tconst text = \`{\${input}}\`;
\t}

\tprotected _calculateRetryDelay(error: unknown) {
\t\tthis._retryCount++;
\t\tif (this._retryCount > this._options.retry.limit) { throw error; }
\t\treturn 0.3 * (2 ** (this._retryCount - 1)) * 1000;
\t}

\tprotected _decorateResponse(response: Response): Response {
\t\tif (this._options.parseJson) {
\t\t\tresponse.json = async () => this._options.parseJson(await response.text());
\t\t}
\t\treturn response;
\t}

\tprotected async _retry(fn) {
\t\ttry { return await fn(); } catch (error) {
\t\t\tconst ms = Math.min(this._calculateRetryDelay(error), maxSafeTimeout);
\t\t\tawait delay(ms, {signal: this._options.signal});
\t\t\treturn this._retry(fn);
\t\t}
\t}

\tget json() { return this._decorateResponse; }

\tprotected async _fetch(): Promise<Response> {
\t\tif (this._options.timeout === false) { return this._options.fetch(this.request.clone()); }
\t\treturn timeout(this.request.clone(), this.abortController, this._options);
\t}
}

function normalizeRetryOptions(retry) { return retry; }
`;

describe('extract quality on real-shaped code', () => {
  it('names a class file by its members, not only its one export', () => {
    const e = file('source/core/Ky.ts', KY);
    expect(e.symbols).toContain('Ky');
    for (const m of ['create', 'request', '_retry', '_calculateRetryDelay', '_fetch', 'json'])
      expect(e.symbols).toContain(`Ky.${m}`);
    expect(e.symbols).toContain('Ky.options'); // #options, shown without its mark
    expect(e.symbols).not.toContain('Ky.constructor');
    expect(e.symbols).toContain('normalizeRetryOptions');
    // Public members come before _private ones, and the summary names them.
    expect(e.symbols.indexOf('Ky.request')).toBeLessThan(e.symbols.indexOf('Ky._retry'));
    expect(e.summary).toMatch(/Class Ky has create, request/);
    // Braces inside strings and templates do not end the class early.
    expect(e.symbols).toContain('Ky._fetch');
  });

  it('fills detail with the outline of a code file', () => {
    const e = file('source/core/Ky.ts', KY);
    expect(e.detail).toMatch(/^Exports: Ky$/m);
    expect(e.detail).toMatch(
      /^class Ky \(line 4\): create, request, abortController, json, .*_retry/m,
    );
    expect(e.detail).toMatch(/^Functions: normalizeRetryOptions$/m);
    expect(e.detail).toMatch(/\d+ lines\.$/);
  });

  it("reads a line comment glued to a constant as that constant's, not the file's", () => {
    const src = `'use strict'

// Characters that end an at-rule name, mirroring RE_AT_END in the tokenizer.
const AT_NAME_END = /[;{}]/

class Stringifier {
  raw(node) {
    return node
  }
}
module.exports = Stringifier
`;
    expect(file('lib/stringifier.js', src).summary).toMatch(
      /^JavaScript module exporting Stringifier \(\d+ lines\)\./,
    );
    // Set apart by a blank line, or naming the file's own export, it speaks for the file.
    const apart = src.replace('tokenizer.\nconst', 'tokenizer.\n\nconst');
    expect(file('lib/stringifier.js', apart).summary).toMatch(/^Characters that end an at-rule/);
    const own = src.replace('const AT_NAME_END', 'const stringifier');
    expect(file('lib/stringifier.js', own).summary).toMatch(/^Characters that end an at-rule/);
  });

  it('skips badges, link bars and sponsor blocks in a README', () => {
    const e = file(
      'README.md',
      `[![npm version](https://img.shields.io/npm/v/eslint.svg)](https://www.npmjs.com/package/eslint)
[![Open Collective Backers](https://img.shields.io/opencollective/backers/eslint)](https://opencollective.com/eslint)

# ESLint

[Website](https://eslint.org) |
[Configure ESLint](https://eslint.org/docs/latest/use/configure) |
[Rules](https://eslint.org/docs/rules/) |
[Report Bugs](https://eslint.org/docs/latest/contribute/report-bugs)

Support from our sponsors and backers on Open Collective keeps the lights on.

ESLint is a tool for identifying and reporting on patterns found in JavaScript code.

## Please sponsor ESLint development

Since I asked for your donations, this paragraph is about money.

## Installation and Usage

npm install eslint

## Sponsors

Gold sponsors: a long list of companies.

## Contributors ✨

## Configuration
`,
    );
    expect(e.title).toBe('ESLint');
    expect(e.summary).toMatch(/^ESLint is a tool for identifying and reporting/);
    expect(e.summary).not.toMatch(/Website|sponsor|Contributors|Open Collective/i);
    expect(e.summary).toMatch(/Sections: Installation and Usage and Configuration\./);
  });

  it('never doubles the dot of a dotfile in a folder census', () => {
    const d = summarizeDirectory(
      'cfg',
      [
        {
          name: '.editorconfig',
          kind: 'file',
          title: '.editorconfig',
          summary: 'Editor settings.',
        },
        { name: 'a.ts', kind: 'file', title: 'a.ts', summary: 'A.' },
        { name: 'b.ts', kind: 'file', title: 'b.ts', summary: 'B.' },
      ],
      null,
      null,
    );
    expect(d.summary).toContain('3 files (2 .ts, 1 .editorconfig)');
    expect(d.summary).not.toMatch(/\.\.\w/);
  });
});
