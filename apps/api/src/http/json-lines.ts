const CHUNK_CHARS = 64 * 1024;

/**
 * A byte stream of JSON Lines pulled from an async iterable: the next item is read only
 * when the client has taken the previous chunk, so a log of any length streams with
 * constant memory, and a client that goes away stops the read (`return()` on the source).
 */
export function jsonLinesStream<T>(
  source: AsyncIterable<T>,
  options: { toLine?: (item: T) => string; onError?: (error: unknown) => void } = {},
): ReadableStream<Uint8Array> {
  const iterator = source[Symbol.asyncIterator]();
  const encoder = new TextEncoder();
  const toLine = options.toLine ?? ((item: T) => JSON.stringify(item));
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          let chunk = '';
          while (chunk.length < CHUNK_CHARS) {
            const next = await iterator.next();
            if (next.done) {
              if (chunk) controller.enqueue(encoder.encode(chunk));
              controller.close();
              return;
            }
            chunk += `${toLine(next.value)}\n`;
          }
          controller.enqueue(encoder.encode(chunk));
        } catch (error) {
          options.onError?.(error);
          // Headers are gone already; erroring the stream aborts the transfer, so the client
          // sees an incomplete body rather than a file that looks complete and is not.
          controller.error(error);
        }
      },
      async cancel() {
        await iterator.return?.();
      },
    },
    { highWaterMark: 0 },
  );
}
