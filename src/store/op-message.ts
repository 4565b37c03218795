import { z } from 'zod';
import { describeIssues, opRecord, type OpParse } from '../schema/ops.js';
import type { CommitRecord, OpRecord } from './store.js';

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

export type OpMessageParse<Op> = { ok: true; ops: Op[] } | { ok: false; error: string };

/**
 * The ops a commit message records, parsed against `schema` (the op envelope by default, or an
 * entity's op union). A message without an ops line records none (a merge commit, a commit
 * written by hand); broken JSON or an op that does not parse is an error value naming what is
 * wrong — never thrown, never silently skipped.
 */
export function parseOpMessage(message: string): OpMessageParse<OpRecord>;
export function parseOpMessage<Op>(
  message: string,
  parse: (raw: OpRecord) => OpParse<Op>,
): OpMessageParse<Op>;
export function parseOpMessage<Op>(
  message: string,
  parse?: (raw: OpRecord) => OpParse<Op>,
): OpMessageParse<Op | OpRecord> {
  const line = message.split('\n').find((l) => l.startsWith(JSON_MARK));
  if (line === undefined) return { ok: true, ops: [] };
  let json: unknown;
  try {
    json = JSON.parse(line.slice(JSON_MARK.length));
  } catch (e) {
    return { ok: false, error: `the ops line is not JSON (${(e as Error).message})` };
  }
  const raw = z.array(opRecord).safeParse(json);
  if (!raw.success) return { ok: false, error: `an op is malformed: ${describeIssues(raw.error)}` };
  if (!parse) return { ok: true, ops: raw.data };
  const ops: Op[] = [];
  for (const r of raw.data) {
    const p = parse(r);
    if (!p.ok) return { ok: false, error: p.error };
    ops.push(p.op);
  }
  return { ok: true, ops };
}

/** A commit's ops for CommitRecord: the parsed envelopes, or none and why. */
export function commitOps(message: string): Pick<CommitRecord, 'ops' | 'malformed'> {
  const r = parseOpMessage(message);
  return r.ok ? { ops: r.ops } : { ops: [], malformed: r.error };
}

function oneLine(s: string): string {
  return s.replace(/[\r\n\0-\x1f]/g, ' ');
}
