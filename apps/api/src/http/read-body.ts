import { ApiError } from '../errors';

/**
 * Read a request body, refusing it as soon as it passes `maxBytes`.
 *
 * A declared `Content-Length` over the limit is refused before a byte is read (one within it
 * is read whole: the parser stops at the declared length); a body sent without one (chunked)
 * is counted while it streams and abandoned at the first chunk past the limit, so a client
 * cannot make the server buffer more than the limit either way.
 */
export async function readBodyLimited(request: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length');
  if (declared !== null) {
    const length = Number(declared);
    if (!/^\d+$/.test(declared.trim()) || !Number.isSafeInteger(length)) {
      throw new ApiError('INVALID_REQUEST', 'the Content-Length header is not a byte count');
    }
    if (length > maxBytes) throw tooLarge(maxBytes);
    // The HTTP parser delivers exactly the declared length, so the whole read is bounded:
    // read it in one go (on @hono/node-server straight from the socket, with no web stream).
    const body = new Uint8Array(await request.arrayBuffer());
    // A Request built in process (not parsed off a socket) may carry more than it declares.
    if (body.byteLength > maxBytes) throw tooLarge(maxBytes);
    return body;
  }
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge(maxBytes);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const body = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}

function tooLarge(maxBytes: number): ApiError {
  return new ApiError('BODY_TOO_LARGE', `the request body is larger than ${maxBytes} bytes`, {
    details: { maxBytes },
  });
}
