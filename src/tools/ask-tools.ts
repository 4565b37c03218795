import { z } from 'zod';
import { ASK_LIST_STATES } from '../core/ask-list.js';
import { actor, askId, laneId } from '../schema/ids.js';
import { askKind } from '../schema/lane.js';
import { LIMITS } from '../schema/limits.js';
import { boundedJson, boundedText } from '../schema/ops.js';
import { askOut, corruptOut, historyOut, laneOut, writeMetaOut } from '../schema/views.js';
import { createArgs, writeArgs } from './common-args.js';
import { defineTool, READ, WRITE } from './define-tool.js';
import { lazyModule } from './lazy-module.js';

const MAX_FILE = 4 * 1024 * 1024;

export const changesetInput = z.strictObject({
  base: z
    .string()
    .regex(/^[0-9a-f]{40}$/, 'base must be a 40-character commit id')
    .describe('The commit the change is based on'),
  message: z.string().min(1).max(20_000).describe('Commit message'),
  files: z
    .array(
      z.strictObject({
        path: z.string().min(1).max(4096),
        content: z
          .string()
          .max(MAX_FILE)
          .nullable()
          .describe('Full new content; null deletes the file'),
        encoding: z.enum(['utf8', 'base64']).optional(),
      }),
    )
    .min(1)
    .max(2_000),
});

// The use cases load with a tool's first call, not with the registry: every CLI command that
// runs a tool in-process loads the registry, and need not load all of core with it.
const asks = lazyModule(() => import('../core/asks.js'));
const askList = lazyModule(() => import('../core/ask-list.js'));
const claimable = lazyModule(() => import('../core/ask-claimable.js'));
const closing = lazyModule(() => import('../core/closing.js'));

