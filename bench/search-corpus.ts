// Synthetic but realistic Ladder rungs for the search benchmark: paths, titles, camelCase
// symbols and summaries shaped like the extractive summariser's output, over a Zipf-weighted
// vocabulary of common code words plus words that belong to one repository's domain.
// Deterministic (seeded with the tests' one PRNG), so runs are comparable.

import { prng as rng } from '../test/helpers/seeded.js';

export type BenchKind =
  | 'repo'
  | 'directory'
  | 'file'
  | 'release'
  | 'changeset'
  | 'issue'
  | 'pull_request'
  | 'contributor';

export interface BenchRung {
  path: string;
  kind: BenchKind;
  title: string;
  summary: string;
  symbols?: string[];
  anchor?: { commit: string; oid: string };
}

const COMMON =
  `data value file path name type list map set get add remove update create delete read write
parse format load save open close start stop run build test check config option options setting
error errors result results state event events handler handlers listener callback promise async
request response server client http https url route router query param params header headers
body json yaml text string number buffer stream input output source target node tree graph edge
cache store index search match filter sort key keys id ids token tokens user users auth session
login logout password hash crypto sign verify encode decode compress encrypt key message queue
worker job task schedule timer retry timeout limit rate log logger debug trace metric metrics
plugin module package import export require resolve loader compiler transform ast token lexer
parser printer schema model view controller component render template style theme layout page
widget button form field table column row cell grid chart image color font icon window screen
event dispatch emit subscribe publish channel socket connection pool database sql migration
record entity repository service provider factory builder adapter wrapper proxy middleware
context scope frame stack heap memory thread process signal exit status code line lines column
position range offset size length count total width height depth level order first last next
previous parent child children root branch commit diff patch merge rebase remote fetch push tag
release version semver changelog license readme docs guide example examples sample fixture mock
spec suite bench benchmark profile report summary detail description title label note comment
helper util utils common shared core base main default internal public private local global
environment env variable variables argument arguments command commands cli shell terminal prompt
network proxy dns address port host socket tls certificate secret credential permission role
access policy rule rules validate validation sanitize escape normalize convert serialize copy
clone compare equal diff snapshot watch watcher poll sync async await lock mutex semaphore batch`
    .split(/\s+/)
    .filter((w) => w.length > 0);

const VERBS =
  `parses formats loads saves opens closes starts stops runs builds tests checks creates deletes
reads writes resolves renders validates converts serializes compares watches caches stores indexes
searches matches filters sorts handles dispatches emits schedules retries logs tracks wraps exposes
defines implements registers configures normalizes merges fetches pushes syncs`
    .split(/\s+/)
    .filter((w) => w.length > 0);

const EXTS: Record<string, string[]> = {
  ts: ['ts', 'ts', 'ts', 'tsx', 'json', 'md'],
  py: ['py', 'py', 'py', 'toml', 'md', 'cfg'],
  go: ['go', 'go', 'go', 'mod', 'md', 'yaml'],
  rs: ['rs', 'rs', 'rs', 'toml', 'md'],
};

const SYLLABLES =
  'ka lo mi nu ra te vo zi pe sa du fe gi ho ja ke li mo ne po qu ri su ta ve wa xi yo ze'.split(
    ' ',
  );

function pseudoWord(r: () => number): string {
  const n = 2 + Math.floor(r() * 3);
  let w = '';
  for (let i = 0; i < n; i++) w += SYLLABLES[Math.floor(r() * SYLLABLES.length)];
  return w;
}

/** Shared by every repo: a pool of domain words, each repo draws its own subset. */
function domainPool(size: number): string[] {
  const r = rng(42);
  const seen = new Set<string>();
  while (seen.size < size) seen.add(pseudoWord(r));
  return [...seen];
}

const DOMAIN_POOL = domainPool(6000);

