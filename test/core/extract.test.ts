import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  MAX_SUMMARY_CHARS,
  skipReason,
  summarizeChangeset,
  summarizeDirectory,
  summarizeFile,
  summarizeRelease,
  summarizeRepo,
  type Extract,
} from '../../src/core/ladder/extract.js';

const file = (path: string, text: string): Extract => {
  const out = summarizeFile(path, Buffer.from(text));
  expect(out).not.toBeNull();
  return out!;
};

/** Code, not prose: statement ends, arrows, declarations at a line start, JSON braces. */
function looksLikeRawCode(s: string): boolean {
  return (
    /[;{]\s*$/m.test(s) ||
    /=>|\bfunction\s*\([^)]*\)\s*\{|\brequire\(|^\s*(?:import|const|let|var|return|export)\s/m.test(
      s,
    ) ||
    /^\s*[{[]\s*"/.test(s) ||
    /\bif\s*\(.*\)\s*\{/.test(s)
  );
}

describe('summarizeFile: code', () => {
  it('skips licence, lint and type-checker headers and uses the JSDoc of the export named like the file', () => {
    const out = file(
      'src/config/parse-config.ts',
      `#!/usr/bin/env node
/*
 * Copyright (c) 2024 Acme Inc. All rights reserved.
 * Licensed under the MIT License. See LICENSE in the project root.
 */
/* eslint-disable no-console, @typescript-eslint/no-explicit-any */
// @ts-nocheck
import { readFile } from 'node:fs/promises';

const internal = 1;

/** Raised when a file is not valid. */
export class ConfigError extends Error {}

/**
 * Parses a configuration file into a validated {@link Config} object, applying
 * \`DEFAULT_PORT\` when the port is missing.
 *
 * Longer explanation that should not be in the summary.
 * @param path the file to read
 * @returns the config
 */
export async function parseConfig(path: string): Promise<Config> {
  return JSON.parse(await readFile(path, 'utf8'));
}
export const DEFAULT_PORT = 8080;
export interface Config { port: number }
export type Mode = 'a' | 'b';
export { internal as exposed };
export default parseConfig;
`,
    );
    expect(out.title).toBe('parse-config.ts');
    expect(out.summary).toMatch(
      /^Parses a configuration file into a validated Config object, applying DEFAULT_PORT when the port is missing\./,
    );
    expect(out.summary).not.toMatch(
      /copyright|licen[cs]e|eslint|ts-nocheck|@param|Longer explanation/i,
    );
    // Declared names first; then names the body uses (e.g. readFile), never comment words.
    expect(out.symbols.slice(0, 6)).toEqual([
      'ConfigError',
      'parseConfig',
      'DEFAULT_PORT',
      'Config',
      'Mode',
      'exposed',
    ]);
    expect(out.symbols).not.toContain('eslint');
    expect(out.summary).toContain(
      'Exports ConfigError, parseConfig, DEFAULT_PORT, Config, Mode and exposed.',
    );
  });

  it('prefers a file-level comment, and says what a module exports when it has no docs', () => {
    const lead = file(
      'src/search/ladder-index.ts',
      `// Full-text search over Ladder rungs, one shard per repo.\n// Second line of the same comment.\n\nexport class LadderSearch {}\n`,
    );
    expect(lead.summary).toBe(
      'Full-text search over Ladder rungs, one shard per repo. Second line of the same comment. Exports LadderSearch.',
    );
    const bare = file(
      'lib/util.js',
      `'use strict';\nfunction a() {}\nmodule.exports = { toSlug: a, fromSlug: a, nested: { deep: 1 } };\n`,
    );
    expect(bare.summary).toBe('JavaScript module exporting toSlug, fromSlug and nested (3 lines).');
    const none = file('lib/side-effect.js', `console.log('hi');\n`);
    expect(none.summary).toMatch(/^JavaScript module, 1 line, with no exported declarations/);
    const reexport = file(
      'src/index.ts',
      `export * from './a.js';\nexport { b, c as d } from './b.js';\n`,
    );
    expect(reexport.summary).toBe(
      'TypeScript module re-exporting from ./a.js and ./b.js: b and d (2 lines).',
    );
  });

  it('reads Python docstrings and top-level definitions', () => {
    const doc = file(
      'tools/migrate.py',
      `#!/usr/bin/env python3
# -*- coding: utf-8 -*-
"""Apply database migrations in order.

Details that do not belong in the summary.
"""
import os

class Migration:
    def apply(self): ...

def run_migrations(db):
    pass

def _private():
    pass
`,
    );
    expect(doc.summary).toBe(
      'Apply database migrations in order. Defines Migration and run_migrations.',
    );
    expect(doc.symbols).toEqual(['Migration', 'run_migrations']);
    const bare = file(
      'tools/helpers.py',
      `import re\n\nclass Slug:\n    pass\n\ndef slugify(s):\n    return s\n\ndef unslug(s):\n    return s\n`,
    );
    expect(bare.summary).toBe(
      'Python module defining class Slug; functions slugify and unslug (10 lines).',
    );
    const all = file(
      'pkg/__init__.py',
      `"""Public API of pkg."""\n__all__ = ["load", "dump"]\nfrom .io import load, dump\n`,
    );
    expect(all.summary).toBe('Public API of pkg. Exports load and dump.');
  });

  it('reads Go package comments, Rust inner docs and shell header comments', () => {
    const go = file(
      'server/server.go',
      `// Copyright 2024 Acme. SPDX-License-Identifier: MIT\n\n// Package server serves the HTTP API.\npackage server\n\n// Start starts it.\nfunc Start() {}\nfunc helper() {}\ntype Config struct{}\n`,
    );
    expect(go.summary).toBe('Package server serves the HTTP API. Exports Start and Config.');
    const rs = file(
      'src/lib.rs',
      `//! Fast radix trees for term lookup.\n//!\n//! More.\n\npub struct Tree;\npub fn build() {}\nfn private() {}\n`,
    );
    expect(rs.summary).toBe('Fast radix trees for term lookup. Exports Tree and build.');
    const sh = file(
      'scripts/release.sh',
      `#!/usr/bin/env bash\n# Tags and publishes a release to npm.\nset -euo pipefail\nbump() {\n  :\n}\n`,
    );
    expect(sh.summary).toBe('Tags and publishes a release to npm. Defines bump.');
  });

  it('summarises test files by what they cover', () => {
    const t = file(
      'test/search/ladder-index.test.ts',
      `import { describe, it } from 'vitest';\ndescribe('LadderSearch queries', () => {\n  it('finds rungs', () => {});\n});\ndescribe('persistence', () => {});\n`,
    );
    expect(t.summary).toBe(
      'Tests for ladder-index (5 lines) covering LadderSearch queries, finds rungs and persistence.',
    );
  });

  it('recognises minified bundles and generated code', () => {
    const min = file('dist/app.min.js', `!function(){${'var a=1;'.repeat(2000)}}();`);
    expect(min.summary).toBe('Minified JavaScript bundle (16 KB).');
    const gen = file(
      'src/gen/api.ts',
      `// Code generated by openapi-gen. DO NOT EDIT.\nexport interface Pet { id: number }\n`,
    );
    expect(gen.summary).toBe(
      'Generated code (do not edit by hand). TypeScript module exporting Pet (2 lines).',
    );
  });
});

describe('summarizeFile: documents and data', () => {
  it('takes the H1, first paragraph and H2s of Markdown, skipping badges, HTML and code', () => {
    const out = file(
      'README.md',
      `---
layout: default
---
<p align="center"><img src="logo.png" width="120"></p>

# zz

[![CI](https://github.com/acme/zz/actions/workflows/ci.yml/badge.svg)](https://github.com/acme/zz/actions) [![npm](https://img.shields.io/npm/v/zz.svg)](https://npmjs.com/zz)

\`\`\`sh
npm install zz
\`\`\`

**zz** is a git-native coordination daemon for [coding agents](https://example.com). It keeps its state on \`refs/zz/*\`. A third sentence that is cut.

## Install
text
## Usage
## The Ladder
`,
    );
    expect(out.title).toBe('zz');
    expect(out.summary).toBe(
      'zz is a git-native coordination daemon for coding agents. It keeps its state on refs/zz/*. Sections: Install, Usage and The Ladder.',
    );
    expect(out.symbols).toEqual(['Install', 'Usage', 'The Ladder']);
  });

  it('summarises changelogs by their releases', () => {
    const out = file(
      'CHANGELOG.md',
      `# Changelog\n\n## 2.0.0 (2024-05-01)\n- big\n\n## 1.1.0\n- small\n\n## 1.0.0\n- first\n`,
    );
    expect(out.summary).toBe(
      'Changelog covering 3 releases; latest: 2.0.0 (2024-05-01), oldest: 1.0.0.',
    );
  });

  it('reads package.json name, description, keywords, bin and scripts', () => {
    const out = file(
      'package.json',
      JSON.stringify({
        name: 'zz',
        version: '0.1.0',
        description: 'Git-native, local-first coordination for coding agents.',
        keywords: ['git', 'agents', 'mcp'],
        bin: { zz: 'dist/cli/main.js' },
        scripts: { build: 'tsc', test: 'vitest run' },
        dependencies: { zod: '4', yargs: '18' },
      }),
    );
    expect(out.title).toBe('zz (package.json)');
    expect(out.summary).toBe(
      'npm package zz 0.1.0: Git-native, local-first coordination for coding agents. Keywords: git, agents and mcp. Commands: zz. Scripts: build and test. 2 dependencies.',
    );
    expect(out.symbols).toEqual(['zz', 'build', 'test']);
  });

  it('falls back to top-level keys for JSON, YAML and TOML, with known manifests named', () => {
    expect(
      file('config/app.json', '{"port": 8080, "hosts": ["a"], "tls": {"cert": "x"}}').summary,
    ).toBe('JSON object with keys port, hosts and tls.');
    expect(
      file('deploy/values.yaml', '# Helm values for the API.\nreplicas: 2\nimage:\n  tag: x\n')
        .summary,
    ).toBe('Helm values for the API. YAML with top-level keys replicas and image.');
    expect(
      file(
        '.github/workflows/ci.yml',
        'name: CI\non: [push, pull_request]\njobs:\n  test:\n    runs-on: x\n  lint:\n    runs-on: y\n',
      ).summary,
    ).toBe('GitHub Actions workflow "CI" run on push and pull_request. Jobs: test and lint.');
    expect(
      file(
        'Cargo.toml',
        '[package]\nname = "radix"\ndescription = "Radix trees."\n\n[dependencies]\n',
      ).summary,
    ).toBe('Rust crate radix: Radix trees. Sections: package and dependencies.');
    expect(
      file(
        'tsconfig.json',
        '{\n  // comments are allowed\n  "compilerOptions": {"strict": true}\n}',
      ).summary,
    ).toMatch(/^JSON settings with keys compilerOptions|^TypeScript compiler configuration/);
    expect(
      file(
        'LICENSE',
        'MIT License\n\nCopyright (c) 2024 Acme Inc.\n\nPermission is hereby granted, free of charge...',
      ).summary,
    ).toBe('MIT licence text (copyright 2024 Acme Inc).');
  });

  it('skips binaries and huge files, and says why', () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
    expect(summarizeFile('img/logo.png', png)).toBeNull();
    expect(skipReason('img/logo.png', png)).toBe('binary');
    const nul = Buffer.from('text\0with a NUL');
    expect(summarizeFile('data/blob', nul)).toBeNull();
    expect(skipReason('data/blob', nul)).toBe('binary');
    const big = Buffer.alloc(600 * 1024, 'a');
    expect(summarizeFile('data/big.txt', big)).toBeNull();
    expect(skipReason('data/big.txt', big)).toBe('too_large');
    expect(skipReason('src/a.ts', Buffer.from('export const a = 1;'))).toBeNull();
    expect(file('empty.ts', '  \n').summary).toBe('Empty file.');
  });
});

describe('folder, repo, release and changeset summaries', () => {
  const children = [
    {
      name: 'ladder-index.ts',
      kind: 'file' as const,
      title: 'ladder-index.ts',
      summary: 'Full-text search over Ladder rungs. Exports LadderSearch.',
      symbols: ['LadderSearch'],
      size: 20000,
    },
    {
      name: 'tokenize.ts',
      kind: 'file' as const,
      title: 'tokenize.ts',
      summary: 'TypeScript module exporting indexTerms (80 lines).',
      symbols: ['indexTerms'],
      size: 3000,
    },
    {
      name: 'CHANGELOG.md',
      kind: 'file' as const,
      title: 'Changelog',
      summary: 'Changelog covering 3 releases.',
    },
    {
      name: 'README.md',
      kind: 'file' as const,
      title: 'search',
      summary: 'Search for zz. Sections: Use.',
    },
    {
      name: 'codec',
      kind: 'directory' as const,
      title: 'codec/',
      summary: 'Shard encoding. 2 files (.ts).\n- a.ts: A\n- b.ts: B',
    },
  ];

  it('leads a folder with its README, counts its contents and lists key children once', () => {
    const out = summarizeDirectory('src/search', children, {
      summary: 'Search for zz. Sections: Use.',
    });
    expect(out.title).toBe('search/');
    const lines = out.summary.split('\n');
    expect(lines[0]).toBe('Search for zz. 4 files (2 .md, 2 .ts) and 1 folder (codec/).');
    expect(lines.slice(1)).toEqual([
      '- codec/: Shard encoding',
      '- ladder-index.ts: Full-text search over Ladder rungs',
      '- tokenize.ts: TypeScript module exporting indexTerms (80 lines)',
    ]);
    expect(out.summary.length).toBeLessThanOrEqual(MAX_SUMMARY_CHARS);
    // Without README or package: the census leads.
    expect(summarizeDirectory('lib', children.slice(0, 2)).summary.split('\n')[0]).toBe(
      '2 files (.ts).',
    );
  });

  it('summarises the repo from its README or package and its top folders', () => {
    const out = summarizeRepo(
      { title: 'zz', summary: 'zz coordinates coding agents over git. Sections: Install.' },
      [
        {
          name: 'src',
          kind: 'directory',
          title: 'src/',
          summary: 'Source. 3 folders (core/ search/ git/).',
        },
        { name: 'package.json', kind: 'file', title: 'zz', summary: 'npm package zz.' },
      ],
      {
        name: 'zz',
        description: 'Git-native coordination for coding agents.',
        keywords: ['git', 'agents'],
      },
    );
    expect(out.title).toBe('zz');
    expect(out.summary).toBe(
      'Git-native coordination for coding agents. Keywords: git and agents. 1 file (.json) and 1 folder (src/).\n- src/: Source',
    );
  });

  it('groups a release by conventional-commit type', () => {
    const out = summarizeRelease(
      'v1.2.0',
      [
        { subject: 'feat(search): camelCase splitting' },
        { subject: 'fix: empty query crashes' },
        { subject: 'feat!: drop Node 18' },
        { subject: 'Merge pull request #4 from a/b' },
        { subject: 'chore: bump deps' },
        { subject: 'Tidy the README' },
      ],
      { from: 'v1.1.0', to: 'v1.2.0' },
    );
    expect(out.title).toBe('v1.2.0');
    expect(out.summary).toBe(
      [
        'v1.2.0: 6 commits since v1.1.0 (1 merge).',
        'Breaking: drop Node 18.',
        'Features: search: camelCase splitting.',
        'Fixes: empty query crashes.',
        'Other: Tidy the README.',
        'Chores: 1 commit.',
      ].join('\n'),
    );
  });

  it('describes a changeset by subject, first body paragraph, where it touches and what it cites', () => {
    const out = summarizeChangeset({
      oid: 'a'.repeat(40),
      subject: 'fix(config): accept an empty configuration file',
      body: 'An empty file used to crash the server (#12).\n\nMore detail.\n\nSigned-off-by: A <a@b.c>\nZz-Op: commit_changeset',
      stats: { files: 3, insertions: 20, deletions: 3 },
      paths: ['src/config/parse.ts', 'src/config/schema.ts', 'test/config.test.ts'],
    });
    expect(out.title).toBe('fix(config): accept an empty configuration file');
    expect(out.summary).toBe(
      'fix(config): accept an empty configuration file. An empty file used to crash the server (#12). 3 files changed (+20 −3), in src/config (2), test (1). References #12.',
    );
  });
});

describe('summarizeFile over real packages', () => {
  const roots = [
    'minisearch',
    'yargs',
    'zod/src/v4/classic',
    'zod/src/v4/core',
    'chokidar',
    'isomorphic-git',
    'dependency-cruiser/src',
  ].map((p) => join(process.cwd(), 'node_modules', p));

  function files(dir: string, out: string[] = [], max = 400): string[] {
    let entries: string[];
    try {
      entries = readdirSync(dir).sort();
    } catch {
      return out;
    }
    for (const e of entries) {
      if (out.length >= max) break;
      const p = join(dir, e);
      if (e === 'node_modules') continue;
      if (statSync(p).isDirectory()) files(p, out, max);
      else out.push(p);
    }
    return out;
  }

  it('writes a non-empty, bounded, code-free summary for every file', () => {
    let seen = 0;
    let documented = 0;
    const bad: string[] = [];
    for (const root of roots) {
      for (const abs of files(root)) {
        const rel = relative(root, abs);
        const out = summarizeFile(rel, readFileSync(abs));
        if (out === null) continue;
        seen++;
        if (!/^(?:[\w#+() ]+ module|Type declarations)/.test(out.summary)) documented++;
        if (
          out.summary.trim().length === 0 ||
          out.title.trim().length === 0 ||
          out.summary.length > MAX_SUMMARY_CHARS ||
          looksLikeRawCode(out.summary)
        ) {
          bad.push(`${rel}: ${out.summary}`);
        }
      }
    }
    expect(bad).toEqual([]);
    expect(seen).toBeGreaterThan(400);
    // Most files say something beyond their shape.
    expect(documented / seen).toBeGreaterThan(0.3);
  });

  it('reads minisearch the way a person would', () => {
    const ms = join(process.cwd(), 'node_modules', 'minisearch');
    const main = summarizeFile('src/MiniSearch.ts', readFileSync(join(ms, 'src/MiniSearch.ts')))!;
    expect(main.summary).toMatch(
      /^MiniSearch is the main entrypoint class, implementing a full-text search engine in memory\./,
    );
    expect(main.symbols).toContain('SearchOptions');
    const readme = summarizeFile('README.md', readFileSync(join(ms, 'README.md')))!;
    expect(readme.title).toBe('MiniSearch');
    expect(readme.summary).toMatch(
      /^MiniSearch is a tiny but powerful in-memory fulltext search engine/,
    );
    const pkg = summarizeFile('package.json', readFileSync(join(ms, 'package.json')))!;
    expect(pkg.summary).toMatch(
      /^npm package minisearch 7\.2\.0: Tiny but powerful full-text search engine for browser and Node\./,
    );
  });
});
