import { McpServer } from '@modelcontextprotocol/server';
import type {
  CallToolResult,
  StandardSchemaWithJSON,
  ToolAnnotations,
} from '@modelcontextprotocol/server';
import type { z } from 'zod';
import { mcpAudienceOf, toZzError, ZzError } from '../errors.js';
import {
  isWrite,
  runTool,
  toolJsonSchema,
  TOOLSETS,
  type Registry,
  type ToolContext,
  type ToolDef,
  type Toolset,
} from '../tools/index.js';

// The registry as an MCP server. Nothing here is written per tool: names, descriptions, schemas
// and annotations come from the ToolDefs, and every call goes through runTool().

export interface CreateMcpServerOptions {
  registry: Registry;
  /** The context each call runs in; called once per tool call. */
  context: () => ToolContext | Promise<ToolContext>;
  /** Only tools of these toolsets are listed and callable (default: all). */
  toolsets?: readonly Toolset[];
  /** Only read-only tools (annotations.readOnlyHint) are listed and callable. */
  readOnly?: boolean;
  /** Whether local tools (run_in_sandbox, gh_fetch_*) are offered: true for `zz mcp`, false in the daemon. */
  local?: boolean;
  /** A further filter (roles): a tool it refuses is neither listed nor callable. */
  allow?: (tool: ToolDef) => boolean;
  name?: string;
  version?: string;
  /**
   * Runs a call instead of runTool in-process: `zz mcp` forwards to the checkout's daemon
   * this way (local tools still run here). Must keep runTool's contract.
   */
  execute?: (tool: ToolDef, args: unknown, ctx: ToolContext) => Promise<Record<string, unknown>>;
  /** Told about errors that are bugs (not ZzErrors a caller can fix); the client only sees a generic message. */
  onError?: (error: unknown, tool: string) => void;
}

export const SERVER_NAME = 'zz';
export const SERVER_VERSION = '0.1.0';

/** The tools a server built with these options lists and accepts, in registry order. */
export function visibleTools(
  opts: Pick<CreateMcpServerOptions, 'registry' | 'toolsets' | 'readOnly' | 'local' | 'allow'>,
): ToolDef[] {
  const sets = opts.toolsets ? new Set<Toolset>(opts.toolsets) : null;
  return opts.registry.tools.filter(
    (t) =>
      (!sets || sets.has(t.toolset)) &&
      (!opts.readOnly || t.annotations.readOnlyHint) &&
      (!t.local || opts.local === true) &&
      (!opts.allow || opts.allow(t)),
  );
}

/** Parses `--toolsets` values ("lanes,asks", repeated flags, "all") into toolset names. */
export function parseToolsets(values: string | readonly string[]): Toolset[] {
  const names = (typeof values === 'string' ? [values] : values)
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean);
  if (names.includes('all')) return [...TOOLSETS];
  const known = new Set<string>(TOOLSETS);
  const unknown = names.filter((n) => !known.has(n));
  if (unknown.length > 0) {
    throw new ZzError(
      'invalid_argument',
      `unknown toolset${unknown.length > 1 ? 's' : ''} ${unknown.map((u) => `"${u.slice(0, 40)}"`).join(', ')}; known: ${TOOLSETS.join(', ')}, all`,
    );
  }
  return [...new Set(names)] as Toolset[];
}

export function createMcpServer(opts: CreateMcpServerOptions): McpServer {
  const tools = visibleTools(opts);
  const server = new McpServer(
    { name: opts.name ?? SERVER_NAME, version: opts.version ?? SERVER_VERSION },
    {
      // Declared up front so that tools/list answers (empty) even when every tool is filtered out.
      capabilities: { tools: { listChanged: false } },
      instructions: instructionsFor(tools),
    },
  );
  for (const tool of tools) {
    const spec = mcpToolSpec(tool);
    server.registerTool(
      tool.name,
      {
        title: spec.title,
        description: spec.description,
        inputSchema: spec.input,
        outputSchema: spec.output,
        annotations: spec.annotations,
      },
      async (args, mctx) => callTool(tool, args, mctx.mcpReq.signal, opts),
    );
  }
  return server;
}

