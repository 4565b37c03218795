import { isIP } from 'node:net';

// DNS rebinding protection: a web page can point its own hostname at 127.0.0.1, but the
// browser still sends that hostname in Host (and its origin in Origin). Only requests that
// name this server are served.

function split(hostPort: string): { hostname: string; port: string } {
  const h = hostPort.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    const port = h.slice(end + 1).startsWith(':') ? h.slice(end + 2) : '';
    return { hostname: h.slice(1, end), port };
  }
  const colon = h.lastIndexOf(':');
  if (colon >= 0 && h.indexOf(':') === colon)
    return { hostname: h.slice(0, colon), port: h.slice(colon + 1) };
  return { hostname: h, port: '' };
}

/** Whether a host name or address literal names this machine's loopback interface. */
export const isLoopback = (hostname: string): boolean =>
  hostname === 'localhost' || hostname === '::1' || /^127\.\d+\.\d+\.\d+$/.test(hostname);

const WILDCARD = new Set(['0.0.0.0', '::', '']);

/** A predicate over Host header values for a server bound to `bound` (host:port). */
export function hostMatcher(bound: string): (host: string | null) => boolean {
  const b = split(bound);
  const wildcard = WILDCARD.has(b.hostname);
  const names = new Set([b.hostname]);
  if (isLoopback(b.hostname) || wildcard)
    for (const n of ['127.0.0.1', 'localhost', '::1']) names.add(n);
  return (host) => {
    if (!host) return false;
    const h = split(host);
    const portOk = h.port === b.port || (h.port === '' && b.port === '80');
    if (!portOk) return false;
    if (names.has(h.hostname)) return true;
    // Bound to every interface: any address literal is fine (rebinding needs a name).
    return wildcard && isIP(h.hostname) !== 0;
  };
}

/** An Origin header is acceptable when absent or naming this server. */
export function originAllowed(
  origin: string | null,
  hostOk: (host: string | null) => boolean,
): boolean {
  if (origin === null) return true;
  try {
    const u = new URL(origin);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return false;
    return hostOk(u.port ? u.host : `${u.host}:${u.protocol === 'http:' ? '80' : '443'}`);
  } catch {
    return false;
  }
}
