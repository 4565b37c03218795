import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { INVISIBLE_CLASS, UNSAFE_CLASS } from '../schema/control-chars.js';

// The dashboard's files. Our own (src/web/assets, copied next to the compiled module by the
// build) and the vendored preact/htm ES modules, resolved from node_modules at start-up — they
// are runtime dependencies, so an installed package has them; nothing comes from a CDN. The
// browser finds `preact` by an import map in the page, allowed by a hash in the CSP.

const ASSETS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'assets');

// Modules the daemon writes from its own definitions, so that the page uses the same set as
// the CLI rather than a copy kept by hand: the characters shown as marks, never as themselves.
const GENERATED: Record<string, string> = {
  'control-chars.js':
    '// Served by the daemon from src/schema/control-chars.ts: the characters the CLI neutralises.\n' +
    `export const UNSAFE_CLASS = ${JSON.stringify(UNSAFE_CLASS)};\n` +
    `export const INVISIBLE_CLASS = ${JSON.stringify(INVISIBLE_CLASS)};\n`,
};

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

function vendorFiles(): Record<string, string> {
  const require = createRequire(import.meta.url);
  // htm's "require" entry is CommonJS; its ES module sits beside it.
  const htmDir = dirname(require.resolve('htm'));
  return {
    'preact.mjs': require.resolve('preact'),
    'hooks.mjs': require.resolve('preact/hooks'),
    'htm.mjs': join(htmDir, 'htm.mjs'),
  };
}

const IMPORT_MAP = JSON.stringify({
  imports: {
    preact: '/assets/vendor/preact.mjs',
    'preact/hooks': '/assets/vendor/hooks.mjs',
    htm: '/assets/vendor/htm.mjs',
  },
});
const IMPORT_MAP_HASH = createHash('sha256').update(IMPORT_MAP).digest('base64');

export const PAGE_CSP = [
  "default-src 'none'",
  `script-src 'self' 'sha256-${IMPORT_MAP_HASH}'`,
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>zz dashboard</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/style.css">
<script type="importmap">${IMPORT_MAP}</script>
<script type="module" src="/assets/app.js"></script>
</head>
<body><div id="app"><p class="boot">Loading the zz dashboard…</p></div></body>
</html>
`;

export function pageResponse(): Response {
  return new Response(PAGE_HTML, {
    status: 200,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'content-security-policy': PAGE_CSP,
      ...SECURITY_HEADERS,
    },
  });
}

const ASSET_NAME = /^[a-z][a-z0-9-]{0,40}\.(js|css|svg)$/;

export class Assets {
  private readonly vendor = vendorFiles();
  private readonly cache = new Map<string, Buffer>();

  /** The file for /assets/<rest>, or null when there is none (names are whitelisted). */
  async get(rest: string): Promise<Response | null> {
    // Own keys only: /assets/constructor or /assets/vendor/__proto__ must not find what every
    // object inherits (it was an unauthenticated 500).
    if (Object.hasOwn(GENERATED, rest)) return asset(Buffer.from(GENERATED[rest]!, 'utf8'), '.js');
    let file: string | undefined;
    const vendorName = rest.startsWith('vendor/') ? rest.slice('vendor/'.length) : null;
    if (vendorName !== null) {
      file = Object.hasOwn(this.vendor, vendorName) ? this.vendor[vendorName] : undefined;
    } else if (ASSET_NAME.test(rest)) file = join(ASSETS_DIR, rest);
    if (!file) return null;
    let body = this.cache.get(file);
    if (!body) {
      try {
        body = await fsp.readFile(file);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw e;
      }
      this.cache.set(file, body);
    }
    return asset(body, file.slice(file.lastIndexOf('.')));
  }
}

function asset(body: Buffer, ext: string): Response {
  return new Response(new Uint8Array(body), {
    status: 200,
    headers: {
      'content-type': TYPES[ext] ?? 'application/octet-stream',
      // Revalidated on each load: the daemon may have been upgraded under the page.
      'cache-control': 'no-cache',
      ...SECURITY_HEADERS,
    },
  });
}