export const askTools = [
  defineTool({
    name: 'ask_post',
    summary: 'Post an Ask (a claimable request) in a Lane, with optional dependencies and priority',
    toolset: 'asks',
    annotations: WRITE,
    input: z.strictObject({
      lane_id: laneId,
      kind: askKind.describe('work, ladder_update, … or a kind the Lane defines'),
      title: z.string().min(1).max(LIMITS.title),
      body: boundedText(LIMITS.body, 'body').optional(),
      priority: z
        .number()
        .int()
        .min(0)
        .max(4)
        .optional()
        .describe('0 highest … 4 lowest (default 2)'),
      depends_on: z
        .array(askId)
        .max(LIMITS.list)
        .optional()
        .describe('Asks that must be answered complete/grant first'),
      payload: boundedJson(LIMITS.payload, 'payload')
        .optional()
        .describe(
          `Structured data for whoever takes the Ask (at most ${LIMITS.payload / 1024} KiB as JSON)`,
        ),
      from: actor.optional(),
      ...createArgs,
    }),
    output: z.strictObject({ ask: askOut, ...writeMetaOut }),
    handler: async (args, ctx) => (await asks()).askPost(ctx.repo, ctx.caller, args),
  }),
  defineTool({
    name: 'ask_query_claimable',
    summary:
      'Asks in a Lane you may claim now: open, unblocked, in your scope; by priority then age; paged',
    description:
      'Pass next_cursor back as cursor for the next page; it keeps its place while Asks are claimed or posted.',
    toolset: 'asks',
    annotations: READ,
    input: z.strictObject({
      lane_id: laneId,
      kinds: z.array(askKind).max(50).optional(),
      limit: z.number().int().min(1).max(500).optional().describe('Default 50'),
      cursor: z.string().max(2048).optional().describe('next_cursor of the previous page'),
    }),
    output: z.strictObject({
      asks: z.array(askOut),
      next_cursor: z.string().nullable(),
      total: z.number().describe('How many Asks you may claim, over all pages'),
      revision: z.string().nullable(),
    }),
    handler: async (args, ctx) => (await claimable()).askQueryClaimable(ctx.repo, ctx.caller, args),
  }),
  defineTool({
    name: 'ask_claim_next',
    summary: 'Take work: claims the highest-priority, oldest Ask you may claim in a Lane',
    description:
      'THE way to take work: picked and claimed in one commit, no races. {ask: null} when none is claimable for you. The same idempotency_key and arguments get the same Ask back; renew a lease with ask_claim.',
    toolset: 'asks',
    annotations: WRITE,
    input: z.strictObject({
      lane_id: laneId,
      kinds: z.array(askKind).max(50).optional().describe('Only Asks of these kinds'),
      exclude: z
        .array(askId)
        .max(
          LIMITS.claimExclude,
          `at most ${LIMITS.claimExclude} Ask ids: pass over only the Asks you mean to retry later`,
        )
        .optional()
        .describe(`Asks to pass over (at most ${LIMITS.claimExclude})`),
      // Self-explaining beside exclude; a description would cost the MCP tool list budget.
      exclude_kinds: z.array(askKind).max(50).optional(),
      lease_seconds: z
        .number()
        .int()
        .min(1)
        .max(LIMITS.leaseSeconds)
        .optional()
        .describe('Default 1800'),
      ...createArgs,
    }),
    output: z.strictObject({
      ask: askOut.nullable().describe('The Ask now claimed by you, or null when none is claimable'),
      lane_closed: laneOut.shape.closed.describe('Set when the Lane is closed: no more work'),
      revision: z.string().nullable(),
      replayed: writeMetaOut.replayed,
    }),
    handler: async (args, ctx) => (await asks()).askClaimNext(ctx.repo, ctx.caller, args),
  }),
  defineTool({
    name: 'ask_claim',
    summary: 'Claim an Ask for yourself with a lease; claiming it again renews the lease',
    toolset: 'asks',
    annotations: WRITE,
    input: z.strictObject({
      lane_id: laneId,
      ask_id: askId,
      lease_seconds: z
        .number()
        .int()
        .min(1)
        .max(LIMITS.leaseSeconds)
        .optional()
        .describe('Default 1800'),
      ...writeArgs,
    }),
    output: z.strictObject({ ask: askOut, renewed: z.boolean(), ...writeMetaOut }),
    handler: async (args, ctx) => (await asks()).askClaim(ctx.repo, ctx.caller, args),
  }),
  defineTool({
    name: 'ask_release',
    summary: 'Give up a claim so that others may take the Ask',
    toolset: 'asks',
    annotations: WRITE,
    input: z.strictObject({
      lane_id: laneId,
      ask_id: askId,
      reason: z
        .string()
        .max(LIMITS.reason)
        .optional()
        .describe("Why you give it back (shown in the Lane's history)"),
      ...writeArgs,
    }),
    output: z.strictObject({ ask: askOut, ...writeMetaOut }),
    handler: async (args, ctx) => (await asks()).askRelease(ctx.repo, ctx.caller, args),
  }),
  defineTool({
    name: 'ask_answer',
    summary:
      'Answer an Ask you hold: complete, deny, or grant (reviews); the server posts follow-ups',
    description:
      'A work Ask completed with a changeset {base, message, files:[{path, content}]} gets a changeset_review follow-up.',
    toolset: 'asks',
    annotations: WRITE,
    input: z.strictObject({
      lane_id: laneId,
      ask_id: askId,
      outcome: z.enum(['complete', 'deny', 'grant']),
      result: boundedText(LIMITS.result, 'result').optional().describe('What was done, or why not'),
      changeset: changesetInput.optional(),
      ...writeArgs,
    }),
    output: z.strictObject({
      ask: askOut,
      follow_ups: z.array(askOut),
      changeset_id: z.string().nullable(),
      ...writeMetaOut,
    }),
    handler: async (args, ctx) => (await asks()).askAnswer(ctx.repo, ctx.caller, args),
  }),
  defineTool({
    name: 'ask_list',
    summary: 'Asks across Lanes (or in one), filtered by mine, state and kind; paged',
    description:
      'state: open (incl. expired claims), claimed, answered, cancelled. Pass next_cursor back as cursor for the next page; it keeps its place while Asks are claimed or posted (next_offset does not).',
    toolset: 'asks',
    annotations: READ,
    input: z.strictObject({
      lane_id: laneId.optional().describe('Only this Lane'),
      mine: z.boolean().optional().describe('Only Asks you posted or hold'),
      state: z.array(z.enum(ASK_LIST_STATES)).max(4).optional(),
      kind: z.array(askKind).max(LIMITS.list).optional(),
      limit: z.number().int().min(1).max(1_000).optional().describe('Default 100'),
      offset: z.number().int().min(0).max(1_000_000_000).optional(),
      cursor: z.string().max(2048).optional().describe('next_cursor of the previous page'),
    }),
    output: z.strictObject({
      asks: z.array(askOut),
      next_offset: z.number().nullable(),
      next_cursor: z.string().nullable(),
      total: z.number().describe('How many Asks match, over all pages'),
      corrupt: z.array(corruptOut).describe('Lane refs that cannot be read (skipped), with why'),
      corrupt_more: z.number().describe('How many more cannot be read'),
    }),
    handler: async (args, ctx) => (await askList()).askList(ctx.repo, ctx.caller, args),
  }),
  defineTool({
    name: 'ask_get',
    summary: 'One Ask by id (in a Lane, or looked up across Lanes)',
    toolset: 'asks',
    annotations: READ,
    description:
      'Each include_* adds a page of limit items; pass next_*_offset back as *_offset for more.',
    input: z.strictObject({
      ask_id: askId,
      lane_id: laneId.optional(),
      include_dependents: z.boolean().optional().describe('Also the Asks that depend on it'),
      dependents_offset: z.number().int().min(0).max(1_000_000_000).optional(),
      include_history: z.boolean().optional().describe("Also the Ask's history entries"),
      history_offset: z.number().int().min(0).max(1_000_000_000).optional(),
      limit: z.number().int().min(1).max(1_000).optional().describe('Default 100, per list'),
    }),
    output: z.strictObject({
      ask: askOut,
      revision: z.string().nullable(),
      dependents: z.array(askOut).optional(),
      next_dependents_offset: z.number().nullable().optional(),
      history: z.array(historyOut).optional(),
      next_history_offset: z.number().nullable().optional(),
    }),
    handler: async (args, ctx) => (await askList()).askGet(ctx.repo, ctx.caller, args),
  }),
  defineTool({
    name: 'ask_cancel',
    summary: 'Cancel an Ask nobody should take any more (its poster or a coordinator)',
    toolset: 'asks',
    annotations: { ...WRITE, destructiveHint: true },
    input: z.strictObject({
      lane_id: laneId,
      ask_id: askId,
      reason: z.string().max(LIMITS.reason).optional(),
      ...writeArgs,
    }),
    output: z.strictObject({ ask: askOut, ...writeMetaOut }),
    handler: async (args, ctx) => (await closing()).askCancel(ctx.repo, ctx.caller, args),
  }),
];
