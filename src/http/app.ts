import {
  isPublicRepo,
  readableRepos,
  PersonSlots,
  sealedJsonText,
  type Caller,
  type Reader,
  type ZzRepo,
} from '../core/index.js';
import type { TokenStore } from '../core/token-store.js';
import { ERROR_CODES, knownError, ZzError } from '../errors.js';
import { personOf } from '../schema/ids.js';
import { HELD } from '../schema/limits.js';
import {
  runTool,
  toolJsonSchema,
  type Registry,
  type ToolDef,
  type ToolServices,
} from '../tools/index.js';
import { decodePositions, openEventStream } from './event-stream.js';
import { hostMatcher, originAllowed } from './host-check.js';
import {
  asRequest,
  controllerOf,
  TextAnswer,
  type Answer,
  type AppRequest,
} from './known-bodies.js';
import { isJsonContentType, parseJsonObject, readBody } from './read-json.js';

// The daemon's routes as a plain fetch handler (Request → Response), so tests call it without
// a socket and server.ts only adapts node:http. The adapter enters by serve(), which also
// takes a cheaper request (ReadRequest) and answers JSON as a TextAnswer (known-bodies.ts);
// fetch() is serve() with the answer made a Response. Every tool call goes through runTool()
// with local: false, so the scope rules and local-only refusals are the registry's, not ours.

// The hooks through which the daemon mounts other front ends on this app without http/ knowing
// them: MCP on a repository's /mcp route (authenticated here), the dashboard on every path
// outside /api and /healthz.

/** Serves a repository's route the app does not own; the app has resolved repo and caller. */
export type RepoHandler = (
  req: Request,
  ctx: { repo: ZzRepo; caller: Caller | null },
) => Promise<Response>;
/** @deprecated the MCP mount is a RepoHandler. */
export type McpHandler = RepoHandler;
/** Serves paths outside /api and /healthz (the dashboard); null means "not mine" (404). */
export type PageHandler = (req: Request) => Promise<Response | null>;
/** The dashboard's cookie login (src/web), consulted when a request has no Authorization. */
export type SessionCaller = (req: Request, repo: string) => Promise<Caller | null>;
/** The token store of a served repository: a token is honoured only by the repo that minted it. */
export type TokensFor = (repo: ZzRepo) => TokenStore;

export interface AppOptions {
  repos: ReadonlyMap<string, ZzRepo>;
  /** Each repo's own token store (a single store serves every repo: tests and one-repo apps). */
  tokens: TokensFor | TokenStore;
  registry: Registry;
  /** The bound host:port; requests naming another Host are refused. */
  host: string;
  log?: (line: string) => void;
  maxBodyBytes?: number;
  mcpHandler?: RepoHandler;
  pageHandler?: PageHandler;
  /** The actor of a request carrying a dashboard session cookie for this repo; null without one. */
  sessionCaller?: SessionCaller;
  /** Extra services for tools (e.g. search); `repos` is always filled in. */
  services?: ToolServices;
  heartbeatMs?: number;
  /**
   * Open event streams per person and repository, their agents included, and in total (default
   * HELD.streamsPerPerson and HELD.streams); past them, a 429.
   */
  maxStreamsPerPerson?: number;
  maxStreams?: number;
}

export interface App {
  fetch(req: Request): Promise<Response>;
  /** The node adapter's entry: fetch() without making a Response of a JSON answer. */
  serve(req: AppRequest): Promise<Answer>;
  readonly maxBodyBytes: number;
  /** Refuses new calls, ends event streams and resolves once no call is running. */
  close(): Promise<void>;
}

export const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;

const JSON_HEADERS = {
  'content-type': 'application/json; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
};

const NO_HEADERS: Record<string, string> = {};

/** A JSON answer; extra header names in lower case. */
export function json(
  status: number,
  body: unknown,
  headers: Record<string, string> = NO_HEADERS,
): TextAnswer {
  // Views the read caches share between calls keep their JSON text (core/json-text.ts).
  const text = sealedJsonText(body);
  const all = headers === NO_HEADERS ? JSON_HEADERS : { ...JSON_HEADERS, ...headers };
  return new TextAnswer(status, all, text);
}

