import type { OpRecord } from './store.js';

// A commit message is an operation: a summary line, the ops as one JSON line (the authority
// for replay), and trailers so that `git log` readers see what happened without parsing JSON.

const JSON_MARK = 'zz-ops ';

export function formatOpMessage(summary: string, ops: readonly OpRecord[]): string {
  const trailers: string[] = [];
  for (const op of ops) {
    trailers.push(`Zz-Op: ${op.op}`, `Zz-Actor: ${oneLine(op.actor)}`, `Zz-Lamport: ${op.lamport}`);
    if (op.key !== undefined) trailers.push(`Zz-Idempotency-Key: ${oneLine(op.key)}`);
  }
  return `${oneLine(summary).slice(0, 200)}\n\n${JSON_MARK}${JSON.stringify(ops)}\n\n${trailers.join('\n')}\n`;
}

export function parseOpMessage(message: string): OpRecord[] {
  for (const line of message.split('\n')) {
    if (line.startsWith(JSON_MARK)) {
      try {
        const ops = JSON.parse(line.slice(JSON_MARK.length)) as unknown;
        return Array.isArray(ops) ? (ops as OpRecord[]) : [];
      } catch {
        return [];
      }
    }
  }
  return [];
}

function oneLine(s: string): string {
  return s.replace(/[\r\n\0-\x1f]/g, ' ');
}
