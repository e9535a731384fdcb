import { deserialize, serialize } from 'node:v8';

/**
 * The largest message a plugin's process may send the server: a result, a log line, a grant
 * call. Bigger is a protocol violation and the process is killed.
 */
export const PLUGIN_MESSAGE_MAX_BYTES = 32 * 1024 * 1024;

/** The plugin's process sent bytes that are not a message of the protocol. */
export class PluginProtocolError extends Error {
  override readonly name = 'PluginProtocolError';
}

/** One message as it crosses the channel: a 4-byte big-endian length, then V8's serialization. */
export function frame(message: unknown): Buffer {
  const body = serialize(message);
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length);
  return Buffer.concat([head, body]);
}

/**
 * Reads the plugin's side of the channel. The plugin's code can write anything to the
 * descriptor (Node's permission model does not check writes to an open descriptor), so every
 * byte is untrusted: bytes that are not a frame, a frame over {@link PLUGIN_MESSAGE_MAX_BYTES},
 * or one V8 cannot deserialize throw {@link PluginProtocolError} here, where Node's own IPC
 * channel would throw in the server's event loop and take the server down.
 */
export class FrameReader {
  private chunks: Buffer[] = [];
  private size = 0;

  /** Add a chunk; the whole messages it completes. */
  push(chunk: Buffer): unknown[] {
    this.chunks.push(chunk);
    this.size += chunk.length;
    const messages: unknown[] = [];
    for (;;) {
      if (this.size < 4) break;
      const length = this.head().readUInt32BE(0);
      if (length > PLUGIN_MESSAGE_MAX_BYTES) {
        throw new PluginProtocolError(`a message of ${length} bytes, over ${PLUGIN_MESSAGE_MAX_BYTES}`);
      }
      // Join the chunks only once the whole frame is there (a large result arrives in many).
      if (this.size < 4 + length) break;
      const all = Buffer.concat(this.chunks, this.size);
      this.chunks = [all.subarray(4 + length)];
      this.size = all.length - 4 - length;
      messages.push(parse(all.subarray(4, 4 + length)));
    }
    return messages;
  }

  private head(): Buffer {
    if (this.chunks[0]!.length < 4) this.chunks = [Buffer.concat(this.chunks, this.size)];
    return this.chunks[0]!;
  }
}

function parse(body: Buffer): unknown {
  let message: unknown;
  try {
    message = deserialize(body);
  } catch (error) {
    throw new PluginProtocolError(`a message that does not deserialize: ${(error as Error).message}`);
  }
  if (
    typeof message !== 'object' ||
    message === null ||
    typeof (message as { type?: unknown }).type !== 'string'
  ) {
    throw new PluginProtocolError('a message without a type');
  }
  return message;
}
