// Manifests, config and data files: package.json, tsconfig, YAML, TOML, Dockerfile, licences. Part of the extractive summariser (../extract.ts).

import { lineCount } from './code.js';
import { leadFromComments, leadingComments, looksLikeCode } from './comments.js';
import {
  baseName,
  clip,
  finish,
  firstSentences,
  listOf,
  plainInline,
  plural,
  squash,
  uniq,
} from './text.js';
import { type Extract, MAX_SYMBOLS } from './types.js';

// --- manifests and data ----------------------------------------------------------------------

export function asStrings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

export function packageJsonSummary(path: string, json: Record<string, unknown>): Extract {
  const name = typeof json.name === 'string' ? json.name : null;
  const description =
    typeof json.description === 'string' ? plainInline(json.description).trim() : '';
  const keywords = asStrings(json.keywords);
  const bin =
    typeof json.bin === 'string' && name
      ? [name.replace(/^@[^/]+\//, '')]
      : Object.keys((json.bin as object) ?? {});
  const scripts = Object.keys((json.scripts as object) ?? {});
  const workspaces = Array.isArray(json.workspaces)
    ? asStrings(json.workspaces)
    : asStrings((json.workspaces as { packages?: unknown })?.packages);
  const deps = Object.keys((json.dependencies as object) ?? {});
  const parts: string[] = [];
  const label = name
    ? `npm package ${name}${typeof json.version === 'string' ? ` ${json.version}` : ''}`
    : 'npm package manifest';
  parts.push(
    description
      ? `${label}: ${firstSentences(description, 300)}`
      : `${label}${json.private === true ? ' (private)' : ''}.`,
  );
  if (keywords.length > 0) parts.push(`Keywords: ${listOf(keywords, 8)}.`);
  if (bin.length > 0) parts.push(`Commands: ${listOf(bin, 6)}.`);
  if (workspaces.length > 0) parts.push(`Workspaces: ${listOf(workspaces, 6)}.`);
  if (scripts.length > 0) parts.push(`Scripts: ${listOf(scripts, 8)}.`);
  if (deps.length > 0) parts.push(`${plural(deps.length, 'dependency', 'dependencies')}.`);
  return finish(
    name ? `${name} (package.json)` : baseName(path),
    parts,
    uniq([...bin, ...scripts]),
  );
}

export function tsconfigSummary(path: string, json: Record<string, unknown>): Extract {
  const co = (json.compilerOptions ?? {}) as Record<string, unknown>;
  const facts: string[] = [];
  for (const k of ['target', 'module', 'moduleResolution', 'jsx', 'outDir', 'rootDir']) {
    if (typeof co[k] === 'string') facts.push(`${k} ${co[k] as string}`);
  }
  if (co.strict === true) facts.push('strict');
  const ext = typeof json.extends === 'string' ? ` extending ${json.extends}` : '';
  const include = asStrings(json.include);
  return finish(
    baseName(path),
    [
      `TypeScript compiler configuration${ext}${facts.length > 0 ? ` (${facts.join(', ')})` : ''}.`,
      include.length > 0 ? `Includes ${listOf(include, 5)}.` : null,
    ],
    [],
  );
}

export function jsonSummary(path: string, src: string): Extract {
  const name = baseName(path);
  let json: unknown;
  try {
    json = JSON.parse(src.replace(/^\uFEFF/, ''));
  } catch {
    json = undefined;
  }
  if (name === 'package.json' && json && typeof json === 'object' && !Array.isArray(json)) {
    return packageJsonSummary(path, json as Record<string, unknown>);
  }
  if (/^(?:t|j)sconfig.*\.json$/.test(name) && json && typeof json === 'object') {
    return tsconfigSummary(path, json as Record<string, unknown>);
  }
  if (/(?:package-lock|npm-shrinkwrap)\.json$/.test(name) && json && typeof json === 'object') {
    const pk = Object.keys(((json as Record<string, unknown>).packages as object) ?? {}).length;
    return finish(name, [`npm lockfile pinning ${plural(Math.max(0, pk - 1), 'package')}.`], []);
  }
  if (name.endsWith('.map') && json && typeof json === 'object' && 'mappings' in (json as object)) {
    const file = (json as { file?: unknown }).file;
    return finish(name, [`Source map${typeof file === 'string' ? ` for ${file}` : ''}.`], []);
  }
  if (json === undefined) {
    // JSON with comments (tsconfig, VS Code settings) or broken JSON: top-level keys by regex.
    const keys = uniq([...src.matchAll(/^\s{0,4}"([^"\n]{1,60})"\s*:/gm)].map((m) => m[1]!)).slice(
      0,
      12,
    );
    return finish(
      name,
      [
        keys.length > 0
          ? `JSON settings with keys ${listOf(keys)}.`
          : `JSON document, ${plural(lineCount(src), 'line')}.`,
      ],
      keys,
    );
  }
  if (Array.isArray(json))
    return finish(name, [`JSON array of ${plural(json.length, 'item')}.`], []);
  if (json === null || typeof json !== 'object')
    return finish(name, [`JSON ${typeof json} value.`], []);
  const obj = json as Record<string, unknown>;
  const keys = Object.keys(obj).map((k) => clip(k, 40));
  const lead =
    typeof obj.description === 'string' && obj.description.length > 10
      ? firstSentences(plainInline(obj.description), 300)
      : typeof obj.title === 'string'
        ? `${obj.title}.`
        : null;
  const what =
    typeof obj.$schema === 'string' && /json-schema\.org/.test(obj.$schema)
      ? 'JSON Schema'
      : 'JSON object';
  const symbols = keys.filter((k) => /^[A-Za-z_$][\w$.-]{0,39}$/.test(k)).slice(0, MAX_SYMBOLS);
  return finish(
    name,
    [lead, `${what} with ${keys.length === 0 ? 'no keys' : `keys ${listOf(keys, 10)}`}.`],
    symbols,
  );
}

export function yamlSummary(path: string, src: string): Extract {
  const name = baseName(path);
  const keys = uniq(
    [...src.matchAll(/^([A-Za-z_][\w.-]*|"[^"]+"|'[^']+'):(?:\s|$)/gm)].map((m) =>
      m[1]!.replace(/^["']|["']$/g, ''),
    ),
  );
  const { lead } = leadFromComments(leadingComments(src, { hash: true }));
  const title = /^name:[ \t]*["']?(.+?)["']?[ \t]*$/m.exec(src)?.[1];
  if (/(^|\/)\.github\/workflows\//.test(path)) {
    const jobs = uniq(
      [...(/^jobs:\s*\n([\s\S]*)/m.exec(src)?.[1] ?? '').matchAll(/^ {2}([A-Za-z_][\w-]*):/gm)].map(
        (m) => m[1]!,
      ),
    );
    const on = /^(?:on|"on"|'on'):[ \t]*(\[[^\]]*\]|\w+)?/m.exec(src);
    const triggers = on?.[1]
      ? on[1]
          .replace(/[[\]\s]/g, '')
          .split(',')
          .filter(Boolean)
      : uniq(
          [
            ...(/^(?:on|"on"|'on'):\s*\n((?: {2}.*\n?)*)/m.exec(src)?.[1] ?? '').matchAll(
              /^ {2}([a-z_]+):/gm,
            ),
          ].map((m) => m[1]!),
        );
    return finish(
      title ? `${title} (workflow)` : name,
      [
        `GitHub Actions workflow${title ? ` "${title}"` : ''}${triggers.length > 0 ? ` run on ${listOf(triggers, 5)}` : ''}.`,
        jobs.length > 0 ? `Jobs: ${listOf(jobs, 6)}.` : null,
      ],
      jobs,
    );
  }
  if (/^(?:pnpm-lock|yarn)\.ya?ml$/.test(name))
    return finish(name, ['Package manager lockfile.'], []);
  return finish(
    name,
    [
      lead,
      keys.length > 0
        ? `YAML with top-level keys ${listOf(keys, 10)}.`
        : `YAML document, ${plural(lineCount(src), 'line')}.`,
    ],
    keys.slice(0, MAX_SYMBOLS),
  );
}

export function tomlSummary(path: string, src: string): Extract {
  const name = baseName(path);
  const tables = uniq([...src.matchAll(/^\[{1,2}([^\]\n]+)\]{1,2}/gm)].map((m) => m[1]!.trim()));
  const section = (t: string): string => {
    const m = new RegExp(
      `^\\[${t.replace(/\./g, '\\.')}\\][ \\t]*\\r?\\n([\\s\\S]*?)(?=^\\[|$(?![\\s\\S]))`,
      'm',
    ).exec(src);
    return m?.[1] ?? '';
  };
  const field = (body: string, key: string) =>
    new RegExp(`^${key}[ \\t]*=[ \\t]*["']([^"'\\n]*)["']`, 'm').exec(body)?.[1];
  for (const [table, what] of [
    ['package', 'Rust crate'],
    ['project', 'Python project'],
    ['tool.poetry', 'Python project'],
    ['workspace', 'Cargo workspace'],
  ] as const) {
    if (!tables.includes(table)) continue;
    const body = section(table);
    const pname = field(body, 'name');
    const description = field(body, 'description');
    const members =
      table === 'workspace'
        ? [
            ...(/members\s*=\s*\[([^\]]*)\]/.exec(body)?.[1] ?? '').matchAll(/["']([^"']+)["']/g),
          ].map((m) => m[1]!)
        : [];
    return finish(
      pname ? `${pname} (${name})` : name,
      [
        `${what}${pname ? ` ${pname}` : ''}${description ? `: ${firstSentences(description, 300)}` : '.'}`,
        members.length > 0 ? `Members: ${listOf(members, 6)}.` : null,
        `Sections: ${listOf(tables, 8)}.`,
      ],
      tables,
    );
  }
  if (name === 'Cargo.lock' || name === 'poetry.lock' || name === 'uv.lock') {
    return finish(
      name,
      [`Lockfile pinning ${plural((src.match(/^\[\[package\]\]/gm) ?? []).length, 'package')}.`],
      [],
    );
  }
  const keys = uniq([...src.matchAll(/^([A-Za-z_][\w-]*)[ \t]*=/gm)].map((m) => m[1]!));
  const { lead } = leadFromComments(leadingComments(src, { hash: true }));
  return finish(
    name,
    [
      lead,
      tables.length > 0
        ? `TOML with sections ${listOf(tables, 8)}.`
        : keys.length > 0
          ? `TOML with keys ${listOf(keys, 8)}.`
          : 'TOML document.',
    ],
    uniq([...tables, ...keys]),
  );
}

export function goModSummary(src: string): Extract {
  const mod = /^module[ \t]+(\S+)/m.exec(src)?.[1];
  const go = /^go[ \t]+(\S+)/m.exec(src)?.[1];
  const requires =
    (src.match(/^\t[^\s/]+\.[^\s]+ v\S+/gm) ?? []).length +
    (src.match(/^require[ \t]+\S+ v/gm) ?? []).length;
  return finish(
    'go.mod',
    [
      `Go module ${mod ?? '(unnamed)'}${go ? ` for Go ${go}` : ''}, requiring ${plural(requires, 'module')}.`,
    ],
    mod ? [mod] : [],
  );
}

export function dockerfileSummary(path: string, src: string): Extract {
  const from = uniq([...src.matchAll(/^FROM[ \t]+(?:--\S+[ \t]+)*(\S+)/gim)].map((m) => m[1]!));
  const expose = uniq(
    [...src.matchAll(/^EXPOSE[ \t]+(.+)$/gim)].flatMap((m) => m[1]!.trim().split(/\s+/)),
  );
  const entry = /^(?:ENTRYPOINT|CMD)[ \t]+(.+)$/gim.exec(src)?.[1];
  const { lead } = leadFromComments(leadingComments(src, { hash: true }));
  return finish(
    baseName(path),
    [
      lead,
      `Container image built from ${listOf(from, 4) || 'scratch'}${from.length > 1 ? ' (multi-stage)' : ''}.`,
      expose.length > 0 ? `Exposes ${listOf(expose, 4)}.` : null,
      entry ? `Runs ${clip(entry.replace(/[[\]"]/g, '').replace(/,\s*/g, ' '), 80)}.` : null,
    ],
    [],
  );
}

export function makefileSummary(path: string, src: string): Extract {
  const targets = uniq(
    [...src.matchAll(/^([A-Za-z][\w.-]*)[ \t]*:(?!=)/gm)].map((m) => m[1]!),
  ).filter((t) => !t.startsWith('.'));
  const { lead } = leadFromComments(leadingComments(src, { hash: true }));
  return finish(
    baseName(path),
    [
      lead,
      targets.length > 0 ? `Make targets: ${listOf(targets, 10)}.` : 'Makefile with no targets.',
    ],
    targets,
  );
}

export const LICENSE_NAMES: Array<[RegExp, string]> = [
  [/\bMIT License\b|Permission is hereby granted, free of charge/i, 'MIT'],
  [/Apache License,?\s+Version 2\.0/i, 'Apache-2.0'],
  [/GNU AFFERO GENERAL PUBLIC LICENSE/i, 'AGPL'],
  [/GNU LESSER GENERAL PUBLIC LICENSE/i, 'LGPL'],
  [/GNU GENERAL PUBLIC LICENSE[\s\S]{0,200}Version 3/i, 'GPL-3.0'],
  [/GNU GENERAL PUBLIC LICENSE[\s\S]{0,200}Version 2/i, 'GPL-2.0'],
  [/Mozilla Public License,? (?:v\.|Version) 2\.0/i, 'MPL-2.0'],
  [/ISC License|Permission to use, copy, modify, and\/or distribute/i, 'ISC'],
  [
    /Redistribution and use in source and binary forms[\s\S]{0,2000}Neither the name/i,
    'BSD-3-Clause',
  ],
  [/Redistribution and use in source and binary forms/i, 'BSD-2-Clause'],
  [/This is free and unencumbered software released into the public domain/i, 'Unlicense'],
];

export function licenseSummary(path: string, src: string): Extract {
  const name = LICENSE_NAMES.find(([re]) => re.test(src.slice(0, 20000)))?.[1];
  const holder = /copyright\s+(?:\(c\)\s*)?([^\n]{3,80})/i.exec(src)?.[1]?.trim();
  return finish(
    baseName(path),
    [
      `${name ? `${name} licence` : 'Licence'} text${holder ? ` (copyright ${holder.replace(/\.$/, '')})` : ''}.`,
    ],
    name ? [name] : [],
  );
}

export function textSummary(path: string, src: string): Extract {
  const t = src.trimStart();
  // Dotfiles and extensionless configs are often JSON, YAML or key=value files.
  if (/^[{[]/.test(t)) {
    try {
      JSON.parse(t);
      return jsonSummary(path, src);
    } catch {
      // not JSON after all
    }
  }
  const lines = t.split('\n').filter((l) => l.trim().length > 0 && !/^\s*[#;]/.test(l));
  if (lines.length > 0 && lines.every((l) => /^\s*(?:[\w.-]+\s*[:=]|-\s|\[[^\]]+\]\s*$)/.test(l))) {
    const keys = uniq(
      lines.map((l) => /^([\w.-]+)\s*[:=]/.exec(l)?.[1]).filter((k): k is string => !!k),
    );
    return finish(
      baseName(path),
      [`Settings file with keys ${listOf(keys, 10)}.`],
      keys.slice(0, MAX_SYMBOLS),
    );
  }
  const para = src
    .split(/\r?\n\s*\r?\n/)
    .map((p) => squash(p))
    .find((p) => /[a-z]{3}/i.test(p) && p.length >= 12 && !looksLikeCode(p));
  return finish(
    baseName(path),
    [para ? firstSentences(para, 300) : `Text file, ${plural(lineCount(src), 'line')}.`],
    [],
  );
}
