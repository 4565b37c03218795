import { ZzError } from '../errors.js';

/**
 * Splits an `exec:` command into argv the way a POSIX shell splits words — whitespace
 * separates, '…' is literal, "…" and backslash escape — and does nothing else: no variables,
 * globs, pipes or redirections. The result is spawned directly (never through a shell), so
 * `exec:./agent.sh | tee log` passes `|`, `tee` and `log` to the script as arguments.
 * `what` names the command in errors (`zz work --test-cmd` splits its command here too).
 */
export function splitCommand(command: string, what = 'exec: command'): string[] {
  const out: string[] = [];
  let cur = '';
  let inWord = false;
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < command.length; i++) {
    const ch = command[i]!;
    if (quote === "'") {
      if (ch === "'") quote = null;
      else cur += ch;
      continue;
    }
    if (ch === '\\') {
      const next = command[i + 1];
      if (next === undefined) throw bad(what, command, 'ends with a backslash');
      // Inside "…" a backslash escapes only what the shell lets it escape.
      if (quote === '"' && !'"\\$`'.includes(next)) cur += ch;
      cur += next;
      i++;
      inWord = true;
      continue;
    }
    if (quote === '"') {
      if (ch === '"') quote = null;
      else cur += ch;
      continue;
    }
    if (ch === "'" || ch === '"') {
      quote = ch;
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) out.push(cur);
      cur = '';
      inWord = false;
    } else {
      cur += ch;
      inWord = true;
    }
  }
  if (quote) throw bad(what, command, `has an unterminated ${quote} quote`);
  if (inWord) out.push(cur);
  if (out.length === 0) throw bad(what, command, 'is empty');
  if (out.some((a) => a.includes('\0'))) throw bad(what, command, 'contains a NUL byte');
  return out;
}

function bad(what: string, command: string, why: string): ZzError {
  return new ZzError('invalid_argument', `${what} "${command.slice(0, 100)}" ${why}`);
}
