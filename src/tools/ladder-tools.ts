import { z } from 'zod';
import {
  ladderHistory,
  ladderRead,
  ladderWriteRung,
  MAX_DETAIL_CHARS,
  MAX_WRITE_RUNGS,
} from '../core/ladder/ladder.js';
import type { SearchServices } from '../core/ladder/ladder-search.js';
import { LADDER_TREE_CURSOR_MAX, ladderTree } from '../core/ladder/ladder-tree.js';
import { askId, laneId } from '../schema/ids.js';
import { PAGE } from '../schema/limits.js';
import {
  MAX_DETAIL_BYTES,
  MAX_SUMMARY_BYTES,
  MAX_TITLE_CHARS,
  rungKind,
  rungPath,
} from '../schema/rung.js';
import { writeMetaOut } from '../schema/views.js';
import type { LadderSearch } from '../search/index.js';
import { writeArgs } from './common-args.js';
import { defineTool, READ, WRITE, type ToolContext } from './define-tool.js';
import { lazyModule } from './lazy-module.js';

// The Ladder toolset (DESIGN §3, §6): read one rung, the tree (paged past 4 MiB), one rung's history, search
// across every repository this front end knows, rebuild this repository's search entries, and
// a coordinator's rung writes. The search use cases are core/ladder/ladder-search.ts; the index
// comes from ctx.services.search when the front end keeps one (the daemon does).

// The search use cases load with their first call, not with the registry (lane-tools.ts).
const search = lazyModule(() => import('../core/ladder/ladder-search.js'));

const utf8Max = (max: number) => (s: string) => Buffer.byteLength(s, 'utf8') <= max;

const anchorOut = z.looseObject({ commit: z.string(), oid: z.string() });
const generatorOut = z.looseObject({
  method: z.string(),
  model: z.string().optional(),
  version: z.string(),
});
const rungOut = z.looseObject({
  path: z.string(),
  kind: z.string(),
  title: z.string(),
  summary: z.string(),
  detail: z.string().optional(),
  detail_chars: z.number().int().optional(),
  symbols: z.array(z.string()).optional(),
  anchor: anchorOut.optional(),
  inputs_hash: z.string(),
  generator: generatorOut,
  author: z.string(),
  written_at: z.string(),
});

const pathArg = rungPath.describe(
  'Rung path: _repo, src, src/index.ts, _releases/<tag>, _changesets/<sha>, …',
);

function searchServices(ctx: ToolContext): SearchServices {
  const s = ctx.services?.search as Partial<LadderSearch> | undefined;
  const search =
    s && typeof s.search === 'function' && typeof s.setRepo === 'function'
      ? (s as LadderSearch)
      : null;
  return {
    search,
    repos: ctx.services?.repos,
    current: ctx.services?.searchCurrent,
    tokensFor: ctx.services?.tokensFor,
  };
}

