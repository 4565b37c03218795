import { afterEach, describe, expect, it, vi } from 'vitest';
import type { CliIO } from '../../src/cli/io.js';
import { workReporter } from '../../src/cli/work-command.js';
import type { WorkEvent } from '../../src/work/index.js';

// zz work's output modes: lasting lines plus one live status line on a terminal, a line per
// step on a pipe, JSON per event with --json; text from the Lane is never obeyed.

function io(tty: boolean) {
  const out: string[] = [];
  const err: string[] = [];
  const cli: CliIO = {
    stdout: (s) => out.push(s),
    stderr: (s) => err.push(s),
    env: {},
    cwd: '/',
    isTTY: tty,
    stderrIsTTY: tty,
  };
  return { cli, out, err };
}

const events: WorkEvent[] = [
  {
    type: 'claimed',
    ask_id: 'ask-1',
    kind: 'work',
    title: 'Fix \x1b]0;pwned\x07 it\u202e',
    lease_expires_at: null,
  },
  { type: 'step', ask_id: 'ask-1', step: 'model' },
  { type: 'step', ask_id: 'ask-1', step: 'answer', detail: 'complete' },
  {
    type: 'answered',
    ask_id: 'ask-1',
    outcome: 'complete',
    changeset_id: 'cs-1',
    follow_ups: [{ ask_id: 'ask-2', kind: 'changeset_review' }],
    ms: 1234,
  },
];

describe('zz work output', () => {
  it('on a pipe: one line per step, control characters shown as escapes', () => {
    const { cli, out, err } = io(false);
    const emit = workReporter(cli, false, false);
    events.forEach(emit);
    expect(err).toEqual([]);
    expect(out.join('')).toBe(
      'ask-1 claimed (work): Fix \\x1b]0;pwned\\x07 it<U+202E>\n' +
        'ask-1 model\n' +
        'ask-1 answer complete\n' +
        'ask-1 answered complete in 1.2s, changeset cs-1; follow-up ask-2 (changeset_review)\n',
    );
  });

  it('on a terminal: steps are one live status line on stderr, lasting lines on stdout', () => {
    const { cli, out, err } = io(true);
    const emit = workReporter(cli, false, false);
    events.forEach(emit);
    expect(out).toHaveLength(2);
    expect(err).toEqual(['ask-1 model', '\r\x1b[K', 'ask-1 answer complete', '\r\x1b[K']);
  });

  it('--json: one parseable event per line', () => {
    const { cli, out } = io(true);
    const emit = workReporter(cli, true, false);
    events.forEach(emit);
    expect(out[0]).toContain('Fix \\u001b]0;pwned\\u0007 it\\u202e');
    // Exactly one line per event, each a whole JSON object (what `jq -c`/line readers need).
    const lines = out.join('').split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toHaveLength(events.length);
    const parsed = lines.map((l) => JSON.parse(l) as WorkEvent);
    expect(parsed.map((e) => e.type)).toEqual(['claimed', 'step', 'step', 'answered']);
    expect((parsed[0] as { title: string }).title).toBe('Fix \x1b]0;pwned\x07 it\u202e');
  });

  it('says once, as a lasting line, which landing kinds it passes over and what an owner runs', () => {
    const { cli, out, err } = io(true);
    const emit = workReporter(cli, false, false);
    emit({
      type: 'passing_over',
      lane_id: 'own',
      kinds: ['submit_changeset', 'resolve_conflict'],
      reason:
        "bot@x\x1b[2J coordinates lane own by a role no owner stands behind; an owner runs `zz lane grant --lane-id own --grantee 'bot@x' --role coordinator`",
    });
    expect(err).toEqual([]);
    expect(out.join('')).toBe(
      "zz work: passing over submit_changeset and resolve_conflict Asks in lane own: bot@x\\x1b[2J coordinates lane own by a role no owner stands behind; an owner runs `zz lane grant --lane-id own --grantee 'bot@x' --role coordinator`\n",
    );
  });

  it('on a terminal: a long step shows its running time, redrawn in place, until the next', () => {
    vi.useFakeTimers();
    const { cli, out, err } = io(true);
    const emit = workReporter(cli, false, false);
    emit({ type: 'step', ask_id: 'ask-1', step: 'model' });
    vi.advanceTimersByTime(3_000);
    expect(err).toEqual([
      'ask-1 model',
      '\r\x1b[Kask-1 model (1s)',
      '\r\x1b[Kask-1 model (2s)',
      '\r\x1b[Kask-1 model (3s)',
    ]);
    emit(events[3]!);
    vi.advanceTimersByTime(5_000);
    // Wiped once before the lasting line, and no redraw after it.
    expect(err.slice(4)).toEqual(['\r\x1b[K']);
    expect(out).toHaveLength(1);
  });
});

afterEach(() => {
  vi.useRealTimers();
});
