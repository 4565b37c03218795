// MCP front end: the tool registry served over stdio (`zz mcp`) and stateless Streamable HTTP,
// with the official SDK. It knows tools and transports only: no rule of zz lives here, and it
// must not know about HTTP routing, tokens or the CLI.
export * from './http-handler.js';
export * from './mcp-server.js';
export * from './roles.js';
export * from './stdio.js';