export const ladderTools = [
  defineTool({
    name: 'ladder_read',
    summary:
      'One Ladder rung by path, with stale (its anchor differs from the default branch head)',
    description:
      'A long `detail` comes in pages of characters: pass back next_offset as offset to continue.',
    toolset: 'ladder',
    annotations: READ,
    input: z.strictObject({
      path: pathArg,
      offset: z
        .number()
        .int()
        .min(0)
        .optional()
        .describe('Character offset into detail (default 0)'),
      limit: z
        .number()
        .int()
        .min(1)
        .max(MAX_DETAIL_CHARS)
        .optional()
        .describe('Characters of detail to return (default 65536)'),
    }),
    output: z.strictObject({
      rung: rungOut,
      stale: z.boolean(),
      revision: z.string().nullable(),
      next_offset: z.number().int().nullable(),
    }),
    handler: (args, ctx) => ladderRead(ctx.repo, ctx.caller, args),
  }),
  defineTool({
    name: 'ladder_tree',
    summary: `The Ladder in tree order, paged past ${PAGE.maxBytes / 2 ** 20} MiB: path, kind, title, summary, anchor, stale`,
    description: 'A cursor holds its place while rungs are written.',
    toolset: 'ladder',
    publicRead: true,
    annotations: READ,
    input: z.strictObject({
      under: rungPath.optional().describe('Only this rung and those below it, e.g. src'),
      limit: z.number().int().min(1).optional().describe('Default: all that fit'),
      cursor: z
        .string()
        .max(LADDER_TREE_CURSOR_MAX)
        .optional()
        .describe('next_cursor of the previous page'),
    }),
    output: z.strictObject({
      rungs: z.array(
        z.looseObject({
          path: z.string(),
          kind: z.string(),
          title: z.string(),
          summary: z.string(),
          anchor: anchorOut.nullable(),
          stale: z.boolean(),
        }),
      ),
      revision: z.string().nullable(),
      next_cursor: z.string().nullable(),
      total: z.number().describe('How many rungs (under `under`), over all pages'),
    }),
    handler: (args, ctx) => ladderTree(ctx.repo, args),
  }),
  defineTool({
    name: 'ladder_history',
    summary: 'Every write of one rung, newest first: revision, time, actor, generator, text',
    toolset: 'ladder',
    annotations: READ,
    input: z.strictObject({
      path: pathArg,
      limit: z.number().int().min(1).max(500).optional().describe('Default 50'),
      cursor: z.string().max(200).optional(),
    }),
    output: z.strictObject({
      path: z.string(),
      revisions: z.array(
        z.looseObject({
          revision: z.string(),
          op: z.string(),
          actor: z.string(),
          time: z.string(),
          removed: z.boolean(),
          lane_id: z.string().nullable(),
          ask_id: z.string().nullable(),
          kind: z.string().nullable(),
          title: z.string().nullable(),
          summary: z.string().nullable(),
          anchor: anchorOut.nullable(),
          inputs_hash: z.string().nullable(),
          generator: generatorOut.nullable(),
          rejected: z
            .looseObject({ reason: z.string() })
            .optional()
            .describe('Set when the guarded fold refused this op: it changed no rung'),
        }),
      ),
      next_cursor: z.string().nullable(),
    }),
    handler: (args, ctx) => ladderHistory(ctx.repo, args),
  }),
  defineTool({
    name: 'ladder_search',
    summary: 'Full-text search over rung summaries across the repositories you may read',
    description:
      'Words are ANDed (falling back to OR when nothing matches all); the last word matches as a prefix. Pass back next_cursor with the same query to page.',
    toolset: 'ladder',
    annotations: READ,
    input: z.strictObject({
      query: z.string().min(1).max(500),
      repo: z.string().min(1).max(200).optional().describe('Only this repository (owner/name)'),
      kind: rungKind.optional().describe('Only rungs of this kind'),
      limit: z.number().int().min(1).max(50).optional().describe('Default 10'),
      cursor: z.string().max(200).optional(),
    }),
    output: z.strictObject({
      hits: z.array(
        z.looseObject({
          repo: z.string(),
          path: z.string(),
          kind: z.string(),
          title: z.string(),
          summary: z.string(),
          score: z.number(),
          anchor: anchorOut.nullable(),
          stale: z.boolean(),
        }),
      ),
      next_cursor: z.string().nullable(),
    }),
    handler: async (args, ctx) =>
      (await search()).ladderSearch(ctx.repo, ctx.caller, searchServices(ctx), args),
  }),
  defineTool({
    name: 'ladder_reindex',
    summary: "Rebuild this repository's entries in the search index from its current Ladder",
    description:
      'Any member may call it: the index is derived data and holds nothing the Ladder does not.',
    toolset: 'ladder',
    annotations: {
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    },
    input: z.strictObject({}),
    output: z.strictObject({
      repo: z.string(),
      ladder_oid: z.string().nullable(),
      docs: z.number().int(),
      source: z.string().nullable(),
      ms: z.number(),
    }),
    handler: async (_args, ctx) => (await search()).ladderReindex(ctx.repo, searchServices(ctx)),
  }),
  defineTool({
    name: 'ladder_write_rung',
    summary: 'Write Ladder rungs, as a rooted coordinator working a claimed Ask of the cited Lane',
    description:
      "Repo, directory, file, release and changeset rungs must cite the commit they describe; the rung is anchored to the path's object at that commit.",
    toolset: 'ladder',
    annotations: WRITE,
    input: z.strictObject({
      lane_id: laneId,
      ask_id: askId.describe('The Ask you hold and are working (e.g. a ladder_update)'),
      rungs: z
        .array(
          z.strictObject({
            path: pathArg,
            kind: rungKind,
            title: z.string().min(1).max(MAX_TITLE_CHARS),
            summary: z
              .string()
              .min(1)
              .refine(
                utf8Max(MAX_SUMMARY_BYTES),
                `summary must be at most ${MAX_SUMMARY_BYTES / 1024} KB`,
              ),
            detail: z
              .string()
              .refine(
                utf8Max(MAX_DETAIL_BYTES),
                `detail must be at most ${MAX_DETAIL_BYTES / 1024} KB`,
              )
              .optional(),
            symbols: z.array(z.string().min(1).max(200)).max(200).optional(),
            commit: z
              .string()
              .regex(/^[0-9a-f]{4,40}$/, 'commit must be a hex commit id')
              .optional()
              .describe(
                'The commit described (required for repo, directory, file, release, changeset)',
              ),
            generator: z
              .strictObject({
                method: z.enum(['human', 'model']),
                model: z.string().min(1).max(200).optional(),
                version: z.string().min(1).max(64).optional(),
              })
              .optional(),
          }),
        )
        .min(1)
        .max(MAX_WRITE_RUNGS),
      ...writeArgs,
    }),
    output: z.strictObject({
      rungs: z.array(
        z.looseObject({
          path: z.string(),
          kind: z.string(),
          anchor: anchorOut.nullable(),
          inputs_hash: z.string(),
        }),
      ),
      ...writeMetaOut,
    }),
    handler: (args, ctx) => ladderWriteRung(ctx.repo, ctx.caller, args),
  }),
];
