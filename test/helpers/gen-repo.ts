import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { prng } from './seeded.js';

// Test-only: a synthetic history built in one `git fast-import` run (10,000 commits in a couple
// of seconds). It has what the read paths must get right: merges (a side branch forked and
// merged every few dozen commits, with clock skew on some side commits so date order and
// topological order disagree), renames, deletions, binary blobs, non-ASCII authors and paths
// that git quotes (spaces, tabs, quotes, non-ASCII).

export interface GenRepoOptions {
  commits: number;
  seed?: number;
  /** Files in the first commit, spread over `dirs` directories. */
  files?: number;
  dirs?: number;
}

export interface GenRepo {
  /** The work tree (nothing checked out). */
  dir: string;
  gitdir: string;
  /** Every path that exists at the tip. */
  tipPaths: string[];
  cleanup: () => void;
}

const AUTHORS = [
  'Ada Lovelace <ada@example.com>',
  'Zoë Ünicode <zoe@example.org>',
  'Linus T <lt@example.net>',
  '佐藤 花子 <hanako@example.jp>',
];

function quote(path: string): string {
  // fast-import accepts C-style quoted paths; quote all of them so special names need no care.
  return (
    '"' +
    path.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\t/g, '\\t').replace(/\n/g, '\\n') +
    '"'
  );
}

export function runGitSync(
  cwd: string,
  args: string[],
  input?: Buffer | string,
  extraEnv: Record<string, string> = {},
): string {
  const r = spawnSync('git', args, {
    cwd,
    input,
    maxBuffer: 512 * 1024 * 1024,
    env: {
      ...process.env,
      LC_ALL: 'C',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_TERMINAL_PROMPT: '0',
      ...extraEnv,
    },
  });
  if (r.status !== 0) {
    throw new Error(`git ${args.join(' ')} failed (${r.status}): ${r.stderr?.toString()}`);
  }
  return r.stdout.toString('utf8');
}

