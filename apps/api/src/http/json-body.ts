import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { ApiError } from '../errors';
import type { AppEnv } from './app-env';
import { parseJsonBody } from './parse-json';

const JSON_MEDIA_TYPE = /^application\/json\s*(;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

/**
 * Read, bound and parse a JSON request body before the route's zod schema sees it.
 *
 * Runs before validation so that every refusal here happens before any handler, and so
 * before any row is written: wrong media type (415), too large (413: hono's `bodyLimit`
 * refuses a declared Content-Length over the limit unread and stops a chunked body at the
 * first chunk past it),
 * not UTF-8 or not JSON (400), too deep (400), duplicate keys (400), values JSON cannot
 * carry (400). The parsed text is handed to hono's body cache, which the route's zod
 * validator reads, so the body is read from the socket exactly once.
 */
export function jsonBody(options: { required: boolean }): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const limits = c.get('limits');
    const contentType = c.req.header('content-type');
    if (contentType === undefined) {
      const bytes = await readBodyLimited(c, limits.bodyBytes);
      cacheBody(c, bytes, '');
      if (bytes.byteLength > 0 || options.required) {
        throw new ApiError('UNSUPPORTED_MEDIA_TYPE', 'send the body as Content-Type: application/json', {
          details: { expected: 'application/json' },
        });
      }
      await next();
      return;
    }
    if (!JSON_MEDIA_TYPE.test(contentType.trim())) {
      throw new ApiError(
        'UNSUPPORTED_MEDIA_TYPE',
        'send the body as Content-Type: application/json (UTF-8)',
        {
          details: { expected: 'application/json', received: contentType.slice(0, 100) },
        },
      );
    }
    const bytes = await readBodyLimited(c, limits.bodyBytes);
    if (bytes.byteLength === 0 && !options.required) {
      // An optional body sent empty (a client that always sets the header) means "no fields".
      cacheBody(c, bytes, '{}');
      await next();
      return;
    }
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch (cause) {
      throw new ApiError('MALFORMED_JSON', 'the request body is not UTF-8', { cause });
    }
    const value = parseJsonBody(text, { maxDepth: limits.jsonDepth });
    c.set('jsonBody', value);
    cacheBody(c, bytes, text);
    await next();
  };
}

/**
 * The body; `BODY_TOO_LARGE` past `maxBytes`. A declared Content-Length over the limit is
 * refused unread. Under it the body is read whole: Node's parser ends the body at the declared
 * length, and the node adapter reads it straight off the socket, without building a web
 * `Request` and its streams. A body of undeclared length (chunked) goes through hono's
 * `bodyLimit`, which stops it at the first chunk past the limit.
 */
async function readBodyLimited(c: Context<AppEnv>, maxBytes: number): Promise<Uint8Array> {
  const declared = c.req.header('content-length');
  if (declared !== undefined && c.req.header('transfer-encoding') === undefined) {
    if (Number(declared) > maxBytes) throw tooLarge(maxBytes);
    const bytes = new Uint8Array(await c.req.raw.arrayBuffer());
    // A Request built in process (not parsed off a socket) may carry more than it declares.
    if (bytes.byteLength > maxBytes) throw tooLarge(maxBytes);
    return bytes;
  }
  let bytes: Uint8Array | undefined;
  const limit = bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw tooLarge(maxBytes);
    },
  });
  await limit(c, async () => {
    bytes = new Uint8Array(await c.req.raw.arrayBuffer());
  });
  // A Request built in process (not parsed off a socket) may carry more than it declares.
  if (bytes!.byteLength > maxBytes) throw tooLarge(maxBytes);
  return bytes!;
}

function tooLarge(maxBytes: number): ApiError {
  return new ApiError('BODY_TOO_LARGE', `the request body is larger than ${maxBytes} bytes`, {
    details: { maxBytes },
  });
}

/**
 * hono's HonoRequest keeps body reads as promises in `bodyCache`. The stream is spent once we
 * have read it, so hand the validators that come after (zod-openapi's media-type gate reads
 * the bytes, the zod validator calls `c.req.json()` on the text) the copies we already hold.
 */
function cacheBody(c: Context<AppEnv>, bytes: Uint8Array, text: string): void {
  const cache = c.req.bodyCache as Record<string, unknown>;
  cache.arrayBuffer = Promise.resolve(bytes.slice().buffer);
  cache.text = Promise.resolve(text);
}
