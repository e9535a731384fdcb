import { serialize } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { FrameReader, frame, PLUGIN_MESSAGE_MAX_BYTES, PluginProtocolError } from './plugin-channel';

describe('the framed channel from a plugin process', () => {
  it('reads messages split across chunks at any byte, and several in one chunk', () => {
    const messages = [
      { type: 'result', id: 1, ok: true, value: { body: new Uint8Array([1, 2, 3]) } },
      { type: 'pong' },
    ];
    const bytes = Buffer.concat(messages.map(frame));
    for (let cut = 0; cut <= bytes.length; cut++) {
      const reader = new FrameReader();
      expect([...reader.push(bytes.subarray(0, cut)), ...reader.push(bytes.subarray(cut))]).toEqual(messages);
    }
  });

  it.each([
    ['a length over the limit', Buffer.from([0xff, 0xff, 0xff, 0x7f]), /over/],
    [
      'bytes V8 cannot deserialize',
      Buffer.concat([Buffer.from([0, 0, 0, 4]), Buffer.from('junk')]),
      /deserialize/,
    ],
    ['a value that is not a message', frame('hello'), /without a type/],
    ['a message whose type is not a string', frame({ type: 1 }), /without a type/],
  ])('refuses %s with PluginProtocolError', (_label, bytes, message) => {
    expect(() => new FrameReader().push(bytes)).toThrow(PluginProtocolError);
    expect(() => new FrameReader().push(bytes)).toThrow(message);
  });

  it('accepts a message at the limit', () => {
    const head = Buffer.alloc(4);
    const body = serialize({ type: 'log', message: 'x'.repeat(PLUGIN_MESSAGE_MAX_BYTES - 64) });
    head.writeUInt32BE(body.length);
    expect(body.length).toBeLessThanOrEqual(PLUGIN_MESSAGE_MAX_BYTES);
    expect(new FrameReader().push(Buffer.concat([head, body]))).toHaveLength(1);
  });
});
