import {
  type InitializeRequest,
  isInitializeRequest,
  type JSONRPCMessage,
  type MessageExtraInfo,
  type Transport,
  type TransportSendOptions,
} from '@modelcontextprotocol/server';
import { GatewayError } from './errors';

/**
 * Start the agent's transport and hold its messages until `initialize` arrives, so the
 * gateway can connect the upstream with the agent's own client capabilities before it
 * answers. The returned transport replays what was held to the server connected to it.
 */
export async function awaitInitialize(
  transport: Transport,
): Promise<{ params: InitializeRequest['params']; transport: Transport }> {
  const replay = new ReplayTransport(transport);
  const params = await new Promise<InitializeRequest['params']>((resolve, reject) => {
    replay.onInitialize = resolve;
    transport.onclose = () =>
      reject(new GatewayError('AGENT_DISCONNECTED', 'the agent closed the connection before initializing'));
    transport.start().catch(reject);
  });
  return { params, transport: replay };
}

class ReplayTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  onInitialize?: (params: InitializeRequest['params']) => void;
  private held: [JSONRPCMessage, MessageExtraInfo | undefined][] = [];
  private started = false;

  constructor(private readonly inner: Transport) {
    inner.onmessage = (message, extra) => {
      if (!this.started && isDiscoverProbe(message)) {
        // An SDK 2.x client in `auto` mode probes with server/discover first. Over stdio the
        // gateway speaks 2025-11-25 only: any error answer sends it to `initialize` at once
        // (unanswered, the probe would wait out its whole timeout first).
        void inner
          .send({
            jsonrpc: '2.0',
            id: message.id,
            error: {
              code: -32_601,
              message: 'server/discover: over stdio this gateway speaks 2025-11-25; send initialize',
            },
          })
          .catch((error: unknown) => this.onerror?.(error as Error));
        return;
      }
      if (!this.started) {
        this.held.push([message, extra]);
        if (isInitializeRequest(message)) this.onInitialize?.(message.params);
        return;
      }
      this.onmessage?.(message, extra);
    };
    inner.onerror = (error) => this.onerror?.(error);
  }

  async start(): Promise<void> {
    this.started = true;
    this.inner.onclose = () => this.onclose?.();
    for (const [message, extra] of this.held.splice(0)) this.onmessage?.(message, extra);
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    return this.inner.send(message, options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }
}

/** The 2026-07-28 version probe (a request, not a notification). */
function isDiscoverProbe(message: JSONRPCMessage): message is JSONRPCMessage & { id: string | number } {
  return 'method' in message && message.method === 'server/discover' && 'id' in message;
}
