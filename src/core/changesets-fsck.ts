import { ZzError } from '../errors.js';
import { printable } from '../git/index.js';

// The files whose *content* git's fsck checks (fsck.c, git 2.39–2.47): every tree entry git
// takes for `.gitmodules` or `.gitattributes`, in any directory, under any spelling that HFS+ or
// NTFS would open as that file. `git commit` writes such a file without a word; `git fsck`
// then reports an error, and a host that checks pushes (receive.fsckObjects, as GitHub does)
// refuses the branch or changeset ref. A submodule path or url that starts with "-" is read as
// an option by older git (CVE-2018-17456); a url that climbs out with "../" before a ":" could
// reach the credential helper of another host (CVE-2020-11008). So a changeset is checked
// against the same rules when it is recorded (ask_answer), and again when anything lands.
//
// Hazard: this mirrors git's own parsers byte for byte (config.c parse rules, url.c decoding,
// credential.c url splitting). test/core/changesets-fsck.test.ts holds it to `git fsck` on
// generated files; a change here must keep that test green. Where this parser cannot follow
// the file (git itself would stop reading at that point), the file is refused: git's fsck only
// notes an unparsable .gitmodules, but the entries after the break are ones it never checked.

/** Which file git's fsck reads the entry as, if any. */
type FsckFile = 'gitmodules' | 'gitattributes';

const NAMES: Record<FsckFile, { name: string; ntfsShort: string }> = {
  gitmodules: { name: 'gitmodules', ntfsShort: 'gi7eba' },
  gitattributes: { name: 'gitattributes', ntfsShort: 'gi7d29' },
};

// HFS+ ignores these code points in names (git path.c next_hfs_char).
const HFS_IGNORABLE = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g;
const asciiLower = (s: string): string => s.replace(/[A-Z]/g, (c) => c.toLowerCase());

/** git path.c is_hfs_dot_generic: "." + name, ASCII case-folded, ignorables dropped. */
function isHfsDot(component: string, name: string): boolean {
  return asciiLower(component.replace(HFS_IGNORABLE, '')) === '.' + name;
}

/** git path.c is_ntfs_dot_generic: ".name", "namexx~1".."~4" and 8.3 fall-back short names. */
function isNtfsDot(component: string, name: string, shortPrefix: string): boolean {
  const onlySpacesAndPeriods = (from: number): boolean => {
    for (let i = from; i < component.length; i++) {
      const c = component[i]!;
      if (c === ':') return true;
      if (c !== ' ' && c !== '.') return false;
    }
    return true;
  };
  if (component[0] === '.' && asciiLower(component.slice(1, 1 + name.length)) === name) {
    return onlySpacesAndPeriods(1 + name.length);
  }
  if (
    asciiLower(component.slice(0, 6)) === name.slice(0, 6) &&
    component[6] === '~' &&
    component[7]! >= '1' &&
    component[7]! <= '4'
  ) {
    return onlySpacesAndPeriods(8);
  }
  // The fall-back short name: up to six characters of the prefix, "~", a digit 1–9, digits,
  // eight characters in all.
  // (A "~" at the eighth place makes the ninth its digit: the rest is checked after it.)
  let sawTilde = false;
  let i = 0;
  for (; i < 8; i++) {
    const c = component[i];
    if (c === undefined) return false;
    if (sawTilde) {
      if (c < '0' || c > '9') return false;
    } else if (c === '~') {
      const d = component[++i];
      if (d === undefined || d < '1' || d > '9') return false;
      sawTilde = true;
    } else if (i >= 6 || c.charCodeAt(0) > 127 || asciiLower(c) !== shortPrefix[i]) {
      return false;
    }
  }
  return onlySpacesAndPeriods(i);
}

/**
 * Which files git's fsck reads a tree entry named `component` as: .gitmodules, .gitattributes,
 * or both (a short name like "~1234567" is either on NTFS, and fsck checks it as each).
 */
