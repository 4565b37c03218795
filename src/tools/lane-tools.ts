import { z } from 'zod';
import { EVENTS_CURSOR_MAX_LENGTH, laneEvents } from '../core/events.js';
import { actor, laneId, newLaneId } from '../schema/ids.js';
import { askKinds } from '../schema/lane.js';
import { HELD, LIMITS } from '../schema/limits.js';
import { longText } from '../schema/ops.js';
import {
  askOut,
  corruptOut,
  countsOut,
  historyOut,
  laneOut,
  writeMetaOut,
} from '../schema/views.js';
import { createArgs, writeArgs } from './common-args.js';
import { defineTool, READ, WRITE } from './define-tool.js';
import { lazyModule } from './lazy-module.js';

// The use cases load with a tool's first call, not with the registry: every CLI command that
// runs a tool in-process loads the registry, and need not load all of core with it.
const lanes = lazyModule(() => import('../core/lanes.js'));
const closing = lazyModule(() => import('../core/closing.js'));

const laneIdArg = laneId.describe('e.g. "_repo" or "auth-rework"');
const cursor = z.string().max(4096);
const offset = z.number().int().min(0).max(1_000_000_000);

export const laneTools = [
  defineTool({
    name: 'lane_propose',
    summary: 'Create a Lane (a stream of work); the proposer becomes its coordinator',
    toolset: 'lanes',
    annotations: WRITE,
    input: z.strictObject({
      lane_id: newLaneId.optional().describe('Slug for the new Lane; generated when omitted'),
      title: z.string().min(1).max(LIMITS.title),
      description: longText(z.string().max(LIMITS.description)).optional(),
      maintainers: z
        .array(actor)
        .max(100)
        .optional()
        .describe('Who may review changesets; defaults to the proposer'),
      related_lanes: z.array(laneId).max(100).optional(),
      ask_kinds: askKinds(LIMITS.askKinds)
        .optional()
        .describe('Custom ask kinds and who may claim them'),
      from: actor.optional(),
      ...createArgs,
    }),
    output: z.strictObject({ lane: laneOut, ...writeMetaOut }),
    handler: async (args, ctx) => (await lanes()).lanePropose(ctx.repo, ctx.caller, args),
  }),
  defineTool({
    name: 'lane_get',
    summary:
      'One Lane with its Asks and history, oldest first, 100 of each by default (≤ 4 MiB a page); ask_list finds open work',
    toolset: 'lanes',
    annotations: READ,
    input: z.strictObject({
      lane_id: laneIdArg,
      asks_limit: z.number().int().min(1).max(100_000).optional().describe('Default 100'),
      asks_offset: offset.optional().describe('First Ask to return (next_asks_offset)'),
      asks_cursor: cursor.optional(),
      history_limit: z.number().int().min(1).max(100_000).optional().describe('Default 100'),
      history_offset: offset.optional().describe('First history entry (next_history_offset)'),
      history_cursor: cursor.optional(),
      include_history: z.boolean().optional().describe('false to skip history (default true)'),
    }),
    output: z.strictObject({
      lane: laneOut,
      asks: z.array(askOut),
      history: z.array(historyOut),
      next_asks_offset: z
        .number()
        .nullable()
        .describe('Pass as asks_offset for the next page; null when this was the last'),
      next_history_offset: z.number().nullable(),
      next_asks_cursor: z.string().nullable(),
      next_history_cursor: z.string().nullable(),
    }),
    handler: async (args, ctx) => (await lanes()).laneGet(ctx.repo, ctx.caller, args),
  }),
  defineTool({
    name: 'lane_list',
    summary: 'Lanes by id with counts of open, claimed and answered Asks; paged',
    toolset: 'lanes',
    publicRead: true,
    annotations: READ,
    input: z.strictObject({
      limit: z.number().int().min(1).max(1_000).optional().describe('Default 100'),
      cursor: z.string().max(256).optional().describe('next_cursor of the previous page'),
    }),
    output: z.strictObject({
      lanes: z.array(laneOut.extend({ counts: countsOut })),
      next_cursor: z.string().nullable(),
      total: z.number().describe('How many Lanes, over all pages'),
      corrupt: z.array(corruptOut).describe('Lane refs that cannot be read, with why'),
      corrupt_more: z.number().describe('How many more cannot be read'),
    }),
    handler: async (args, ctx) => (await lanes()).laneList(ctx.repo, args),
  }),
  defineTool({
    name: 'lane_add_related',
    summary: "Record a Lane created from this one in its related_lanes (its coordinators')",
    toolset: 'lanes',
    annotations: { ...WRITE, idempotentHint: true },
    input: z.strictObject({ lane_id: laneIdArg, related_lane_id: laneId, ...writeArgs }),
    output: z.strictObject({ lane: laneOut, ...writeMetaOut }),
    handler: async (args, ctx) => (await lanes()).laneAddRelated(ctx.repo, ctx.caller, args),
  }),
  defineTool({
    name: 'lane_grant',
    summary: 'Add or remove a coordinator or maintainer of a Lane (coordinators and owners)',
    toolset: 'lanes',
    annotations: { ...WRITE, destructiveHint: true, idempotentHint: true },
    input: z.strictObject({
      lane_id: laneIdArg,
      grantee: actor,
      role: z.enum(['coordinator', 'maintainer']),
      revoke: z.boolean().optional(),
      ...writeArgs,
    }),
    output: z.strictObject({ lane: laneOut, ...writeMetaOut }),
    handler: async (args, ctx) => (await lanes()).laneGrant(ctx.repo, ctx.caller, args),
  }),
  defineTool({
    name: 'lane_events',
    summary: 'Events after a cursor across one Lane or all; wait_ms long-polls for the next one',
    description: `Pass back next_cursor to continue. At most ${HELD.longPollsPerPerson} waiting calls a person (429 past that).`,
    toolset: 'lanes',
    annotations: READ,
    input: z.strictObject({
      lane_id: laneIdArg.optional(),
      cursor: z.string().max(EVENTS_CURSOR_MAX_LENGTH).optional(),
      wait_ms: z.number().int().min(0).max(60_000).optional(),
      limit: z.number().int().min(1).max(5_000).optional(),
    }),
    output: z.strictObject({
      events: z.array(historyOut.extend({ lane_id: z.string(), revision: z.string() })),
      next_cursor: z.string(),
      corrupt: z.array(corruptOut).describe('Lane refs that cannot be read (skipped), with why'),
      corrupt_more: z.number().describe('How many more cannot be read'),
    }),
    handler: (args, ctx) => laneEvents(ctx.repo, ctx.caller, args, ctx.signal),
  }),
  defineTool({
    name: 'lane_close',
    summary: 'Close a Lane: no new Asks, nothing more to claim (coordinators and owners)',
    description: 'Claimed work may still be answered. History is kept; nothing is deleted.',
    toolset: 'lanes',
    annotations: { ...WRITE, destructiveHint: true },
    input: z.strictObject({
      lane_id: laneIdArg,
      reason: z.string().max(LIMITS.reason).optional(),
      ...writeArgs,
    }),
    output: z.strictObject({ lane: laneOut, ...writeMetaOut }),
    handler: async (args, ctx) => (await closing()).laneClose(ctx.repo, ctx.caller, args),
  }),
];
