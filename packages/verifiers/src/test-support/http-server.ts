import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A real HTTP server on 127.0.0.1 for tests, with every request it saw. Test support only. */
export interface TestServer {
  url: string;
  port: number;
  requests: { method: string; url: string; headers: http.IncomingHttpHeaders }[];
  close(): Promise<void>;
}

/** Start a server on 127.0.0.1 (an ephemeral port) that answers with `handler`. */
export async function startServer(handler: http.RequestListener): Promise<TestServer> {
  const requests: TestServer['requests'] = [];
  const server = http.createServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port on 127.0.0.1 where nothing listens (it was bound, then released). */
export async function closedPort(): Promise<number> {
  const server = await startServer(() => {});
  await server.close();
  return server.port;
}

/** Answer with JSON. */
export function sendJson(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  type = 'application/json',
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