export function fsckFilesOf(component: string): FsckFile[] {
  // Every spelling holds a "g" or "~" (checked first: this runs on every written path).
  if (!/[gG~]/.test(component)) return [];
  return (['gitmodules', 'gitattributes'] as const).filter((kind) => {
    const { name, ntfsShort } = NAMES[kind];
    return isHfsDot(component, name) || isNtfsDot(component, name, ntfsShort);
  });
}

// --- git's config syntax (config.c git_parse_source and friends), enough to read .gitmodules.

interface ConfigEntry {
  /** section[.subsection].key, section and key lower-cased as git does. */
  key: string;
  /** null for a bare key (no "="), which git reads as true. */
  value: string | null;
}

const isSpace = (c: string) => c === ' ' || c === '\t' || c === '\n' || c === '\r';
const isAlpha = (c: string) => /^[A-Za-z]$/.test(c);
const isKeyChar = (c: string) => /^[A-Za-z0-9-]$/.test(c);

/**
 * The entries of a git config file, in order, up to the first syntax error (git stops there
 * too; `error` then names the line). `text` holds one character per byte (latin1).
 */
function parseConfig(text: string): { entries: ConfigEntry[]; error: string | null } {
  let pos = 0;
  let line = 1;
  let eof = false;
  const next = (): string => {
    let c: string | undefined = text[pos++];
    if (c === '\r') {
      const d = text[pos++];
      if (d !== '\n') {
        if (d !== undefined) pos--;
      } else c = '\n';
    }
    if (c === undefined) {
      pos = text.length;
      eof = true;
      return '\n';
    }
    if (c === '\n') line++;
    return c;
  };

  const entries: ConfigEntry[] = [];
  const fail = (why: string) => ({ entries, error: `line ${line}: ${why}` });

  const baseVar = (): string | null => {
    let v = '';
    for (;;) {
      let c = next();
      if (eof) return null;
      if (c === ']') return v;
      if (isSpace(c)) {
        // '[section "subsection"]'
        do {
          if (c === '\n') return null;
          c = next();
        } while (isSpace(c));
        if (c !== '"') return null;
        v += '.';
        for (;;) {
          c = next();
          if (c === '\n') return null;
          if (c === '"') break;
          if (c === '\\') {
            c = next();
            if (c === '\n') return null;
          }
          v += c;
        }
        return next() === ']' ? v : null;
      }
      if (!isKeyChar(c) && c !== '.') return null;
      v += asciiLower(c);
    }
  };

  const value = (): string | null => {
    let quote = false;
    let comment = false;
    let spaces = 0;
    let v = '';
    for (;;) {
      let c = next();
      if (c === '\n') return quote ? null : v;
      if (comment) continue;
      if (isSpace(c) && !quote) {
        if (v.length > 0) spaces++;
        continue;
      }
      if (!quote && (c === ';' || c === '#')) {
        comment = true;
        continue;
      }
      v += ' '.repeat(spaces);
      spaces = 0;
      if (c === '\\') {
        c = next();
        if (c === '\n') continue;
        const escaped = { t: '\t', b: '\b', n: '\n', '\\': '\\', '"': '"' }[c];
        if (escaped === undefined) return null;
        v += escaped;
        continue;
      }
      if (c === '"') {
        quote = !quote;
        continue;
      }
      v += c;
    }
  };

  const BOM = '\xef\xbb\xbf';
  let bom = 0;
  let comment = false;
  let section = '';
  for (;;) {
    const c = next();
    if (bom >= 0 && bom < BOM.length) {
      if (c === BOM[bom]) {
        bom++;
        continue;
      }
      if (bom > 0) return fail('a partial byte order mark');
      bom = -1;
    }
    if (c === '\n') {
      if (eof) return { entries, error: null };
      comment = false;
      continue;
    }
    if (comment || isSpace(c)) continue;
    if (c === '#' || c === ';') {
      comment = true;
      continue;
    }
    if (c === '[') {
      const v = baseVar();
      if (v === null || v.length === 0) return fail('a section header git cannot read');
      section = v + '.';
      continue;
    }
    if (!isAlpha(c)) return fail(`"${printable(c)}" where a key or section should start`);
    let key = section + asciiLower(c);
    let d: string;
    for (;;) {
      d = next();
      if (eof || !isKeyChar(d)) break;
      key += asciiLower(d);
    }
    while (d === ' ' || d === '\t') d = next();
    let v: string | null = null;
    if (d !== '\n') {
      if (d !== '=') return fail(`"${printable(d)}" after the key ${printable(key)}`);
      v = value();
      if (v === null) return fail('a value git cannot read (an open quote or a bad escape)');
    }
    entries.push({ key, value: v });
  }
}

