import { isZzError, ZzError } from '../errors.js';
import type { CallTool } from './types.js';

// Reads the flows make through the tools (so they work against any daemon): the default
// branch head, a file at a commit (paged, bounded), the paths a diff touches.

/** Files larger than this are not put in front of a model. */
export const MAX_CONTEXT_FILE = 256 * 1024;

/** The head of the default branch, as the daemon resolves it. */
export async function headCommit(call: CallTool): Promise<string> {
  // git_diff names the commit it resolved; one byte of hunks keeps the answer tiny.
  const r = await call('git_diff', { max_bytes: 1, context_lines: 0 });
  return String(r.commit);
}

export interface FileAt {
  content: string;
  encoding: 'utf8' | 'base64';
  size: number;
}

/** A file at a commit; null when it does not exist there; too big → a clear error. */
export async function readFileAt(
  call: CallTool,
  path: string,
  commit: string,
  maxBytes = MAX_CONTEXT_FILE,
): Promise<FileAt | null> {
  let content = '';
  let offset = 0;
  for (;;) {
    let r: Record<string, unknown>;
    try {
      r = await call('git_show_file', { path, commit, offset, limit: 256 * 1024 });
    } catch (e) {
      if (isZzError(e) && e.code === 'not_found') return null;
      throw e;
    }
    const encoding = r.encoding as 'utf8' | 'base64';
    const size = Number(r.size);
    if (size > maxBytes) {
      throw new ZzError('payload_too_large', `${path} is ${size} bytes; the limit is ${maxBytes}`);
    }
    content += String(r.content);
    const next = r.next_offset as number | null;
    if (next === null || next <= offset) return { content, encoding, size };
    offset = next;
  }
}

export interface DiffFile {
  path: string;
  status: string;
  hunks: { lines: string[] }[];
  binary: boolean;
  truncated: boolean;
}

export async function diffFiles(
  call: CallTool,
  commit: string,
  base?: string,
  maxBytes = 512 * 1024,
): Promise<{ files: DiffFile[]; truncated: boolean }> {
  const r = await call('git_diff', {
    commit,
    ...(base ? { base } : {}),
    max_bytes: maxBytes,
  });
  return { files: r.files as DiffFile[], truncated: r.truncated === true };
}

/** A unified-diff-like text of git_diff's answer, for a model to read. */
export function diffText(files: DiffFile[]): string {
  return files
    .map((f) => {
      const head = `--- ${f.path} (${f.status}${f.binary ? ', binary' : ''})`;
      const body = f.hunks.map((h) => h.lines.join('\n')).join('\n');
      return `${head}\n${body}${f.truncated ? '\n[… truncated]' : ''}`;
    })
    .join('\n\n');
}

export const changesetRef = (id: string) => `refs/zz/changesets/${id}`;
