import { readFileSync } from 'node:fs';
import type { ToolOption } from './tool-args.js';

// The tool commands as plain data: each tool's command path, summary and flags. The build
// writes it to dist/cli/tool-manifest.json (scripts/gen-manifest.mjs, from toolManifest()
// below), so that the command table — `zz --help`, `zz lane --help`, the tool commands' flags —
// and the fast path to a daemon are built without loading the tool registry: its zod schemas,
// core and git cost ~0.5 s of CPU, more than most commands. Run from src/ (the tests), there is
// no JSON beside this file and the registry is loaded instead: the same data either way, so the
// help reads the same (test/cli/tool-manifest.test.ts compares the two).

export interface ManifestTool {
  name: string;
  group: string;
  sub: string;
  summary: string;
  /** Runs in the CLI's own process even when a daemon serves the checkout (run_in_sandbox). */
  local: boolean;
  /** Whether a call whose answer was lost may be sent again (resendOf). */
  resend: Resend;
  options: ToolOption[];
}

/**
 * Whether a call that may have reached the daemon, its answer lost, may be sent again:
 * `safe`, a read or a write that is idempotent by nature (a second grant changes nothing);
 * `keyed`, only with the idempotency_key of the first attempt, which the daemon answers with
 * the first attempt's result instead of acting twice (an Ask posted twice is two Asks);
 * `never`, the tool takes no key and acting twice is not the same as once (token_revoke: the
 * second says the token does not exist): the caller is told it may have been applied.
 */
export type Resend = 'safe' | 'keyed' | 'never';

export function resendOf(t: {
  annotations: { readOnlyHint: boolean; idempotentHint: boolean };
  input: { shape: object };
}): Resend {
  if (t.annotations.readOnlyHint) return 'safe';
  if ('idempotency_key' in t.input.shape) return 'keyed';
  return t.annotations.idempotentHint ? 'safe' : 'never';
}

/** dist/cli/tool-manifest.json as the build wrote it; null when absent or unreadable. */
export function readToolManifest(): ManifestTool[] | null {
  try {
    const raw = readFileSync(new URL('./tool-manifest.json', import.meta.url), 'utf8');
    return (JSON.parse(raw) as { tools: ManifestTool[] }).tools;
  } catch {
    return null;
  }
}

/** The manifest: the built JSON, else derived from the registry (zod, core: slow). */
export async function loadToolManifest(): Promise<ManifestTool[]> {
  return readToolManifest() ?? (await toolManifest());
}

/** Derives the manifest from the tool registry, in registry order. */
export async function toolManifest(): Promise<ManifestTool[]> {
  const [{ ALL_TOOLS }, { toolOptions }, { commandPath }] = await Promise.all([
    import('../tools/registry.js'),
    import('./tool-options.js'),
    import('./tool-args.js'),
  ]);
  return ALL_TOOLS.map((t) => {
    const [group, sub] = commandPath(t.name);
    return {
      name: t.name,
      group,
      sub,
      summary: t.summary,
      local: !!t.local,
      resend: resendOf(t),
      options: toolOptions(t),
    };
  });
}
