// The one error type. Code deeper than the edges throws ZzError with a string code; only
// http/, mcp/ and cli/ translate codes into statuses and exit codes (tables below).
// Anything thrown that is not a ZzError is a bug and surfaces as `internal`.

/**
 * Every error code: its HTTP status, its CLI exit code, and who an MCP client's model should
 * think it is for — `fixable`: the caller can act on it (message and a next step go back);
 * `shown`: about the environment, shown as is; `internal`: a bug, the model gets a generic line.
 */
export const ERROR_CODES = {
  invalid_argument: { status: 400, exit: 2, mcp: 'fixable' },
  unauthorized: { status: 401, exit: 3, mcp: 'fixable' },
  forbidden: { status: 403, exit: 3, mcp: 'fixable' },
  not_found: { status: 404, exit: 4, mcp: 'fixable' },
  method_not_allowed: { status: 405, exit: 2, mcp: 'shown' },
  conflict: { status: 409, exit: 5, mcp: 'fixable' },
  revision_mismatch: { status: 409, exit: 5, mcp: 'fixable' },
  already_claimed: { status: 409, exit: 5, mcp: 'fixable' },
  dependency_unresolved: { status: 409, exit: 5, mcp: 'fixable' },
  idempotency_conflict: { status: 409, exit: 5, mcp: 'fixable' },
  merge_conflict: { status: 409, exit: 5, mcp: 'fixable' },
  dirty_worktree: { status: 409, exit: 5, mcp: 'fixable' },
  ref_locked: { status: 409, exit: 5, mcp: 'fixable' },
  payload_too_large: { status: 413, exit: 2, mcp: 'fixable' },
  unsupported_media_type: { status: 415, exit: 2, mcp: 'shown' },
  unsupported_repository: { status: 422, exit: 6, mcp: 'shown' },
  not_a_repository: { status: 422, exit: 6, mcp: 'shown' },
  precondition_failed: { status: 412, exit: 6, mcp: 'fixable' },
  local_only: { status: 400, exit: 2, mcp: 'fixable' },
  unavailable: { status: 503, exit: 7, mcp: 'shown' },
  /** The repository (or a local zz file) cannot be written: read-only file system or no permission. */
  read_only: { status: 503, exit: 7, mcp: 'shown' },
  /** The disk (or the user's quota) is full. */
  insufficient_storage: { status: 507, exit: 7, mcp: 'shown' },
  git_failed: { status: 500, exit: 8, mcp: 'internal' },
  internal: { status: 500, exit: 1, mcp: 'internal' },
} as const satisfies Record<
  string,
  { status: number; exit: number; mcp: 'fixable' | 'shown' | 'internal' }
>;

export type ErrorCode = keyof typeof ERROR_CODES;

export class ZzError extends Error {
  readonly code: ErrorCode;
  readonly details: unknown;

  constructor(code: ErrorCode, message: string, details?: unknown, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ZzError';
    this.code = code;
    this.details = details;
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }

  get exitCode(): number {
    return ERROR_CODES[this.code].exit;
  }
}

export function isZzError(e: unknown): e is ZzError {
  return e instanceof ZzError;
}

/** Wraps a foreign throw as `internal`, keeping the cause for the log (never for the client). */
export function toZzError(e: unknown): ZzError {
  if (e instanceof ZzError) return e;
  return new ZzError('internal', 'internal error', undefined, { cause: e });
}

/** Who an MCP client's model should think an error is for (see ERROR_CODES). */
export const mcpAudienceOf = (code: ErrorCode): 'fixable' | 'shown' | 'internal' =>
  ERROR_CODES[code].mcp;

const DISK_FULL = new Set(['ENOSPC', 'EDQUOT']);
const NOT_WRITABLE = new Set(['EROFS', 'EACCES', 'EPERM']);

/** A system error's code (ENOSPC, EROFS, …) from a thrown error or its cause chain. */
export function systemErrorCode(e: unknown): string | null {
  for (let cur = e, depth = 0; cur && depth < 5; depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return null;
}

/**
 * Names a machine fault: a full disk → `insufficient_storage`, a read-only file system or a
 * permission refusal → `read_only`, each with the path. Anything else is returned unchanged
 * (a ZzError stays itself; a foreign error stays foreign, i.e. a bug).
 */
export function fromSystemError(e: unknown, path: string): unknown {
  if (e instanceof ZzError && e.code !== 'internal' && e.code !== 'git_failed') return e;
  const code = systemErrorCode(e);
  if (code && DISK_FULL.has(code)) {
    return new ZzError(
      'insufficient_storage',
      `no space left on the device holding ${path} (${code}); free some space and retry`,
      { path, errno: code },
      { cause: e },
    );
  }
  if (code && NOT_WRITABLE.has(code)) {
    return new ZzError(
      'read_only',
      `${path} cannot be written (${code}: ${code === 'EROFS' ? 'read-only file system' : 'permission denied'})`,
      { path, errno: code },
      { cause: e },
    );
  }
  return e;
}

export const statusOf = (code: ErrorCode): number => ERROR_CODES[code].status;
export const exitCodeOf = (code: ErrorCode): number => ERROR_CODES[code].exit;
