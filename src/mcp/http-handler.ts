import { createMcpHandler } from '@modelcontextprotocol/server';
import type { AuthInfo } from '@modelcontextprotocol/server';
import type { Caller, ZzRepo } from '../core/index.js';
import { ZzError } from '../errors.js';
import type { Registry, ToolDef, ToolServices, Toolset } from '../tools/index.js';
import { createMcpServer, parseToolsets } from './mcp-server.js';
import { allowForCaller } from './roles.js';

// MCP over stateless Streamable HTTP on WHATWG Request/Response, for the daemon's
// POST /api/repos/<owner>/<repo>/mcp. The daemon authenticates; this only serves.

export interface McpHttpHandlerOptions {
  registry: Registry;
  /** Upper bound on toolsets; a request may narrow it further with `?toolsets=a,b`. */
  toolsets?: readonly Toolset[];
  /** Serve read-only tools only; a request may ask for this itself with `?read_only=1`. */
  readOnly?: boolean;
  /** A further filter on top of the caller's roles. */
  allow?: (tool: ToolDef) => boolean;
  services?: ToolServices;
  name?: string;
  version?: string;
  /** Errors that are bugs in a tool call (the client got a generic message). */
  onError?: (error: unknown, tool: string) => void;
  /** Requests the SDK refused or failed to answer (bad JSON-RPC, wrong protocol version, …). */
  onTransportError?: (error: Error) => void;
  /** Largest request body accepted, in bytes (default 8 MiB, as the daemon's own limit). */
  maxRequestBodySize?: number;
}

/** Who is calling, for which repository: established by the daemon from the URL and the token. */
export interface McpHttpContext {
  repo: ZzRepo;
  caller: Caller | null;
}

export type McpHttpHandler = (req: Request, ctx: McpHttpContext) => Promise<Response>;

interface RequestScope extends McpHttpContext {
  toolsets: readonly Toolset[] | undefined;
  readOnly: boolean;
}

const EXTRA_KEY = 'zz';

export function createMcpHttpHandler(opts: McpHttpHandlerOptions): McpHttpHandler {
  const handler = createMcpHandler(
    async (mctx) => {
      const scope = mctx.authInfo?.extra?.[EXTRA_KEY] as RequestScope | undefined;
      if (!scope) throw new Error('MCP request without a zz request scope');
      const roleAllow = await allowForCaller(scope.repo, scope.caller);
      return createMcpServer({
        registry: opts.registry,
        context: () => ({
          repo: scope.repo,
          caller: scope.caller,
          local: false,
          ...(opts.services ? { services: opts.services } : {}),
        }),
        ...(scope.toolsets ? { toolsets: scope.toolsets } : {}),
        readOnly: scope.readOnly,
        local: false,
        allow: (t) => roleAllow(t) && (opts.allow ? opts.allow(t) : true),
        ...(opts.name ? { name: opts.name } : {}),
        ...(opts.version ? { version: opts.version } : {}),
        ...(opts.onError ? { onError: opts.onError } : {}),
      });
    },
    {
      legacy: 'stateless',
      maxRequestBodySize: opts.maxRequestBodySize ?? 8 * 1024 * 1024,
      ...(opts.onTransportError ? { onerror: opts.onTransportError } : {}),
    },
  );

  return async (req, ctx) => {
    let narrowed: Pick<RequestScope, 'toolsets' | 'readOnly'>;
    try {
      narrowed = narrowFromUrl(req.url, opts);
    } catch (e) {
      if (!(e instanceof ZzError)) throw e;
      return Response.json({ error: e.message, code: e.code }, { status: e.status });
    }
    const scope: RequestScope = { ...ctx, ...narrowed };
    // The SDK passes authInfo through untouched to the factory; it is our only per-request channel.
    const authInfo: AuthInfo = {
      token: '',
      clientId: ctx.caller?.actor ?? 'anonymous',
      scopes: [],
      extra: { [EXTRA_KEY]: scope },
    };
    return handler.fetch(req, { authInfo });
  };
}

/** Query parameters may only narrow what the daemon serves, never widen it. */
function narrowFromUrl(
  url: string,
  opts: McpHttpHandlerOptions,
): Pick<RequestScope, 'toolsets' | 'readOnly'> {
  const q = new URL(url, 'http://localhost').searchParams;
  const ceiling = opts.toolsets;
  let toolsets = ceiling;
  const asked = q.getAll('toolsets');
  if (asked.length > 0) {
    const wanted = parseToolsets(asked);
    toolsets = ceiling ? wanted.filter((t) => ceiling.includes(t)) : wanted;
  }
  const ro = q.get('read_only');
  const readOnly = opts.readOnly === true || (ro !== null && ro !== '0' && ro !== 'false');
  return { toolsets, readOnly };
}
