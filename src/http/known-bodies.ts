// Bodies the node adapter (server.ts) and the app (app.ts) hand each other directly, beside
// the standard Request and Response that still carry them for everyone else. Making a web
// body stream and reading it back through its reader costs ~20-30 µs a request each way on
// Node 20 (ReadableStream, its promises, undici's body mixin): measured, ~10% of the daemon's
// CPU under a write storm. The app stays a plain fetch handler: a Request or Response without
// an entry here is read the standard way (tests call app.fetch without a socket).
//
// A tool call the adapter read whole goes further (measured on Node 20, per request): its
// Request is built without a signal — undici links a given signal to one of its own through
// a WeakRef and a FinalizationRegistry, 45 µs of the 57 a Request cost, and garbage the
// collector must trace — and the answer to it is a Response without a body, whose text only
// the adapter writes (a Response made from a string builds a body stream: 43 µs, against 3.5
// without). The abort signal travels here instead, with its controller: the app ends a call
// at shutdown by aborting that controller, instead of linking a controller of its own to the
// signal (a listener added to a fresh AbortSignal cost ~10 µs a request on Node 20).

interface Adapted {
  body: Uint8Array;
  /** Aborted when the client goes away; the app may abort it too (shutdown). */
  controller: AbortController;
}

const adapted = new WeakMap<Request, Adapted>();
const responseTexts = new WeakMap<Response, string>();

/**
 * Records the whole body of a Request that the adapter read before building it, for a route
 * whose only reader is readBody(), and the signal that fires when its client goes away. The
 * Request itself has no body stream and no signal of its own that ever fires (see signalOf),
 * and its answer may be bodiless (see answersWithText).
 */
export function withReadBody(req: Request, body: Uint8Array, controller: AbortController): Request {
  adapted.set(req, { body, controller });
  return req;
}

/** The body the adapter read for this Request, if it did. */
export function readBodyOf(req: Request): Uint8Array | undefined {
  return adapted.get(req)?.body;
}

/** The signal that fires when the client of this Request goes away. */
export function signalOf(req: Request): AbortSignal {
  return adapted.get(req)?.controller.signal ?? req.signal;
}

/**
 * The controller of signalOf(req) when the adapter made it for this request alone: the app
 * may abort it to end the call (nothing else listens to it). Undefined for other Requests.
 */
export function controllerOf(req: Request): AbortController | undefined {
  return adapted.get(req)?.controller;
}

/**
 * True when only the node adapter reads the answer to this Request, and reads it with
 * textOf(): the answer may then be a Response without a body beside its text.
 */
export function answersWithText(req: Request): boolean {
  return adapted.has(req);
}

/** Records the text a Response was made from (its body stream, if any, holds the same text). */
export function withText(res: Response, text: string): Response {
  responseTexts.set(res, text);
  return res;
}

/** The text a Response was made from, when the app made it from one; its stream stays unread. */
export function textOf(res: Response): string | undefined {
  return responseTexts.get(res);
}
