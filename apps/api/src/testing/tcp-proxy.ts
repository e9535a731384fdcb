// Internal test support for @vouch/api (not exported): a loopback TCP proxy in front of a
// database, whose link a test can cut, so outages are tested on a real server and driver.
import { connect, createServer, type Socket } from 'node:net';

/**
 * What the link does now:
 * - `forward`: a working network;
 * - `refuse`: the database is down: every open connection is reset, new ones are closed at once;
 * - `blackhole`: a partition: connections open but nothing is ever answered, and bytes on the
 *   open ones go nowhere.
 */
export type LinkMode = 'forward' | 'refuse' | 'blackhole';

export interface TcpProxy {
  /** The proxy's port on 127.0.0.1. */
  readonly port: number;
  /** `url` with its host and port replaced by the proxy's. */
  urlThrough(url: string): string;
  /**
   * Change what the link does. Leaving `blackhole` resets the connections it held, as a
   * partition that outlasts TCP's patience ends.
   */
  setMode(mode: LinkMode): void;
  close(): Promise<void>;
}

/** Start a proxy on 127.0.0.1 to `target` (a loopback address). */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  if (!/^(127\.\d+\.\d+\.\d+|localhost|::1)$/.test(target.host)) {
    throw new Error(`the test proxy only forwards to loopback, not ${target.host}`);
  }
  let mode: LinkMode = 'forward';
  const open = new Set<Socket>();
  const track = (socket: Socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    socket.on('error', () => {});
  };
  const resetAll = () => {
    for (const socket of open) socket.resetAndDestroy();
  };

  const server = createServer((client) => {
    track(client);
    if (mode === 'refuse') {
      client.resetAndDestroy();
      return;
    }
    if (mode === 'blackhole') {
      client.resume(); // read and drop
      return;
    }
    const upstream = connect(target.port, target.host);
    track(upstream);
    const pipe = (from: Socket, to: Socket) =>
      from.on('data', (chunk: Buffer) => {
        // A link that went dark mid-connection drops what it is sent.
        if (mode === 'forward') to.write(chunk);
      });
    pipe(client, upstream);
    pipe(upstream, client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;

  return {
    port,
    urlThrough(url) {
      const through = new URL(url);
      through.hostname = '127.0.0.1';
      through.port = String(port);
      return through.toString();
    },
    setMode(next) {
      const previous = mode;
      mode = next;
      if (next === 'refuse' || (previous === 'blackhole' && next === 'forward')) resetAll();
    },
    async close() {
      resetAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
