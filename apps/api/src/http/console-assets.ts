import { readFile, stat } from 'node:fs/promises';
import { extname, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Hono } from 'hono';
import type { AppEnv } from './app-env';

/** Where `npm run build -w @vouch/console` puts the console (this repository's layout). */
export const DEFAULT_CONSOLE_DIR = fileURLToPath(new URL('../../../console/dist', import.meta.url));

/**
 * The console runs only its own bundled script and style: no inline script, no eval, no
 * other origin, not framable. It talks to this server alone (`connect-src 'self'`).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
};

async function fileIn(dir: string, relative: string): Promise<string | null> {
  const path = resolve(dir, relative);
  // Only files under the console's directory, whatever the path says (`..`, encoded or not).
  if (path !== dir && !path.startsWith(dir + sep)) return null;
  const info = await stat(path).catch(() => null);
  return info?.isFile() ? path : null;
}

/**
 * `GET /ui/*`: the built console. An asset path serves that file; any other path under
 * `/ui/` serves `index.html` (the console routes in the browser). Without a build it answers
 * 503 `NOT_CONFIGURED`-style text saying how to build it.
 */
export function registerConsoleAssets(app: Hono<AppEnv>, options: { dir: string }): void {
  const dir = resolve(options.dir);
  app.get('/ui', (c) => c.redirect('/ui/', 308));
  app.get('/ui/*', async (c) => {
    const relative = decodeURIComponent(new URL(c.req.url).pathname.slice('/ui/'.length));
    const asset = relative.startsWith('assets/') ? await fileIn(dir, relative) : null;
    const path = asset ?? (await fileIn(dir, 'index.html'));
    c.header('Content-Security-Policy', CONSOLE_CSP);
    c.header('Referrer-Policy', 'no-referrer');
    c.header('X-Frame-Options', 'DENY');
    if (path === null) {
      return c.text('The console is not built: run `npm run build -w @vouch/console` (npm start does).', 503);
    }
    if (relative.startsWith('assets/') && asset === null) return c.text('not found', 404);
    // Hashed asset names never change content; index.html must be fetched fresh.
    c.header('Cache-Control', asset ? 'public, max-age=31536000, immutable' : 'no-store');
    c.header('Content-Type', TYPES[extname(path)] ?? 'application/octet-stream');
    return c.body(await readFile(path));
  });
}
