import { adminTools } from './admin-tools.js';
import { askTools } from './ask-tools.js';
import { codeTools } from './code-tools.js';
import { gitTools } from './git-tools.js';
import { githubTools } from './github-tools.js';
import { ladderTools } from './ladder-tools.js';
import { Registry } from './run-tool.js';
import { keyTools } from './key-tools.js';
import { laneTools } from './lane-tools.js';
import { tokenTools } from './token-tools.js';
import type { z } from 'zod';
import { SANDBOX_TIMEOUT_MAX_MS } from '../git/sandbox.js';
import type { ToolDef } from './define-tool.js';

// Every tool zz serves, in the order they are listed to clients.
export const ALL_TOOLS: readonly ToolDef[] = [
  ...laneTools,
  ...askTools,
  ...gitTools,
  ...codeTools,
  ...ladderTools,
  ...githubTools,
  ...adminTools,
  ...keyTools,
  ...tokenTools,
];

export const registry = new Registry(ALL_TOOLS);

/** The longest any tool may run: run_in_sandbox's largest timeout_ms (30 minutes). */
export const LONGEST_TOOL_MS = SANDBOX_TIMEOUT_MAX_MS;

/** Every tool with its literal name and output schema, for callers that want typed results. */
type AnyTool =
  | (typeof laneTools)[number]
  | (typeof askTools)[number]
  | (typeof gitTools)[number]
  | (typeof codeTools)[number]
  | (typeof ladderTools)[number]
  | (typeof githubTools)[number]
  | (typeof adminTools)[number]
  | (typeof keyTools)[number]
  | (typeof tokenTools)[number];
export type ToolName = AnyTool['name'];
/** What the tool named N answers (its output schema's type). */
export type ToolOutput<N extends ToolName> = z.infer<Extract<AnyTool, { name: N }>['output']>;
