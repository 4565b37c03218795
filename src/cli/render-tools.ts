import { neutralize } from './terminal.js';

// Tools whose results read best as the text they hold: a file as its content, a diff as
// unified hunks. What goes to stdout is only that text (so `zz git show-file … > f` works);
// how to get the rest of a paged or cut answer goes to stderr as a note.
// A file shown on a terminal is neutralised like every other text; into a pipe or a file
// (stdout not a TTY: Style.tty, from io.isTTY) it goes out as its exact bytes, binary ones
// too: neutralising there silently changed what `zz git show-file > f` wrote (a form feed, a
// bare CR) with exit 0.

export interface Rendered {
  stdout: string;
  note?: string;
  /** What to write instead when the front end can write bytes (CliIO.stdoutBytes). */
  raw?: { bytes: Uint8Array; note?: string };
}

type Renderer = (r: Record<string, unknown>, st: { color: boolean; tty?: boolean }) => Rendered;

const withNewline = (s: string): string => (s === '' || s.endsWith('\n') ? s : s + '\n');

const showFile: Renderer = (r, st) => {
  const path = neutralize(String(r.path));
  const size = Number(r.size);
  const offset = Number(r.offset);
  const next = r.next_offset;
  const rest =
    typeof next === 'number'
      ? `zz: showed bytes ${offset}–${next - 1} of ${size} of ${path}; the rest: zz git show-file --path ${path} --commit ${neutralize(String(r.commit))} --offset ${next}\n`
      : undefined;
  if (r.encoding === 'base64') {
    return {
      stdout: '',
      note: `zz: ${path} is binary (${size} bytes); --json gives its bytes as base64, and redirected to a file it is written as is\n`,
      ...(st.tty
        ? {}
        : {
            raw: {
              bytes: Buffer.from(String(r.content), 'base64'),
              ...(rest ? { note: rest } : {}),
            },
          }),
    };
  }
  const content = String(r.content);
  return {
    stdout: st.tty ? neutralize(withNewline(content), { multiline: true }) : content,
    ...(rest ? { note: rest } : {}),
  };
};

interface Hunk {
  old_start: number;
  old_lines: number;
  new_start: number;
  new_lines: number;
  lines: string[];
}

interface DiffFile {
  path: string;
  old_path: string | null;
  status: string;
  binary: boolean;
  old_mode: string | null;
  new_mode: string | null;
  hunks: Hunk[];
  truncated: boolean;
}

const red = (s: string, c: boolean) => (c ? `\x1b[31m${s}\x1b[39m` : s);
const green = (s: string, c: boolean) => (c ? `\x1b[32m${s}\x1b[39m` : s);
const cyan = (s: string, c: boolean) => (c ? `\x1b[36m${s}\x1b[39m` : s);
const bold = (s: string, c: boolean) => (c ? `\x1b[1m${s}\x1b[22m` : s);

const diff: Renderer = (r, st) => {
  const c = st.color;
  const out: string[] = [];
  const files = (r.files as DiffFile[] | undefined) ?? [];
  let cutFiles = 0;
  for (const f of files) {
    const path = neutralize(f.path);
    const old = neutralize(f.old_path ?? f.path);
    out.push(bold(`diff --git a/${old} b/${path}`, c));
    if (f.status === 'added') out.push(bold(`new file mode ${f.new_mode ?? ''}`.trim(), c));
    else if (f.status === 'deleted')
      out.push(bold(`deleted file mode ${f.old_mode ?? ''}`.trim(), c));
    else if (f.old_mode && f.new_mode && f.old_mode !== f.new_mode)
      out.push(bold(`old mode ${f.old_mode}`, c), bold(`new mode ${f.new_mode}`, c));
    if (f.status === 'renamed' || f.status === 'copied') {
      const verb = f.status === 'renamed' ? 'rename' : 'copy';
      out.push(bold(`${verb} from ${old}`, c), bold(`${verb} to ${path}`, c));
    }
    if (f.binary) {
      out.push(`Binary files a/${old} and b/${path} differ`);
      continue;
    }
    if (f.hunks.length) {
      out.push(bold(f.status === 'added' ? '--- /dev/null' : `--- a/${old}`, c));
      out.push(bold(f.status === 'deleted' ? '+++ /dev/null' : `+++ b/${path}`, c));
    }
    for (const h of f.hunks) {
      out.push(cyan(`@@ -${h.old_start},${h.old_lines} +${h.new_start},${h.new_lines} @@`, c));
      for (const l of h.lines) {
        const text = neutralize(l, { multiline: true });
        out.push(l.startsWith('+') ? green(text, c) : l.startsWith('-') ? red(text, c) : text);
      }
    }
    if (f.truncated) {
      cutFiles++;
      out.push(`[… the diff of ${path} was cut at max_bytes]`);
    }
  }
  const notes: string[] = [];
  if (cutFiles || r.truncated)
    notes.push(
      `zz: this diff was cut at max_bytes${r.truncated ? ' (later files left out)' : ''}; raise --max-bytes or pass --paths to see the rest`,
    );
  const text = out.length ? out.join('\n') + '\n' : '';
  return { stdout: text, ...(notes.length ? { note: notes.join('\n') + '\n' } : {}) };
};

/**
 * A registered key counts in other clones only once refs/zz/config travels: `zz key add`
 * printed a revision alone, and the owner in a first hour did not know the key was not
 * registered for the machine that needed it until both had synced.
 */
const keyAdd: Renderer = (r) => ({
  stdout: `revision: ${neutralize(String(r.revision))}\n`,
  note: 'zz: the key is registered in this clone; run `zz sync` here, then `zz sync` on the machine whose key it is\n',
});

export const TOOL_RENDERERS: Record<string, Renderer> = {
  git_show_file: showFile,
  git_diff: diff,
  key_add: keyAdd,
};
