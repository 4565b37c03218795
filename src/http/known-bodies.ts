// Bodies the node adapter (server.ts) and the app (app.ts) hand each other directly, beside
// the standard Request and Response that still carry them for everyone else. Making a web
// body stream and reading it back through its reader costs ~20-30 µs a request each way on
// Node 20 (ReadableStream, its promises, undici's body mixin): measured, ~10% of the daemon's
// CPU under a write storm. The app stays a plain fetch handler: a Request or Response without
// an entry here is read the standard way (tests call app.fetch without a socket).

const requestBodies = new WeakMap<Request, Uint8Array>();
const responseTexts = new WeakMap<Response, string>();

/**
 * Records the whole body of a Request that the adapter read before building it, for a route
 * whose only reader is readBody(). The Request itself has no body stream.
 */
export function withReadBody(req: Request, body: Uint8Array): Request {
  requestBodies.set(req, body);
  return req;
}

/** The body the adapter read for this Request, if it did. */
export function readBodyOf(req: Request): Uint8Array | undefined {
  return requestBodies.get(req);
}

/** Records the text a Response was made from (its body stream holds the same text). */
export function withText(res: Response, text: string): Response {
  responseTexts.set(res, text);
  return res;
}

/** The text a Response was made from, when the app made it from one; its stream stays unread. */
export function textOf(res: Response): string | undefined {
  return responseTexts.get(res);
}