const withCookies = (a: TextAnswer, setCookies: string[]): TextAnswer =>
  setCookies.length ? new TextAnswer(a.status, a.headers, a.text, setCookies) : a;

/** What a request did, for its log line. */
interface Trace {
  repo: string | null;
  tool: string | null;
  actor: string | null;
}

const INTERNAL_MESSAGE = 'internal error; the daemon log has the details';
const TOOL_NAME = /^[a-z][a-z0-9_]{0,63}$/;
const BEARER = /^Bearer +([!-~]+) *$/i;

function describeTool(t: ToolDef) {
  return {
    name: t.name,
    summary: t.summary,
    ...(t.description ? { description: t.description } : {}),
    toolset: t.toolset,
    local: !!t.local,
    public_read: !!t.publicRead,
    annotations: t.annotations,
    input_schema: toolJsonSchema(t.input, 'input'),
    output_schema: toolJsonSchema(t.output, 'output'),
  };
}

export function createApp(opts: AppOptions): App {
  const { repos, registry } = opts;
  const given = opts.tokens;
  const tokensOf: TokensFor = typeof given === 'function' ? given : () => given;
  const log = opts.log ?? (() => {});
  const maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const hostOk = hostMatcher(opts.host);
  const services: ToolServices = {
    // The token tools see the same store that authenticates the call.
    tokensFor: (key) => {
      const repo = repos.get(key);
      return repo ? tokensOf(repo) : undefined;
    },
    ...opts.services,
    repos,
  };
  const streams = new Set<() => void>();
  /** Open event streams per repository and person: one token must not hold every stream. */
  const streamsOf = new PersonSlots(
    opts.maxStreamsPerPerson ?? HELD.streamsPerPerson,
    (person, held) =>
      `${person} and their agents already have ${held} event streams open, the most one person may; close one (or share one stream between views) and retry`,
  );
  const maxStreams = opts.maxStreams ?? HELD.streams;
  let toolList: string | null = null;
  let active = 0;
  let idle: (() => void) | null = null;
  let closing = false;
  const calls = new Set<AbortController>();

  /**
   * Who a bearer token is, in whichever served repository minted it; null without an
   * Authorization header. For the routes that name no repository (the list of served ones).
   */
  const readerOf = async (req: AppRequest): Promise<Reader | null> => {
    const header = req.headers.get('authorization');
    if (header === null) return null;
    const m = BEARER.exec(header);
    if (m) {
      for (const [key, repo] of repos) {
        const found = await tokensOf(repo).verify(m[1]!);
        if (found) return { actor: found.actor, repo: key };
      }
    }
    throw new ZzError('unauthorized', 'unknown or revoked token (run `zz login` for a new one)');
  };

  /**
   * The served repositories a request may know of (core/repo-access.ts): without a token the
   * public ones alone. With `--host 0.0.0.0` the list went to anyone, private names included.
   */
  const visibleRepos = async (req: AppRequest): Promise<string[]> =>
    readableRepos(repos, await readerOf(req), services.tokensFor);

  const requireRepo = async (req: AppRequest, owner: string, name: string): Promise<ZzRepo> => {
    const key = `${owner}/${name}`;
    const repo = repos.get(key);
    if (!repo) {
      // The repositories it may see, as a hint; a bad token here still gets its 404.
      const visible = await visibleRepos(req).catch(() => readableRepos(repos, null, undefined));
      throw new ZzError(
        'not_found',
        `this server does not serve repository "${key.slice(0, 200)}"`,
        { repos: visible },
      );
    }
    return repo;
  };

  /** The caller named by the Authorization header (or a dashboard cookie); null when neither. */
  const authenticate = async (
    req: AppRequest,
    repo: ZzRepo,
    trace: Trace,
  ): Promise<Caller | null> => {
    const header = req.headers.get('authorization');
    if (header === null) {
      if (!opts.sessionCaller) return null;
      const caller = (await opts.sessionCaller(asRequest(req), repo.key)) ?? null;
      if (caller) trace.actor = caller.actor;
      return caller;
    }
    const m = BEARER.exec(header);
    if (!m)
      throw new ZzError(
        'unauthorized',
        'malformed Authorization header; expected "Bearer <token>"',
      );
    const found = await tokensOf(repo).verify(m[1]!);
    if (!found)
      throw new ZzError('unauthorized', 'unknown or revoked token (run `zz login` for a new one)');
    trace.actor = found.actor;
    return { actor: found.actor };
  };

  const track = async <T>(f: () => Promise<T>): Promise<T> => {
    active++;
    try {
      return await f();
    } finally {
      if (--active === 0 && idle) idle();
    }
  };

  async function callTool(
    req: AppRequest,
    repo: ZzRepo,
    name: string,
    trace: Trace,
  ): Promise<Answer> {
    if (!TOOL_NAME.test(name)) throw new ZzError('not_found', 'unknown tool');
    const tool = registry.require(name);
    trace.tool = name;
    const caller = await authenticate(req, repo, trace);
    // Refuse before reading a body nobody may send (runTool checks again, with the config).
    if (!caller && !tool.publicRead && !tool.local) {
      throw new ZzError('unauthorized', `${tool.name} needs a bearer token (run \`zz login\`)`);
    }
    const type = req.headers.get('content-type');
    if (type !== null && !isJsonContentType(type)) {
      throw new ZzError(
        'unsupported_media_type',
        `Content-Type must be application/json, not "${type.slice(0, 100)}"`,
      );
    }
    const args = parseJsonObject(await readBody(req, maxBodyBytes));
    // Shutdown ends long-polls (lane_events) early instead of waiting out their wait_ms: by
    // aborting the adapter's controller of this request when there is one (known-bodies.ts),
    // else one of ours that the request's signal aborts too.
    // (Not AbortSignal.any: on Node 20 it keeps every request's signal alive.)
    let call = controllerOf(req);
    let unlink = () => {};
    if (!call) {
      const own = (call = new AbortController());
      const abort = () => own.abort();
      const signal = req.signal;
      signal.addEventListener('abort', abort, { once: true });
      unlink = () => signal.removeEventListener('abort', abort);
    }
    calls.add(call);
    // A call still reading its body when close() ran was not in `calls` yet: end it too.
    if (closing) call.abort();
    try {
      const ended = call;
      const result = await runTool(tool, args, {
        repo,
        caller,
        local: false,
        // Made when a tool asks for it (only lane_events does): an AbortSignal per call was
        // one of the larger allocations per request.
        get signal() {
          return ended.signal;
        },
        services,
      });
      return json(200, { result });
    } finally {
      calls.delete(call);
      unlink();
    }
  }

  async function events(req: AppRequest, url: URL, repo: ZzRepo, trace: Trace): Promise<Response> {
    const caller = await authenticate(req, repo, trace);
    if (!caller)
      throw new ZzError('unauthorized', 'the event stream needs a bearer token (run `zz login`)');
    const cursor = req.headers.get('last-event-id') ?? url.searchParams.get('cursor');
    if (cursor !== null) decodePositions(cursor);
    const release = streamsOf.take(repo.key, personOf(caller.actor));
    if (streams.size >= maxStreams) {
      release();
      throw new ZzError(
        'too_many_requests',
        `this daemon already serves ${streams.size} event streams, the most it keeps open; retry later`,
      );
    }
    const stream = openEventStream(repo, caller, {
      cursor,
      heartbeatMs: opts.heartbeatMs ?? 15_000,
      onError: (e) => log(`${new Date().toISOString()} events ${repo.key}: ${stackOf(e)}`),
      onClose: () => {
        streams.delete(stream.close);
        release();
      },
      // Revoking a token (or the dashboard session it opened) ends its open streams too.
      stillAuthorized: () =>
        authenticate(req, repo, { repo: null, tool: null, actor: null }).then(
          (c) => c !== null,
          () => false,
        ),
    });
    streams.add(stream.close);
    req.signal.addEventListener('abort', stream.close, { once: true });
    return new Response(stream.body, {
      status: 200,
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-accel-buffering': 'no',
        'x-content-type-options': 'nosniff',
      },
    });
  }

  async function route(req: AppRequest, trace: Trace): Promise<Answer> {
    const url = new URL(req.url);
    const parts = url.pathname.split('/').slice(1);
    const method = req.method;
    const only = (allowed: string) => {
      if (method !== allowed) {
        throw new ZzError('method_not_allowed', `${method} is not allowed here; use ${allowed}`, {
          allow: [allowed],
        });
      }
    };
    if (url.pathname === '/healthz') {
      only('GET');
      return json(200, { ok: true, repos: repos.size, pid: process.pid });
    }
    if (url.pathname === '/api/tools') {
      only('GET');
      toolList ??= JSON.stringify({ tools: registry.tools.map(describeTool) });
      return new TextAnswer(200, JSON_HEADERS, toolList);
    }
    if (url.pathname === '/api/repos') {
      only('GET');
      return json(200, {
        repos: (await visibleRepos(req)).map((key) => ({ repo: key, path: `/api/repos/${key}` })),
      });
    }
    if (parts[0] === 'api' && parts[1] === 'repos' && parts.length >= 5) {
      const [, , owner, name, what, tool] = parts;
      if (what === 'tools' && parts.length === 6) {
        only('POST');
        const repo = await requireRepo(req, owner!, name!);
        trace.repo = repo.key;
        return callTool(req, repo, tool!, trace);
      }
      if (what === 'events' && parts.length === 5) {
        only('GET');
        const repo = await requireRepo(req, owner!, name!);
        trace.repo = repo.key;
        trace.tool = 'events';
        return events(req, url, repo, trace);
      }
      if (what === 'mcp' && parts.length === 5 && opts.mcpHandler) {
        const repo = await requireRepo(req, owner!, name!);
        trace.repo = repo.key;
        trace.tool = 'mcp';
        const caller = await authenticate(req, repo, trace);
        // Without a token a private repository offers nothing, not even tools/list: a 401
        // with WWW-Authenticate makes MCP clients ask for a token rather than show no tools.
        if (!caller && !(await isPublicRepo(repo))) {
          throw new ZzError(
            'unauthorized',
            'MCP on this repository needs a bearer token (run `zz login` or `zz agent create`)',
          );
        }
        // The body is read here, under the same limit as a tool call's: the SDK reads a
        // stream that fails past the limit as "could not be read" (a 400), so a chunked body
        // too large was never a 413 (issue 11.10).
        const whole = asRequest(req);
        const mcpReq =
          req.method === 'POST'
            ? new Request(req.url, {
                method: 'POST',
                headers: whole.headers,
                body: await readBody(req, maxBodyBytes),
                signal: req.signal,
              })
            : whole;
        return opts.mcpHandler(mcpReq, { repo, caller });
      }
    }
    if (parts[0] !== 'api' && opts.pageHandler) {
      const page = await opts.pageHandler(asRequest(req));
      if (page) return page;
    }
    throw new ZzError('not_found', `no route for ${method} ${url.pathname.slice(0, 200)}`);
  }

  function errorResponse(thrown: unknown, trace: Trace): TextAnswer {
    // A full disk or a read-only repository is named (507/503 with the path), not a 500.
    const where = trace.repo ? repos.get(trace.repo)?.git?.gitdir : undefined;
    const e = knownError(thrown, where) ?? thrown;
    if (e instanceof ZzError && (e.code === 'read_only' || e.code === 'insufficient_storage')) {
      log(
        `${new Date().toISOString()} ${e.code} ${trace.repo ?? '-'} ${trace.tool ?? '-'}: ${e.message}`,
      );
    }
    if (e instanceof ZzError) {
      const status = ERROR_CODES[e.code].status;
      if (status === 500) {
        // internal, git_failed: the message may quote paths or git's stderr; the log has it all.
        log(
          `${new Date().toISOString()} error ${trace.repo ?? '-'} ${trace.tool ?? '-'}: ${stackOf(e)}`,
        );
        return json(status, { error: INTERNAL_MESSAGE, code: e.code });
      }
      const headers: Record<string, string> = {};
      if (e.code === 'unauthorized') headers['www-authenticate'] = 'Bearer realm="zz"';
      if (e.code === 'method_not_allowed') {
        headers.allow = ((e.details as { allow?: string[] } | undefined)?.allow ?? []).join(', ');
      }
      if (e.code === 'payload_too_large') headers.connection = 'close';
      const body: Record<string, unknown> = { error: e.message, code: e.code };
      if (e.details !== undefined && e.code !== 'method_not_allowed') body.details = e.details;
      // A refusal may expire cookies (web/dashboard.ts: two session cookies in one request).
      const cookies = (e as { setCookies?: unknown }).setCookies;
      const setCookies = Array.isArray(cookies) ? cookies.map(String) : [];
      try {
        return withCookies(json(status, body, headers), setCookies);
      } catch {
        return withCookies(json(status, { error: e.message, code: e.code }, headers), setCookies);
      }
    }
    log(
      `${new Date().toISOString()} error ${trace.repo ?? '-'} ${trace.tool ?? '-'}: ${stackOf(e)}`,
    );
    return json(500, { error: INTERNAL_MESSAGE, code: 'internal' });
  }

  async function serve(req: AppRequest): Promise<Answer> {
    const started = performance.now();
    const trace: Trace = { repo: null, tool: null, actor: null };
    let res: Answer;
    try {
      const host = req.headers.get('host') ?? new URL(req.url).host;
      if (!hostOk(host)) {
        throw new ZzError(
          'forbidden',
          `Host "${host.slice(0, 100)}" is not this server (DNS rebinding protection); use ${opts.host}`,
        );
      }
      if (!originAllowed(req.headers.get('origin'), hostOk)) {
        throw new ZzError('forbidden', 'cross-origin requests are not accepted');
      }
      if (closing) throw new ZzError('unavailable', 'the daemon is shutting down');
      res = await track(() => route(req, trace));
    } catch (e) {
      res = errorResponse(e, trace);
    }
    const ms = (performance.now() - started).toFixed(1);
    const what = trace.tool ?? `${req.method} ${pathForLog(req.url)}`;
    log(
      `${new Date().toISOString()} ${trace.repo ?? '-'} ${what} ${trace.actor ?? '-'} ${res.status} ${ms}ms`,
    );
    return res;
  }

  async function close(): Promise<void> {
    closing = true;
    for (const call of calls) call.abort();
    for (const end of streams) end();
    streams.clear();
    if (active > 0) await new Promise<void>((r) => (idle = r));
  }

  const fetch = async (req: Request): Promise<Response> => {
    const answer = await serve(req);
    return answer instanceof TextAnswer ? answer.toResponse() : answer;
  };

  return { fetch, serve, maxBodyBytes, close };
}

function stackOf(e: unknown): string {
  if (e instanceof Error) {
    const cause =
      e.cause instanceof Error ? `\n  caused by: ${e.cause.stack ?? e.cause.message}` : '';
    return `${e.stack ?? e.message}${cause}`;
  }
  return String(e);
}

/** A request path safe for a log line: no query, no control characters, nothing token-like. */
function pathForLog(raw: string): string {
  let path: string;
  try {
    path = new URL(raw).pathname;
  } catch {
    path = '?';
  }
  return path
    .slice(0, 120)
    .replace(/[^\x21-\x7e]/g, '?')
    .replace(/zzt_[A-Za-z0-9_-]*/g, 'zzt_…');
}
