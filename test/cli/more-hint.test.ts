import { describe, expect, it } from 'vitest';
import { formatResult } from '../../src/cli/format.js';

// `zz ask list` at scale: the hint under a page names the flag that continues it. ask_list
// answers next_offset and next_cursor; only the cursor holds its place while agents claim and
// post between pages (an offset walk of 5,200 open Asks skipped 195), so only it is offered.
describe('the next-page hint', () => {
  it('offers --cursor, not --offset, when a page has both', () => {
    const text = formatResult(
      { asks: [], next_offset: 100, next_cursor: 'WyJhc2tfbGlzdCJd', total: 5200 },
      { color: false },
    );
    expect(text).toContain('(more: pass --cursor WyJhc2tfbGlzdCJd for the next page)');
    expect(text).not.toContain('--offset');
  });

  it('offers --offset when that is all a page has', () => {
    const text = formatResult({ content: 'x', next_offset: 7 }, { color: false });
    expect(text).toContain('(more: pass --offset 7 for the next page)');
  });

  // ask_get pages its history and dependents by offset alone: the field is left out above the
  // page (as every continuation is), so the hint under it must name it, or a page is lost.
  it("names ask_get's history and dependents offsets; lane_get's asks by cursor, not offset", () => {
    const ask = formatResult(
      { ask: { ask_id: 'a' }, next_history_offset: 100, next_dependents_offset: 50 },
      { color: false },
    );
    expect(ask).toContain('--history-offset 100');
    expect(ask).toContain('--dependents-offset 50');
    expect(ask).not.toContain('next_history_offset');
    const lane = formatResult(
      { lane: { lane_id: 'l' }, next_asks_offset: 20, next_asks_cursor: 'Qw' },
      { color: false },
    );
    expect(lane).toContain('--asks-cursor Qw');
    expect(lane).not.toContain('--asks-offset');
  });
});