async function callTool(
  tool: ToolDef,
  args: unknown,
  signal: AbortSignal,
  opts: CreateMcpServerOptions,
): Promise<CallToolResult> {
  try {
    const base = await opts.context();
    const ctx: ToolContext = {
      ...base,
      signal: base.signal ? AbortSignal.any([base.signal, signal]) : signal,
    };
    const result = opts.execute
      ? await opts.execute(tool, args, ctx)
      : await runTool(tool, args, ctx);
    return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
  } catch (e) {
    const err = toZzError(e);
    if (mcpAudienceOf(err.code) === 'internal') opts.onError?.(e, tool.name);
    // No structuredContent on errors: clients validate it against the output schema (SDK #1943).
    return { content: [{ type: 'text', text: errorText(err, tool.name) }], isError: true };
  }
}

// ---- errors -------------------------------------------------------------------------------

const MAX_DETAILS = 2000;

function detail(details: unknown, key: string): string | null {
  if (!details || typeof details !== 'object') return null;
  const v = (details as Record<string, unknown>)[key];
  return typeof v === 'string' ? v : null;
}

function nextStep(err: ZzError): string | null {
  switch (err.code) {
    case 'invalid_argument':
      return 'Fix the arguments named above and call again; the input schema lists every accepted field (unknown fields are refused).';
    case 'not_found':
      return 'Check the id or path you passed; list what exists (lane_list, lane_get) rather than guessing.';
    case 'conflict':
      return 'The state changed under you: re-read it (lane_get) and decide again.';
    case 'revision_mismatch': {
      const current = detail(err.details, 'current_revision');
      return `Re-read it (lane_get for a Lane and its Asks) and retry with expected_revision set to the current revision${current ? ` (${current})` : ''}.`;
    }
    case 'already_claimed': {
      const until = detail(err.details, 'lease_expires_at');
      return `Pick another Ask from ask_query_claimable${until ? `, or try again after the lease expires (${until})` : ''}.`;
    }
    case 'dependency_unresolved':
      return 'Its dependencies must be answered complete or grant first: work on those, or pick another Ask from ask_query_claimable.';
    case 'idempotency_conflict':
      return 'Reuse an idempotency_key only to retry the exact same call; use a new key for a new request.';
    case 'merge_conflict':
      return 'The branch moved and the change no longer applies: rebase it onto the current head and submit it again.';
    case 'dirty_worktree':
      return 'The served checkout has local changes to those paths; its user must commit or stash them before this can proceed.';
    case 'ref_locked':
      return 'Another process is writing the same ref: retry in a moment with the same idempotency_key.';
    case 'forbidden':
      return 'You lack the role for this; repo_state shows your roles. If you passed actor or from, it must be your own actor. Ask a coordinator or owner for access if you need it.';
    case 'unauthorized':
      return 'This call needs a valid zz token: run `zz login`, or configure the MCP client with a bearer token.';
    case 'precondition_failed':
      return 'The repository is not ready for this call; follow the message above.';
    case 'unsafe_content':
      return 'git itself would refuse this content (git fsck): change the file as the message says and send the change again.';
    case 'local_only':
      return 'Use a local `zz mcp` server (stdio) for this tool.';
    case 'payload_too_large':
      return 'Send less per call: split the change into smaller calls, or page with limit/cursor.';
    case 'unavailable':
      return 'Retry in a little while.';
    case 'read_only':
      return 'The repository cannot be written on this machine (read-only or no permission); reads still work. Tell the user: retrying will not help until it is writable.';
    case 'insufficient_storage':
      return 'The disk holding the repository is full. Tell the user to free space, then retry with the same idempotency_key; nothing of the refused call was kept.';
    default:
      return null;
  }
}

