// The HTTP daemon: a fetch-style app over the tool registry (routes, tokens, Host check, error
// mapping), a node:http adapter and `zz serve`'s lifecycle. It holds no rule of zz (runTool and
// core do) and knows nothing of the CLI.
export {
  createApp,
  DEFAULT_MAX_BODY_BYTES,
  type App,
  type AppOptions,
  type McpHandler,
  type WebFrontEnd,
} from './app.js';
export {
  defaultReposFile,
  readDaemonInfo,
  startDaemon,
  type Daemon,
  type DaemonInfo,
  type DaemonOptions,
  type WebDeps,
} from './daemon.js';
export {
  DEFAULT_HOST,
  DEFAULT_PORT,
  listen,
  type AppSource,
  type HttpServer,
  type ListenOptions,
} from './server.js';
