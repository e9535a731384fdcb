import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { upstreamFetch } from './upstream-fetch';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function serve(handle: (request: IncomingMessage, response: ServerResponse) => void): Promise<string> {
  const server = createServer(handle);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** An upstream that redirects every request to another origin, which records the headers it gets. */
async function redirectingUpstream() {
  const seen: IncomingMessage['headers'][] = [];
  const elsewhere = await serve((request, response) => {
    seen.push(request.headers);
    response.end('{}');
  });
  const url = await serve((_request, response) => {
    response.writeHead(307, { location: `${elsewhere}/mcp` });
    response.end();
  });
  return { url: `${url}/mcp`, seen };
}

describe('upstreamFetch', () => {
  it('follows no redirect when it sends a secret header, so the secret stays with the upstream', async () => {
    const { url, seen } = await redirectingUpstream();
    const send = upstreamFetch({ headers: { 'x-api-key': 'hush' } });
    await expect(send(url, { method: 'POST', body: '{}' })).rejects.toThrow();
    expect(seen).toEqual([]);
  });

  it('follows no redirect when it sends a bearer token', async () => {
    const { url, seen } = await redirectingUpstream();
    const send = upstreamFetch({ headers: {}, tokens: { token: async () => 'tok', invalidate: () => {} } });
    await expect(send(url, { method: 'POST', body: '{}' })).rejects.toThrow();
    expect(seen).toEqual([]);
  });

  it('follows a redirect as fetch does when it sends no credentials', async () => {
    const { url, seen } = await redirectingUpstream();
    const response = await upstreamFetch({ headers: {} })(url, { method: 'POST', body: '{}' });
    expect(response.status).toBe(200);
    expect(seen).toHaveLength(1);
  });
});
