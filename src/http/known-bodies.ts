// What the node adapter (server.ts) and the app (app.ts) hand each other instead of a WHATWG
// Request and Response, on the daemon's hottest path. The app stays a plain fetch handler
// (app.fetch takes a Request and answers a Response: tests call it without a socket); these
// are the cheaper shapes its node entry (app.serve) also accepts and answers with.
//
// Measured on Node 20 under the 64-client mixed load (daemon CPU profile): building an undici
// Request per call was ~4.4% of the daemon's busy time (URL parsing, method and header
// validation, a Headers copy, an AbortController it makes for every Request), the Headers the
// adapter filled for it ~0.4%, and a Response per JSON answer plus reading its headers back
// ~2%. Earlier measures, still relevant: a web body stream made and read back costs ~20-30 µs
// a request each way; a Request given a signal links it to one of its own through a WeakRef and
// a FinalizationRegistry (45 µs of the 57 a Request cost); a listener added to a fresh
// AbortSignal ~10 µs.
//
// Hazard: an AppRequest is not a Request. Whatever hands a request on to code that wants a
// real one (the dashboard's cookie login, the MCP mount, the dashboard's pages) goes through
// asRequest(), which builds it (rarely: those are not the adapter's ReadRequest routes).

/** The header lookups the app makes: `Headers.get`'s contract. */
export interface HeaderReader {
  get(name: string): string | null;
}

/** What the app reads of a request; a WHATWG Request has all of it. */
export interface AppRequest {
  readonly method: string;
  /** Absolute, as a Request's url. */
  readonly url: string;
  readonly headers: HeaderReader;
  /** Fires when the client goes away. */
  readonly signal: AbortSignal;
}

/**
 * node:http's rawHeaders (name, value, name, value…) read as `Headers.get` reads a Headers
 * filled from them by append(): names match whatever their case, and a name sent more than
 * once answers its values joined by ", " (by "; " for Cookie, as undici joins cookies).
 */
class RawHeaders implements HeaderReader {
  constructor(private readonly raw: readonly string[]) {}

  get(wanted: string): string | null {
    const name = wanted.toLowerCase();
    const raw = this.raw;
    let found: string | null = null;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const n = raw[i]!;
      if (n.length !== name.length || n.toLowerCase() !== name) continue;
      const v = raw[i + 1]!;
      found = found === null ? v : found + (name === 'cookie' ? '; ' : ', ') + v;
    }
    return found;
  }
}

/**
 * A request whose whole body the adapter read before the app ran (a small tool call: the
 * route's only reader of the body is readBody()). It has no body stream; its signal is its
 * controller's, which the app may abort too (shutdown ends a long-poll that way: nothing else
 * listens to it). Header names the app asks for are lower case (RawHeaders compares so).
 */
export class ReadRequest implements AppRequest {
  readonly headers: HeaderReader;

  constructor(
    readonly method: string,
    readonly url: string,
    private readonly rawHeaders: readonly string[],
    readonly body: Uint8Array,
    /** Aborted when the client goes away; the app may abort it too (shutdown). */
    readonly controller: AbortController,
  ) {
    this.headers = new RawHeaders(rawHeaders);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The same request as a WHATWG Request, for code that wants one. */
  toRequest(): Request {
    return new Request(this.url, {
      method: this.method,
      headers: headersOf(this.rawHeaders),
      signal: this.controller.signal,
      ...(this.method === 'GET' || this.method === 'HEAD' ? {} : { body: this.body }),
    });
  }
}

/** A Headers filled from node:http's rawHeaders; a header undici refuses is left out. */
export function headersOf(raw: readonly string[]): Headers {
  const headers = new Headers();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    try {
      headers.append(raw[i]!, raw[i + 1]!);
    } catch {
      /* a header undici refuses cannot matter to the app */
    }
  }
  return headers;
}

/** The request as a WHATWG Request (itself when it is one). */
export function asRequest(req: AppRequest): Request {
  return req instanceof ReadRequest ? req.toRequest() : (req as Request);
}

/** The body the adapter read for this request, if it did. */
export function readBodyOf(req: AppRequest): Uint8Array | undefined {
  return req instanceof ReadRequest ? req.body : undefined;
}

/**
 * The controller of req.signal when the adapter made it for this request alone: the app may
 * abort it to end the call (nothing else listens to it). Undefined for other requests.
 */
export function controllerOf(req: AppRequest): AbortController | undefined {
  return req instanceof ReadRequest ? req.controller : undefined;
}

/**
 * An answer made from a text (JSON), which the adapter writes as it is: no Response, no
 * Headers, no body stream. app.fetch turns it into a Response for its other callers.
 */
export class TextAnswer {
  constructor(
    readonly status: number,
    /** Lower-case names. */
    readonly headers: Readonly<Record<string, string>>,
    readonly text: string,
    /** Set-Cookie lines, each sent as a header of its own (a record holds one per name). */
    readonly setCookies: readonly string[] = [],
  ) {}

  toResponse(): Response {
    const headers = new Headers(this.headers);
    for (const c of this.setCookies) headers.append('set-cookie', c);
    return new Response(this.text, { status: this.status, headers });
  }
}

/** What the app answers its node entry with. */
export type Answer = Response | TextAnswer;
