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
  /** The request line and headers are past the server's limit (http/server.ts). */
  headers_too_large: { status: 431, exit: 2, mcp: 'fixable' },
  unsupported_media_type: { status: 415, exit: 2, mcp: 'shown' },
  unsupported_repository: { status: 422, exit: 6, mcp: 'shown' },
  not_a_repository: { status: 422, exit: 6, mcp: 'shown' },
  /** An entity on refs/zz/* that cannot be read (a malformed op, a ref at a blob, a copied ref). */
  entity_corrupt: { status: 422, exit: 6, mcp: 'shown' },
  precondition_failed: { status: 412, exit: 6, mcp: 'fixable' },
  /** A change git itself would refuse to carry (git fsck: a .gitmodules url or path like "-x"). */
  unsafe_content: { status: 422, exit: 2, mcp: 'fixable' },
  local_only: { status: 400, exit: 2, mcp: 'fixable' },
  unavailable: { status: 503, exit: 7, mcp: 'shown' },
  /** A per-caller or daemon-wide bound is reached (open event streams, dashboard sessions). */
  too_many_requests: { status: 429, exit: 7, mcp: 'shown' },
  /** The repository (or a local zz file) cannot be written: read-only file system or no permission. */
  read_only: { status: 503, exit: 7, mcp: 'shown' },
  /** The disk (or the user's quota) is full. */
  insufficient_storage: { status: 507, exit: 7, mcp: 'shown' },
  git_failed: { status: 500, exit: 8, mcp: 'internal' },
  /**
   * `zz work` stopped because its Lane is closed (no new work; lane-closed.ts). Only the CLI
   * throws it, for an exit status of its own: the daemon's refusals on a closed Lane stay
   * `conflict` with `lane_closed` in their details, as clients already read them.
   */
  lane_closed: { status: 409, exit: 9, mcp: 'shown' },
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

/** Wraps a foreign throw as `internal`, keeping the cause for the log (never for the client);
 * a machine fault anywhere in the cause chain is named instead (see fromSystemError). */
export function toZzError(e: unknown, where?: string): ZzError {
  const known = knownError(e, where);
  return known ?? new ZzError('internal', 'internal error', undefined, { cause: e });
}

/** The ZzError to report — a named machine fault found anywhere in the cause chain, else the
 * ZzError itself — or null for a foreign throw (a bug). `where` is the path to name when the
 * fault does not carry one. */
export function knownError(e: unknown, where?: string): ZzError | null {
  const fault = fromSystemError(e, where);
  if (fault instanceof ZzError && fault.code !== 'internal' && fault.code !== 'git_failed')
    return fault;
  return e instanceof ZzError ? e : null;
}

/** Who an MCP client's model should think an error is for (see ERROR_CODES). */
export const mcpAudienceOf = (code: ErrorCode): 'fixable' | 'shown' | 'internal' =>
  ERROR_CODES[code].mcp;

const DISK_FULL = new Set(['ENOSPC', 'EDQUOT']);
const NOT_WRITABLE = new Set(['EROFS', 'EACCES', 'EPERM']);
// The C library's words for the same faults, as a child process (git) prints them on stderr.
const STRERROR: ReadonlyArray<[RegExp, string]> = [
  [/No space left on device/i, 'ENOSPC'],
  [/Disk quota exceeded/i, 'EDQUOT'],
  [/Read-only file system/i, 'EROFS'],
  [/Permission denied/i, 'EACCES'],
];

/** The fault's system code (ENOSPC, EROFS, …) and path, from the error or its cause chain. */
export function systemFault(e: unknown): { code: string; path: string | null } | null {
  for (let cur = e, depth = 0; cur && typeof cur === 'object' && depth < 5; depth++) {
    const { code, path, message, details } = cur as {
      code?: unknown;
      path?: unknown;
      message?: unknown;
      details?: unknown;
    };
    const p = typeof path === 'string' ? path : null;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return { code, path: p };
    if (cur instanceof ZzError && (code === 'git_failed' || code === 'internal')) {
      const text = `${String(message)}\n${String((details as { stderr?: unknown } | null)?.stderr ?? '')}`;
      for (const [re, sys] of STRERROR) {
        // git names the file it could not write in quotes: '/repo/.git/refs/….lock'.
        if (re.test(text))
          return { code: sys, path: /'(\/[^'\n]{1,4096})'/.exec(text)?.[1] ?? null };
      }
    }
    cur = (cur as { cause?: unknown }).cause;
  }
  return null;
}

/**
 * Names a machine fault: a full disk → `insufficient_storage`, a read-only file system or a
 * permission refusal → `read_only`, a file where a folder must be (or the reverse) →
 * `precondition_failed`, each with the path. Anything else is returned unchanged
 * (a ZzError stays itself; a foreign error stays foreign, i.e. a bug).
 */
export function fromSystemError(e: unknown, where?: string): unknown {
  if (e instanceof ZzError && e.code !== 'internal' && e.code !== 'git_failed') return e;
  const fault = systemFault(e);
  if (!fault) return e;
  const path = fault.path ?? where ?? 'the repository';
  if (DISK_FULL.has(fault.code)) {
    return new ZzError(
      'insufficient_storage',
      `no space left on the device holding ${path} (${fault.code}); free some space and retry`,
      { path, errno: fault.code },
      { cause: e },
    );
  }
  if (NOT_WRITABLE.has(fault.code)) {
    const why = fault.code === 'EROFS' ? 'read-only file system' : 'permission denied';
    return new ZzError(
      'read_only',
      `${path} cannot be written (${fault.code}: ${why})`,
      { path, errno: fault.code },
      { cause: e },
    );
  }
  if (fault.code === 'ENOTDIR' || fault.code === 'EISDIR') {
    // A path that cannot be what it must be (XDG_CONFIG_HOME naming a file, say): the machine's
    // setup, which the person can fix, not a bug in zz.
    const what =
      fault.code === 'ENOTDIR' ? 'a part of it is a file, not a folder' : 'it is a folder';
    return new ZzError(
      'precondition_failed',
      `${path} cannot be used: ${what} (${fault.code}); check that path (and HOME, XDG_CONFIG_HOME)`,
      { path, errno: fault.code },
      { cause: e },
    );
  }
  return e;
}

export const statusOf = (code: ErrorCode): number => ERROR_CODES[code].status;
export const exitCodeOf = (code: ErrorCode): number => ERROR_CODES[code].exit;
