// The tool registry: one definition per tool (schemas, scope, annotations, handler) and the
// one runTool() path. Front ends loop over it; it must not know about HTTP, MCP or yargs.
export * from './define-tool.js';
export * from './registry.js';
export * from './run-tool.js';
export * from './json-schema.js';
