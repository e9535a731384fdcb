import type { JSONRPCMessage, MessageExtraInfo, Transport } from '@modelcontextprotocol/client';

/** An upstream transport whose requests and notifications wait until the agent is there. */
export interface HeldTransport {
  transport: Transport;
  /** Deliver what was held, in order, and everything after it at once. Idempotent. */
  release(): void;
}

/**
 * Hold what an upstream sends on its own while the gateway starts: an upstream may ask the
 * client for its roots (`roots/list`, as `server-filesystem` does once initialized) or say its
 * tools changed before the gateway is wired to the agent. Delivered then, such a request fails
 * and a notification is dropped; held, both reach the agent once it has initialized. Answers
 * to the gateway's own requests (initialize, tools/list) pass at once.
 */
export function holdEarlyTraffic(transport: Transport): HeldTransport {
  let released = false;
  const held: [JSONRPCMessage, MessageExtraInfo | undefined][] = [];
  let deliver: Transport['onmessage'];
  const holding = ((message: JSONRPCMessage, extra?: MessageExtraInfo) => {
    if (released || !('method' in message)) return deliver?.(message, extra);
    held.push([message, extra]);
  }) as Transport['onmessage'];
  // The transport itself, not a wrapper: the SDK's client keeps seeing the transport it was
  // given (its class, `pid`, `sessionId`, …); only the message callback it sets is wrapped.
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    enumerable: true,
    get: () => (deliver === undefined ? undefined : holding),
    set: (value: Transport['onmessage']) => {
      deliver = value;
    },
  });
  return {
    transport,
    release: () => {
      if (released) return;
      released = true;
      for (const [message, extra] of held.splice(0)) deliver?.(message, extra);
    },
  };
}
