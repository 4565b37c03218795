import type { z } from 'zod';
import { ZzError } from '../errors.js';
import { atPath, inUserTerms } from '../schema/issue-text.js';
import type { ToolContext, ToolDef } from './define-tool.js';

// The one path every call takes, whatever the transport: find, authorise, parse, run, check.

export function describeZodError(e: z.ZodError, raw?: object): string {
  return e.issues
    .slice(0, 5)
    .map((i) => {
      const path = i.path.map(String).join('.');
      // A field left out is "required", not "expected string, received undefined".
      if (i.code === 'invalid_type' && raw && i.path.length === 1 && !(String(i.path[0]) in raw))
        return `${path} is required`;
      if (i.code === 'unrecognized_keys') {
        const keys = i.keys.map((k) => (path ? `${path}.${k}` : k));
        return `unknown field${keys.length > 1 ? 's' : ''} ${keys.map((k) => `"${k}"`).join(', ')}`;
      }
      return atPath(i.path, i.message);
    })
    .join('; ');
}

export function parseArgs<T extends z.ZodType>(schema: T, raw: unknown): z.infer<T> {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ZzError('invalid_argument', 'arguments must be a JSON object');
  }
  const r = schema.safeParse(raw, { error: inUserTerms });
  if (!r.success)
    throw new ZzError('invalid_argument', describeZodError(r.error, raw), {
      issues: r.error.issues.slice(0, 20),
    });
  return r.data;
}

export class Registry {
  private readonly byName = new Map<string, ToolDef>();

  constructor(readonly tools: readonly ToolDef[]) {
    for (const t of tools) {
      if (this.byName.has(t.name)) throw new Error(`duplicate tool ${t.name}`);
      this.byName.set(t.name, t);
    }
  }

  get(name: string): ToolDef | undefined {
    return this.byName.get(name);
  }

  require(name: string): ToolDef {
    const t = this.byName.get(name);
    if (!t) throw new ZzError('not_found', `unknown tool "${name.slice(0, 80)}"`);
    return t;
  }
}

export interface RunOptions {
  /** Check results against the output schema (always on under vitest; costs time on big reads). */
  validateOutput?: boolean;
}

export async function runTool(
  tool: ToolDef,
  raw: unknown,
  ctx: ToolContext,
  opts: RunOptions = {},
): Promise<Record<string, unknown>> {
  if (tool.local && !ctx.local) {
    throw new ZzError(
      'local_only',
      `${tool.name} runs on the agent's machine, not in the daemon; call it through \`zz mcp\`, \`zz work\` or the zz CLI`,
    );
  }
  if (!ctx.caller) {
    const open =
      tool.publicRead && (await ctx.repo.config.read()).state.config?.visibility === 'public';
    if (!open)
      throw new ZzError('unauthorized', `${tool.name} needs a bearer token (run \`zz login\`)`);
  }
  let input = raw;
  if (
    raw &&
    typeof raw === 'object' &&
    !Array.isArray(raw) &&
    'repo' in raw &&
    !('repo' in tool.input.shape)
  ) {
    // The transport already chose the repository; a body naming another one is a mistake.
    const { repo, ...rest } = raw as Record<string, unknown>;
    if (repo !== ctx.repo.key) {
      throw new ZzError(
        'invalid_argument',
        `repo: "${String(repo).slice(0, 100)}" is not the repository this call is for (${ctx.repo.key})`,
      );
    }
    input = rest;
  }
  const args = parseArgs(tool.input, input);
  const result = (await tool.handler(args, ctx)) as Record<string, unknown>;
  if (opts.validateOutput ?? !!process.env.VITEST) {
    const r = tool.output.safeParse(result);
    if (!r.success) {
      throw new ZzError(
        'internal',
        `${tool.name} produced an invalid result: ${describeZodError(r.error)}`,
      );
    }
  }
  return result;
}
