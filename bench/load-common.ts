// What bench/load.ts and its CPU part (load-cpu.ts) share: the Lane, the tools of the mix and
// the arguments of its reads.

export const LANE = 'load';

export type Tool =
  'ask_post' | 'ask_claim' | 'ask_answer' | 'lane_get' | 'lane_list' | 'ask_query_claimable';

export const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;

export function ok(tool: string, r: { status: number; text: string }): void {
  if (r.status !== 200) throw new Error(`${tool}: HTTP ${r.status}: ${r.text.slice(0, 200)}`);
}

export function readArgs(tool: Tool): Record<string, unknown> {
  if (tool === 'lane_get') return { lane_id: LANE, asks_limit: 50, history_limit: 50 };
  if (tool === 'ask_query_claimable') return { lane_id: LANE, limit: 20 };
  return {};
}