/** Argument errors list their first issues in the message already; repeating them is noise. */
function saysNoMore(err: ZzError): boolean {
  if (err.code !== 'invalid_argument' || !err.details || typeof err.details !== 'object')
    return false;
  const { issues, ...rest } = err.details as { issues?: unknown };
  return Array.isArray(issues) && issues.length <= 5 && Object.keys(rest).length === 0;
}

/** The text a model reads when a call fails: what went wrong, what to do, and the details. */
export function errorText(err: ZzError, tool: string): string {
  if (mcpAudienceOf(err.code) === 'internal') {
    return `Error internal: ${tool} failed inside the zz server. This is a bug in zz, not in your call; it has been logged. Retrying is unlikely to help.`;
  }
  const lines = [`Error ${err.code}: ${err.message}`];
  const step = nextStep(err);
  if (step) lines.push(`What to do: ${step}`);
  if (err.details !== undefined && err.details !== null && !saysNoMore(err)) {
    let json = JSON.stringify(err.details) ?? '';
    if (json.length > MAX_DETAILS) json = `${json.slice(0, MAX_DETAILS)}…`;
    if (json && json !== '{}') lines.push(`Details: ${json}`);
  }
  return lines.join('\n');
}

// ---- tool specs ---------------------------------------------------------------------------

export const IDEMPOTENCY_SENTENCE = 'Reuse the idempotency_key when retrying.';

type JsonSchema = Record<string, unknown>;

export interface McpToolSpec {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema: JsonSchema;
  annotations: ToolAnnotations;
  /** Schemas for the SDK: they advertise our JSON Schema and accept anything, so that runTool
   * does the one strict parse and its messages (naming the field) reach the model. */
  input: StandardSchemaWithJSON<Record<string, unknown>>;
  output: StandardSchemaWithJSON<Record<string, unknown>>;
}

// Specs are pure functions of a ToolDef; the daemon builds a server per request, so cache them.
const specs = new WeakMap<ToolDef, McpToolSpec>();

export function mcpToolSpec(tool: ToolDef): McpToolSpec {
  let spec = specs.get(tool);
  if (!spec) {
    const title = titleOf(tool.name);
    const { schema: inputSchema, argLines } = liftArgDescriptions(
      tool,
      jsonSchemaOf(tool.input, 'input'),
    );
    const outputSchema = shallow(jsonSchemaOf(tool.output, 'output'));
    spec = {
      name: tool.name,
      title,
      description: describeTool(tool, argLines),
      inputSchema,
      outputSchema,
      annotations: { title, ...tool.annotations },
      input: passThrough(inputSchema),
      output: passThrough(outputSchema),
    };
    specs.set(tool, spec);
  }
  return spec;
}

function passThrough(json: JsonSchema): StandardSchemaWithJSON<Record<string, unknown>> {
  return {
    '~standard': {
      version: 1,
      vendor: 'zz',
      validate: (value) => ({ value: value as Record<string, unknown> }),
      jsonSchema: { input: () => json, output: () => json },
    },
  };
}

function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  return tidy(toolJsonSchema(schema, io)) as JsonSchema;
}

// A tool list is context a model pays for on every turn, for every tool; keep only what informs.

/** Drops what says nothing: `$schema` (the default dialect anyway), zod's ±2^53 bounds on every
 * integer, `propertyNames: {type: string}` and `additionalProperties: {}` (both always true). */
function tidy(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(tidy);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$schema') continue;
    if (k === 'minimum' && v === Number.MIN_SAFE_INTEGER) continue;
    if (k === 'maximum' && v === Number.MAX_SAFE_INTEGER) continue;
    if ((k === 'propertyNames' || k === 'additionalProperties') && isTrivial(v, k)) continue;
    out[k] = tidy(v);
  }
  return out;
}

function isTrivial(v: unknown, key: string): boolean {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return false;
  const keys = Object.keys(v);
  if (key === 'additionalProperties') return keys.length === 0;
  return keys.length === 1 && (v as JsonSchema).type === 'string';
}