// --- fsck.c fsck_gitmodules_fn and the checks it calls (submodule-config.c, url.c, credential.c)

/** url.c url_decode_mem: %XX decoded, except in the part before the first ":". */
function urlDecode(s: string): string {
  const colon = s.indexOf(':');
  const head = colon > 0 ? s.slice(0, colon) : '';
  const rest = colon > 0 ? s.slice(colon) : s;
  return (
    head +
    rest.replace(/%([0-9a-fA-F]{2})/g, (m, h: string) => {
      const n = parseInt(h, 16);
      return n > 0 ? String.fromCharCode(n) : m;
    })
  );
}

const dotSlash = /^\.[/\\]/;
const dotDotSlash = /^\.\.[/\\]/;

/** submodule-config.c check_submodule_name: not empty, no ".." component. */
const badSubmoduleName = (name: string): boolean =>
  name === '' || name.split(/[/\\]/).some((part) => part === '..');

/** credential.c credential_from_url_gently (quiet) failing, or an empty host. */
function badCurlUrl(url: string): boolean {
  const protoEnd = url.indexOf('://');
  if (protoEnd <= 0) return true;
  const cp = url.slice(protoEnd + 3);
  const at = cp.indexOf('@');
  const colon = cp.indexOf(':');
  const slashAt = cp.search(/[/?#]/);
  const slash = slashAt < 0 ? cp.length : slashAt;
  const parts: string[] = [url.slice(0, protoEnd)];
  let host: string;
  if (at < 0 || slash <= at) host = cp.slice(0, slash);
  else if (colon < 0 || at <= colon) {
    parts.push(urlDecode(cp.slice(0, at)));
    host = cp.slice(at + 1, slash);
  } else {
    parts.push(urlDecode(cp.slice(0, colon)), urlDecode(cp.slice(colon + 1, at)));
    host = cp.slice(at + 1, slash);
  }
  const decodedHost = urlDecode(host);
  parts.push(decodedHost);
  const path = cp.slice(slash).replace(/^\/+/, '');
  if (path !== '') parts.push(urlDecode(path));
  return parts.some((p) => p.includes('\n')) || decodedHost === '';
}

/** submodule-config.c check_submodule_url. */
function badSubmoduleUrl(url: string): boolean {
  if (url.startsWith('-')) return true;
  if (dotSlash.test(url) || dotDotSlash.test(url) || url.startsWith('git://')) {
    if (urlDecode(url).includes('\n')) return true;
    let rest = url;
    let ups = 0;
    for (;;) {
      if (dotDotSlash.test(rest)) {
        ups++;
        rest = rest.slice(3);
      } else if (dotSlash.test(rest)) rest = rest.slice(2);
      else break;
    }
    return ups > 0 && (rest.startsWith(':') || rest.startsWith('/'));
  }
  const curl = /^(https?|ftps?)::/.exec(url);
  if (curl) return badCurlUrl(url.slice(curl[0].length));
  if (/^(https?|ftps?):\/\//.test(url)) return badCurlUrl(url);
  return false;
}

/** What git's fsck refuses in a .gitmodules of these bytes, or null. */
function gitmodulesProblem(content: Buffer): string | null {
  if (content.includes(0)) return 'it contains a NUL byte';
  const { entries, error } = parseConfig(content.toString('latin1'));
  // Names and values are shown as git would print them: the bytes, as UTF-8.
  const shown = (s: string) => `"${printable(Buffer.from(s, 'latin1').toString('utf8'))}"`;
  for (const { key, value } of entries) {
    if (!key.startsWith('submodule.')) continue;
    const dot = key.lastIndexOf('.');
    if (dot === 'submodule'.length) continue; // no subsection: not about a submodule
    const name = key.slice('submodule.'.length, dot);
    const field = key.slice(dot + 1);
    if (badSubmoduleName(name)) {
      return `submodule name ${shown(name)} is empty or has a ".." component (git fsck: gitmodulesName)`;
    }
    if (value === null) continue;
    if (field === 'url' && badSubmoduleUrl(value)) {
      return `submodule ${shown(name)} has url ${shown(value)}, which git refuses: it starts with "-", holds a newline, or climbs out of its root (git fsck: gitmodulesUrl)`;
    }
    if (field === 'path' && value.startsWith('-')) {
      return `submodule ${shown(name)} has path ${shown(value)}, which git would read as an option (git fsck: gitmodulesPath)`;
    }
    if (field === 'update' && value.startsWith('!')) {
      return `submodule ${shown(name)} has update ${shown(value)}, a command to run (git fsck: gitmodulesUpdate)`;
    }
  }
  return error === null ? null : `git cannot parse it as a config file (${error})`;
}

/** fsck.c: a .gitattributes line of 2048 bytes or more, or a file over 100 MiB. */
function gitattributesProblem(content: Buffer): string | null {
  if (content.length > 100 * 1024 * 1024)
    return 'it is larger than 100 MiB (git fsck: gitattributesLarge)';
  const end = content.indexOf(0);
  const text = end < 0 ? content : content.subarray(0, end);
  for (let at = 0; at < text.length;) {
    const eol = text.indexOf(10, at);
    const stop = eol < 0 ? text.length : eol;
    if (stop - at >= 2048) {
      return 'it has a line of 2048 bytes or more, which git will not read (git fsck: gitattributesLineLength)';
    }
    at = stop + 1;
  }
  return null;
}

/** The kind of entry a changed path ends in (tree modes: 100644/100755 file, 120000 symlink). */
export type EntryKind = 'file' | 'symlink' | 'other';

/**
 * Throws `unsafe_content` (422) when git's fsck would refuse the tree entry written at `path`:
 * a directory, symlink or submodule git reads as .gitmodules, a directory it reads as
 * .gitattributes, or either file with content fsck refuses. `content` is read only for those
 * two files (it may be a function that loads the blob).
 */
export async function assertFsckClean(
  path: string,
  kind: EntryKind,
  content: Buffer | (() => Promise<Buffer>),
  where = '',
): Promise<void> {
  const parts = path.split('/');
  for (let i = 0; i < parts.length; i++) {
    for (const file of fsckFilesOf(parts[i]!)) {
      const last = i === parts.length - 1;
      const at = parts.slice(0, i + 1).join('/');
      if (!last || (kind !== 'file' && (file === 'gitmodules' || kind === 'other'))) {
        throw unsafe(
          path,
          `git reads "${printable(at)}" as .${file}, so it must be a file, not a ${
            last ? (kind === 'symlink' ? 'symlink' : 'submodule') : 'directory'
          }${where} (git fsck: ${file}${last && kind === 'symlink' ? 'Symlink' : 'Blob'})`,
        );
      }
      if (kind !== 'file') continue;
      const bytes = typeof content === 'function' ? await content() : content;
      const problem =
        file === 'gitmodules' ? gitmodulesProblem(bytes) : gitattributesProblem(bytes);
      if (problem) throw unsafe(path, `git reads it as .${file}${where}, and ${problem}`);
    }
  }
}

function unsafe(path: string, why: string): ZzError {
  return new ZzError('unsafe_content', `"${printable(path)}" is not allowed: ${why}`, { path });
}
