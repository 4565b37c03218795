import type { RepoHandler } from '../http/index.js';
import type { Registry, ToolServices } from '../tools/index.js';

// Mounts the MCP front end on the HTTP app's /api/repos/<o>/<r>/mcp hook. The SDK is large and
// most daemons never serve MCP, so it is loaded on the first MCP request (and again after a
// failed load).

export function lazyMcpHandler(opts: {
  registry: Registry;
  services: ToolServices;
  maxBodyBytes?: number;
  log: (line: string) => void;
}): RepoHandler {
  let loaded: Promise<RepoHandler> | null = null;
  const load = async (): Promise<RepoHandler> => {
    const { createMcpHttpHandler } = await import('../mcp/index.js');
    return createMcpHttpHandler({
      registry: opts.registry,
      services: opts.services,
      ...(opts.maxBodyBytes ? { maxRequestBodySize: opts.maxBodyBytes } : {}),
      onError: (e, tool) => opts.log(`mcp ${tool}: ${(e as Error).stack ?? String(e)}`),
    });
  };
  return async (req, ctx) => {
    loaded ??= load().catch((e: unknown) => {
      loaded = null;
      throw e;
    });
    return (await loaded)(req, ctx);
  };
}