export function genRepo(opts: GenRepoOptions): GenRepo {
  const rnd = prng(opts.seed ?? 42);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const nFiles = opts.files ?? 300;
  const nDirs = opts.dirs ?? 10;

  const dir = mkdtempSync(join(tmpdir(), 'zz-genrepo-'));
  runGitSync(dir, ['init', '-q', '-b', 'main']);
  runGitSync(dir, ['config', 'user.name', 'Gen']);
  runGitSync(dir, ['config', 'user.email', 'gen@example.com']);

  const chunks: Buffer[] = [];
  const emit = (s: string | Buffer) => chunks.push(typeof s === 'string' ? Buffer.from(s) : s);
  const data = (body: string | Buffer) => {
    const b = typeof body === 'string' ? Buffer.from(body) : body;
    emit(`data ${b.length}\n`);
    emit(b);
    emit('\n');
  };

  // Main's files and the side branch's files are disjoint, so every merge is clean and the
  // merge commit's tree is simply main's tree plus side's changes.
  const main = new Map<string, string | Buffer>();
  const side = new Map<string, string>();
  const lines = (n: number, tag: string) =>
    Array.from({ length: n }, (_, i) => `line ${i} of ${tag}`).join('\n') + '\n';
  for (let i = 0; i < nFiles; i++) {
    const p = `d${String(i % nDirs).padStart(2, '0')}/f${String(i).padStart(4, '0')}.txt`;
    main.set(p, lines(12, p));
  }
  main.set('special/with space.txt', 'space\n');
  main.set('special/tab\there.txt', 'tab\n');
  main.set('special/quote"d.txt', 'quote\n');
  main.set('special/naïve-ünïcode.txt', 'unicode\n');
  main.set('bin/blob.bin', Buffer.from([0, 1, 2, 3, 255, 254, 0, 10]));
  for (let i = 0; i < 8; i++) side.set(`side/s${i}.txt`, lines(6, `side ${i}`));

  let mark = 0;
  let time = 1_600_000_000;
  let commitsMade = 0;
  let renameSeq = 0;

  const commit = (
    ref: string,
    parents: number[],
    ops: string[],
    fileData: Array<[string, string | Buffer]>,
    skew = 0,
  ): number => {
    mark++;
    commitsMade++;
    time += 60 + Math.floor(rnd() * 600);
    const who = pick(AUTHORS);
    const t = time - skew;
    emit(`commit ${ref}\nmark :${mark}\n`);
    emit(`author ${who} ${t} +0200\n`);
    emit(`committer ${who} ${t} +0200\n`);
    const subject = `commit ${commitsMade}: ${ops.length} op(s)`;
    data(commitsMade % 7 === 0 ? `${subject}\n\nBody line one.\nBody line two.\n` : `${subject}\n`);
    if (parents[0]) emit(`from :${parents[0]}\n`);
    for (const m of parents.slice(1)) emit(`merge :${m}\n`);
    for (const op of ops) emit(op + '\n');
    for (const [p, c] of fileData) {
      emit(`M 100644 inline ${quote(p)}\n`);
      data(c);
    }
    emit('\n');
    return mark;
  };

  // Root commit.
  let mainMark = commit('refs/heads/main', [], [], [...main.entries()]);

  const mutateMain = (): { ops: string[]; files: Array<[string, string | Buffer]> } => {
    const ops: string[] = [];
    const files: Array<[string, string | Buffer]> = [];
    const textPaths = [...main.keys()].filter((p) => p.startsWith('d'));
    const r = rnd();
    if (r < 0.05 && textPaths.length > 50) {
      const from = pick(textPaths);
      const to = from.replace(/\.txt$/, `-r${renameSeq++}.txt`);
      ops.push(`R ${quote(from)} ${quote(to)}`);
      main.set(to, main.get(from)!);
      main.delete(from);
    } else if (r < 0.08 && textPaths.length > 50) {
      const p = pick(textPaths);
      ops.push(`D ${quote(p)}`);
      main.delete(p);
    } else if (r < 0.11) {
      const p = `d${String(Math.floor(rnd() * nDirs)).padStart(2, '0')}/new${mark}.txt`;
      main.set(p, lines(5, p));
      files.push([p, main.get(p)!]);
    } else if (r < 0.12) {
      const b = Buffer.from([0, mark & 255, (mark >> 8) & 255, 7, 0]);
      main.set('bin/blob.bin', b);
      files.push(['bin/blob.bin', b]);
    } else if (r < 0.13) {
      const p = pick([
        'special/with space.txt',
        'special/tab\there.txt',
        'special/quote"d.txt',
        'special/naïve-ünïcode.txt',
      ]);
      const c = `${main.get(p) as string}edit ${mark}\n`;
      main.set(p, c);
      files.push([p, c]);
    } else {
      const n = 1 + Math.floor(rnd() * 3);
      for (let i = 0; i < n; i++) {
        const p = pick(textPaths);
        const ls = (main.get(p) as string).split('\n');
        ls[Math.floor(rnd() * (ls.length - 1))] = `edited at ${mark}`;
        main.set(p, ls.join('\n'));
        files.push([p, main.get(p)!]);
      }
    }
    return { ops, files };
  };

  while (commitsMade < opts.commits) {
    const left = opts.commits - commitsMade;
    if (left > 12 && rnd() < 0.04) {
      // A side branch forked from main's tip, merged back a few commits later.
      const fork = mainMark;
      const changed = new Set<string>();
      let sideMark = fork;
      const nSide = 1 + Math.floor(rnd() * 4);
      const nMain = Math.floor(rnd() * 4);
      for (let i = 0; i < Math.max(nSide, nMain); i++) {
        if (i < nSide) {
          const p = pick([...side.keys()]);
          const c = `${side.get(p)!}side edit ${mark}\n`;
          side.set(p, c);
          changed.add(p);
          // Every third side commit claims to be a day old: a clock-skewed machine.
          sideMark = commit('refs/heads/side', [sideMark], [], [[p, c]], i % 3 === 2 ? 86_400 : 0);
        }
        if (i < nMain) {
          const { ops, files } = mutateMain();
          mainMark = commit('refs/heads/main', [mainMark], ops, files);
        }
      }
      const merged: Array<[string, string]> = [...changed].map((p) => [p, side.get(p)!]);
      mainMark = commit('refs/heads/main', [mainMark, sideMark], [], merged);
      continue;
    }
    const { ops, files } = mutateMain();
    mainMark = commit('refs/heads/main', [mainMark], ops, files);
  }
  // fast-import's zlib streams make glibc grow and trim the heap once per object; a larger
  // top pad and trim threshold cut its runtime by about 3.5x (measured: 10k commits 3.5 s → 0.9 s).
  runGitSync(
    dir,
    ['fast-import', '--quiet', '--done'],
    Buffer.concat([...chunks, Buffer.from('done\n')]),
    { GLIBC_TUNABLES: 'glibc.malloc.top_pad=67108864:glibc.malloc.trim_threshold=134217728' },
  );
  // The side ref is only a vehicle; drop it so `main` is the only history.
  runGitSync(dir, ['update-ref', '-d', 'refs/heads/side']);

  const tipPaths = runGitSync(dir, ['ls-tree', '-r', '-z', '--name-only', 'main'])
    .split('\0')
    .filter((p) => p.length > 0);
  return {
    dir,
    gitdir: join(dir, '.git'),
    tipPaths,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