/** Outputs are self-describing JSON: the listed schema keeps the top-level fields and their
 * types (enough for a client to check structuredContent) and leaves nested shapes open. */
function shallow(schema: JsonSchema): JsonSchema {
  const props = schema.properties as Record<string, JsonSchema> | undefined;
  if (!props) return { type: 'object' };
  const out: JsonSchema = {
    type: 'object',
    properties: Object.fromEntries(Object.entries(props).map(([k, v]) => [k, typeOnly(v)])),
  };
  if (schema.required) out.required = schema.required;
  return out;
}

// Nullable and union fields are written as `anyOf` of single types, never `"type": [a, b]`:
// some clients (and the strictest schema checkers they use) refuse type arrays.
function typeOnly(s: JsonSchema): JsonSchema {
  if (Array.isArray(s.anyOf)) {
    const types = (s.anyOf as JsonSchema[])
      .map((x) => x.type)
      .filter((t): t is string => typeof t === 'string');
    return types.length === s.anyOf.length ? { anyOf: types.map((type) => ({ type })) } : {};
  }
  if (Array.isArray(s.type)) return { anyOf: (s.type as string[]).map((type) => ({ type })) };
  if (s.type === 'array')
    return s.items ? { type: 'array', items: typeOnly(s.items as JsonSchema) } : { type: 'array' };
  if (s.type === undefined) return {};
  const out: JsonSchema = { type: s.type };
  if (s.enum) out.enum = s.enum;
  return out;
}

/** Moves top-level argument descriptions out of the schema into the tool description, one
 * line each, so that a model reads every argument's meaning once, next to what the tool does.
 * idempotency_key keeps its own: the description has a sentence about it instead. */
function liftArgDescriptions(
  tool: ToolDef,
  input: JsonSchema,
): { schema: JsonSchema; argLines: string[] } {
  const props = input.properties as Record<string, JsonSchema> | undefined;
  if (!props) return { schema: input, argLines: [] };
  const argLines: string[] = [];
  const lifted: Record<string, JsonSchema> = {};
  for (const [name, p] of Object.entries(props)) {
    if (typeof p.description === 'string' && !(isWrite(tool) && name === 'idempotency_key')) {
      const { description, ...rest } = p;
      argLines.push(`- ${name}: ${description}`);
      lifted[name] = rest;
    } else {
      lifted[name] = p;
    }
  }
  return { schema: { ...input, properties: lifted }, argLines };
}

function titleOf(name: string): string {
  const words = name.split('_');
  return words.map((w, i) => (i === 0 ? w.charAt(0).toUpperCase() + w.slice(1) : w)).join(' ');
}

function sentence(s: string): string {
  const t = s.trim();
  return /[.!?]$/.test(t) ? t : `${t}.`;
}

function describeTool(tool: ToolDef, argLines: readonly string[]): string {
  const parts = [sentence(tool.summary)];
  if (tool.description) parts.push(sentence(tool.description));
  if (argLines.length > 0) parts.push(['Arguments:', ...argLines].join('\n'));
  if (isWrite(tool) && 'idempotency_key' in tool.input.shape) parts.push(IDEMPOTENCY_SENTENCE);
  return parts.join('\n');
}

function instructionsFor(tools: readonly ToolDef[]): string {
  const has = (n: string) => tools.some((t) => t.name === n);
  const lines = [
    'zz coordinates work in this git repository: Lanes are streams of work, Asks are claimable requests inside a Lane.',
  ];
  if (has('repo_state'))
    lines.push('Start with repo_state to see your actor, your roles and the Lanes.');
  if (has('ask_query_claimable') && has('ask_claim') && has('ask_answer')) {
    lines.push(
      'To work: ask_query_claimable, then ask_claim one Ask, do it, then ask_answer it (or ask_release it).',
    );
  }
  if (tools.some(isWrite)) {
    lines.push(
      'On updates pass expected_revision from your last read. Give each write an idempotency_key and reuse the same key when you retry it.',
    );
  }
  return lines.join('\n');
}
