import type { z } from 'zod';
import type { Caller, TokenStore, ZzRepo } from '../core/index.js';
import type { LadderSearch } from '../search/index.js';

// One definition per tool. HTTP, MCP and the CLI are generic loops over these; nothing about
// a tool is written twice.

export const TOOLSETS = ['git', 'ladder', 'lanes', 'asks', 'code', 'local', 'admin'] as const;
export type Toolset = (typeof TOOLSETS)[number];

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** Services a front end may provide beyond the repository itself. */
export interface ToolServices {
  /** Cross-repo Ladder search, when the front end keeps one (the daemon does). */
  search?: LadderSearch;
  /**
   * Brings `search`'s entries for a served repository up to its ladder ref now. The ref watcher
   * lags a move made by another process (an in-process `zz ladder build` beside the daemon),
   * and a search in that gap found nothing in a user's first hour.
   */
  searchCurrent?: (repo: ZzRepo) => Promise<void>;
  /** Every repository this front end serves, by key. */
  repos?: ReadonlyMap<string, ZzRepo>;
  /** A served repository's token store (token_list, token_revoke). */
  tokensFor?: (repoKey: string) => TokenStore | undefined;
}

export interface ToolContext {
  repo: ZzRepo;
  caller: Caller | null;
  /** Local tools (run_in_sandbox, gh_fetch_*) run only where this is true: CLI, stdio MCP, zz work. */
  local: boolean;
  signal?: AbortSignal;
  services?: ToolServices;
}

export interface ToolDef<
  I extends z.ZodObject = z.ZodObject,
  O extends z.ZodObject = z.ZodObject,
  N extends string = string,
> {
  name: N;
  /** One line: what the tool does. */
  summary: string;
  /** Extra guidance for models (argument meaning, retries). */
  description?: string;
  toolset: Toolset;
  /** Callable without a token when the repository is public. */
  publicRead?: boolean;
  local?: boolean;
  annotations: ToolAnnotations;
  input: I;
  output: O;
  handler(args: z.infer<I>, ctx: ToolContext): Promise<z.infer<O>>;
}

/** A defined tool: erased to ToolDef for the registry, but still naming its name and output. */
export type DefinedTool<
  N extends string = string,
  O extends z.ZodObject = z.ZodObject,
> = ToolDef & {
  readonly name: N;
  readonly output: O;
};

export function defineTool<I extends z.ZodObject, O extends z.ZodObject, N extends string>(
  def: ToolDef<I, O, N>,
): DefinedTool<NoInfer<N>, NoInfer<O>> {
  // The registry holds tools of every input type; runTool parses args with def.input before
  // calling def.handler, so the handler only ever sees the z.infer<I> it was typed with.
  // as unknown as: ToolDef is invariant in I/O (handler parameter), so no widening is sound to TS.
  return def as unknown as DefinedTool<N, O>;
}

export const READ: ToolAnnotations = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
};

/** Writes that only add (asks, lanes, claims): retry-safe with an idempotency_key. */
export const WRITE: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: false,
};

export const isWrite = (t: ToolDef): boolean => !t.annotations.readOnlyHint;
