// The HTTP front end: a fetch-style app over the tool registry (routes, tokens, Host check, the
// one error mapping) and a node:http adapter. It holds no rule of zz (runTool and core do) and
// knows neither MCP, the dashboard nor the CLI: the daemon mounts those through the app's hooks.
export {
  createApp,
  DEFAULT_MAX_BODY_BYTES,
  type App,
  type AppOptions,
  type McpHandler,
  type PageHandler,
  type SessionCaller,
  type RepoHandler,
  type TokensFor,
} from './app.js';
export {
  DEFAULT_HOST,
  DEFAULT_PORT,
  listen,
  type AppSource,
  type HttpServer,
  type ListenOptions,
} from './server.js';