class Zipf {
  private readonly cdf: number[];
  // Zipf–Mandelbrot: the offset stands for the stop words the tokenizer drops, so the most
  // common *content* word covers ~1.5% of words, as in real prose, not 15%.
  constructor(
    readonly words: string[],
    s = 1.05,
    offset = 12,
  ) {
    let acc = 0;
    this.cdf = words.map((_, i) => (acc += 1 / Math.pow(i + 1 + offset, s)));
    for (let i = 0; i < this.cdf.length; i++) this.cdf[i]! /= acc;
  }
  pick(r: () => number): string {
    const x = r();
    let lo = 0;
    let hi = this.cdf.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.cdf[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return this.words[lo]!;
  }
}

const cap = (w: string): string => w.charAt(0).toUpperCase() + w.slice(1);
const hex = (r: () => number, n: number): string => {
  let s = '';
  for (let i = 0; i < n; i++) s += Math.floor(r() * 16).toString(16);
  return s;
};

export interface RepoVocab {
  zipf: Zipf;
  style: keyof typeof EXTS;
}

export function repoVocab(repoIndex: number): RepoVocab {
  const r = rng(1000 + repoIndex);
  const own: string[] = [];
  for (let i = 0; i < 400; i++) own.push(DOMAIN_POOL[Math.floor(r() * DOMAIN_POOL.length)]!);
  // Common code words first (they dominate every codebase), the repo's domain words after.
  const words = [
    ...new Set([
      ...COMMON.slice(0, 120),
      ...own.slice(0, 150),
      ...COMMON.slice(120),
      ...own.slice(150),
    ]),
  ];
  const styles = Object.keys(EXTS) as Array<keyof typeof EXTS>;
  return { zipf: new Zipf(words), style: styles[repoIndex % styles.length]! };
}

function identifier(r: () => number, v: RepoVocab, style: string): string {
  const verb = [
    'get',
    'set',
    'parse',
    'create',
    'load',
    'build',
    'resolve',
    'handle',
    'to',
    'is',
    'read',
    'write',
  ][Math.floor(r() * 12)]!;
  const n = 1 + Math.floor(r() * 2);
  const words = [verb];
  for (let i = 0; i < n; i++) words.push(v.zipf.pick(r));
  if (r() < 0.25) return words.slice(1).map(cap).join(''); // a class or type name
  return style === 'py' || style === 'rs'
    ? words.join('_')
    : words[0] + words.slice(1).map(cap).join('');
}

function phrase(r: () => number, v: RepoVocab, n: number): string {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(v.zipf.pick(r));
  return out.join(' ');
}

function sentence(r: () => number, v: RepoVocab): string {
  const verb = VERBS[Math.floor(r() * VERBS.length)]!;
  const s = `${cap(verb)} ${phrase(r, v, 1 + Math.floor(r() * 3))} for the ${phrase(r, v, 1 + Math.floor(r() * 2))}`;
  return r() < 0.5 ? `${s}, with ${phrase(r, v, 2)} and ${phrase(r, v, 1)}.` : `${s}.`;
}

/** `count` rungs of one synthetic repository, shaped like a real Ladder. */
export function syntheticRungs(repoIndex: number, count: number): BenchRung[] {
  const r = rng(repoIndex * 7919 + 17);
  const v = repoVocab(repoIndex);
  const exts = EXTS[v.style]!;
  const rungs: BenchRung[] = [];
  const commit = () => hex(r, 40);
  const fileName = (): string => {
    const a = v.zipf.pick(r);
    const b = r() < 0.6 ? v.zipf.pick(r) : '';
    const sep = v.style === 'py' || v.style === 'rs' ? '_' : v.style === 'go' ? '' : '-';
    return (b ? `${a}${sep}${b}` : a) + '.' + exts[Math.floor(r() * exts.length)]!;
  };

  rungs.push({
    path: '_repo',
    kind: 'repo',
    title: `repo-${repoIndex}`,
    summary: `${sentence(r, v)} ${sentence(r, v)} 412 files, 9 top folders [src/ test/ docs/ bench/ examples/].`,
    anchor: { commit: commit(), oid: hex(r, 40) },
  });
  const nReleases = Math.round(count * 0.005);
  const nChangesets = Math.round(count * 0.03);
  const nIssues = Math.round(count * 0.02);
  const nPulls = Math.round(count * 0.01);
  const nPeople = Math.round(count * 0.005);
  const nDirs = Math.round(count * 0.085);
  for (let i = 0; i < nReleases; i++) {
    const tag = `v${1 + Math.floor(i / 4)}.${i % 4}.0`;
    rungs.push({
      path: `_releases/${tag}`,
      kind: 'release',
      title: tag,
      summary: `${tag}: ${10 + Math.floor(r() * 40)} commits. Features: ${phrase(r, v, 3)}; ${phrase(r, v, 2)}. Fixes: ${phrase(r, v, 3)}.`,
      anchor: { commit: commit(), oid: hex(r, 40) },
    });
  }
  for (let i = 0; i < nChangesets; i++) {
    const sha = commit();
    const subject = `${['fix', 'feat', 'refactor', 'docs', 'test'][Math.floor(r() * 5)]!}(${v.zipf.pick(r)}): ${phrase(r, v, 4)}`;
    rungs.push({
      path: `_changesets/${sha}`,
      kind: 'changeset',
      title: subject,
      summary: `${subject}. ${sentence(r, v)} 5 files changed, +120 −31, in src/${v.zipf.pick(r)} (4 files), test (1).`,
      anchor: { commit: sha, oid: sha },
    });
  }
  for (let i = 0; i < nIssues; i++) {
    const title = `${cap(phrase(r, v, 3))} fails when ${phrase(r, v, 2)} is empty`;
    rungs.push({
      path: `_issues/${i + 1}`,
      kind: 'issue',
      title,
      summary: `${title}. ${sentence(r, v)} ${sentence(r, v)}`,
    });
  }
  for (let i = 0; i < nPulls; i++) {
    const title = `${cap(VERBS[Math.floor(r() * VERBS.length)]!.replace(/s$/, ''))} ${phrase(r, v, 3)}`;
    rungs.push({
      path: `_pulls/${nIssues + i + 1}`,
      kind: 'pull_request',
      title,
      summary: `${title}. ${sentence(r, v)}`,
    });
  }
  for (let i = 0; i < nPeople; i++) {
    const login = `${pseudoWord(r)}${i}`;
    rungs.push({
      path: `_people/${login}`,
      kind: 'contributor',
      title: login,
      summary: `${login}: ${20 + Math.floor(r() * 300)} commits, mostly in src/${v.zipf.pick(r)} and src/${v.zipf.pick(r)}.`,
    });
  }
  const dirs: string[] = [];
  for (let i = 0; i < nDirs; i++) {
    const parent = i < 6 || dirs.length === 0 ? 'src' : dirs[Math.floor(r() * dirs.length)]!;
    const name = v.zipf.pick(r) + (r() < 0.3 ? `-${v.zipf.pick(r)}` : '');
    const path = i === 0 ? 'src' : `${parent}/${name}`;
    if (dirs.includes(path)) continue;
    dirs.push(path);
    const key = [fileName(), fileName(), fileName()];
    rungs.push({
      path,
      kind: 'directory',
      title: `${path.split('/').pop()!}/`,
      summary:
        `${sentence(r, v)} ${8 + Math.floor(r() * 30)} files (${exts[0]} mostly), ${Math.floor(r() * 5)} subdirs. ` +
        key.map((k) => `${k}: ${sentence(r, v)}`).join(' '),
      anchor: { commit: commit(), oid: hex(r, 40) },
    });
  }
  const seen = new Set(rungs.map((x) => x.path));
  while (rungs.length < count) {
    const dir = dirs[Math.floor(r() * dirs.length)] ?? 'src';
    const path = `${dir}/${fileName()}`;
    if (seen.has(path)) continue;
    seen.add(path);
    const nSym = Math.floor(r() * 7);
    const symbols: string[] = [];
    for (let i = 0; i < nSym; i++) symbols.push(identifier(r, v, v.style));
    const documented = r() < 0.55;
    const summary = documented
      ? `${sentence(r, v)}${r() < 0.5 ? ` ${sentence(r, v)}` : ''}${symbols.length > 0 ? ` Exports ${symbols.slice(0, 5).join(', ')}.` : ''}`
      : `Defines ${symbols.length > 0 ? symbols.join(', ') : phrase(r, v, 2)} (${20 + Math.floor(r() * 600)} lines).`;
    rungs.push({
      path,
      kind: 'file',
      title: path.split('/').pop()!,
      summary,
      symbols,
      anchor: { commit: commit(), oid: hex(r, 40) },
    });
  }
  return rungs;
}

/** Realistic queries: words, word pairs (some misspelt), identifiers and prefixes of them. */
export function syntheticQueries(n: number, repos: number): string[] {
  const r = rng(99);
  const out: string[] = [];
  while (out.length < n) {
    const v = repoVocab(Math.floor(r() * repos));
    const word = () => {
      let w = v.zipf.pick(r);
      // Skip the handful of words that are in nearly every rung: people do not search for them.
      while (COMMON.slice(0, 20).includes(w)) w = v.zipf.pick(r);
      return w;
    };
    const typo = (w: string) => {
      if (w.length < 5) return w;
      const i = 1 + Math.floor(r() * (w.length - 2));
      return w.slice(0, i) + w[i + 1] + w[i] + w.slice(i + 2);
    };
    const x = r();
    if (x < 0.3) out.push(`${word()} ${word()}`);
    else if (x < 0.4) out.push(`${word()} ${typo(word())}`);
    else if (x < 0.55) out.push(word());
    else if (x < 0.7) out.push(identifier(r, v, v.style));
    else if (x < 0.8) out.push(identifier(r, v, v.style).slice(0, 7));
    else if (x < 0.9) out.push(`${word()} ${word()} ${word()}`);
    else out.push(`src/${word()}`);
  }
  return out;
}
