// The one error type. Code deeper than the edges throws ZzError with a string code; only
// http/, mcp/ and cli/ translate codes into statuses and exit codes (tables below).
// Anything thrown that is not a ZzError is a bug and surfaces as `internal`.

export const ERROR_CODES = {
  invalid_argument: { status: 400, exit: 2 },
  unauthorized: { status: 401, exit: 3 },
  forbidden: { status: 403, exit: 3 },
  not_found: { status: 404, exit: 4 },
  method_not_allowed: { status: 405, exit: 2 },
  conflict: { status: 409, exit: 5 },
  revision_mismatch: { status: 409, exit: 5 },
  already_claimed: { status: 409, exit: 5 },
  dependency_unresolved: { status: 409, exit: 5 },
  idempotency_conflict: { status: 409, exit: 5 },
  merge_conflict: { status: 409, exit: 5 },
  dirty_worktree: { status: 409, exit: 5 },
  ref_locked: { status: 409, exit: 5 },
  payload_too_large: { status: 413, exit: 2 },
  unsupported_media_type: { status: 415, exit: 2 },
  unsupported_repository: { status: 422, exit: 6 },
  not_a_repository: { status: 422, exit: 6 },
  entity_corrupt: { status: 422, exit: 6 },
  precondition_failed: { status: 412, exit: 6 },
  local_only: { status: 400, exit: 2 },
  unavailable: { status: 503, exit: 7 },
  git_failed: { status: 500, exit: 8 },
  internal: { status: 500, exit: 1 },
} as const satisfies Record<string, { status: number; exit: number }>;

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

export const statusOf = (code: ErrorCode): number => ERROR_CODES[code].status;
export const exitCodeOf = (code: ErrorCode): number => ERROR_CODES[code].exit;
