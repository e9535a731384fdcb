import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { clientCredentialsTokens } from './client-credentials';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A loopback HTTP server; `handle` answers each request. */
async function serve(
  handle: (request: IncomingMessage, response: import('node:http').ServerResponse) => void,
): Promise<string> {
  const server = createServer(handle);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A token endpoint as a `fetch`: answers `tok-<n>` valid for `expiresIn` seconds, and counts requests. */
function endpoint(
  answer: (n: number) => { status: number; body: unknown } = (n) => ({
    status: 200,
    body: { access_token: `tok-${n}`, token_type: 'bearer', expires_in: 120 },
  }),
) {
  const bodies: string[] = [];
  const fetch: typeof globalThis.fetch = async (_url, init) => {
    bodies.push(String(init?.body));
    const { status, body } = answer(bodies.length);
    return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  };
  return { fetch, bodies };
}

const client = { tokenUrl: 'http://auth.test/token', clientId: 'gw', clientSecret: 'hush', scope: 'a b' };

describe('clientCredentialsTokens', () => {
  it('keeps a token until shortly before it expires, then fetches a new one', async () => {
    let now = 0;
    const { fetch, bodies } = endpoint();
    const tokens = clientCredentialsTokens(client, { fetch, now: () => now });
    expect(await tokens.token()).toBe('tok-1');
    now = 60_000;
    expect(await tokens.token()).toBe('tok-1');
    // 120 s lifetime, 30 s margin: at 90 s the token is no longer used.
    now = 90_000;
    expect(await tokens.token()).toBe('tok-2');
    expect(bodies).toEqual([
      'grant_type=client_credentials&scope=a+b',
      'grant_type=client_credentials&scope=a+b',
    ]);
  });

  it('shares one token request between concurrent callers', async () => {
    const { fetch, bodies } = endpoint();
    const tokens = clientCredentialsTokens(client, { fetch, now: () => 0 });
    expect(await Promise.all([tokens.token(), tokens.token(), tokens.token()])).toEqual([
      'tok-1',
      'tok-1',
      'tok-1',
    ]);
    expect(bodies).toHaveLength(1);
  });

  it('forgets a refused token only if it is the one it holds', async () => {
    const { fetch } = endpoint();
    const tokens = clientCredentialsTokens(client, { fetch, now: () => 0 });
    expect(await tokens.token()).toBe('tok-1');
    tokens.invalidate('tok-0');
    expect(await tokens.token()).toBe('tok-1');
    tokens.invalidate('tok-1');
    expect(await tokens.token()).toBe('tok-2');
  });

  it.each([
    [{ status: 400, body: { error: 'invalid_scope', error_description: 'hush' } }, 'invalid_scope'],
    [{ status: 200, body: { access_token: 'x', token_type: 'mac' } }, 'bearer access token'],
    [{ status: 200, body: { token_type: 'bearer' } }, 'bearer access token'],
  ])(
    'refuses the answer %j with UPSTREAM_AUTH_FAILED (%s), never repeating the secret',
    async (answer, says) => {
      const { fetch } = endpoint(() => answer);
      const error = await clientCredentialsTokens(client, { fetch })
        .token()
        .catch((e: Error) => e);
      expect(error).toMatchObject({ code: 'UPSTREAM_AUTH_FAILED', message: expect.stringContaining(says) });
      expect((error as Error).message).not.toContain('hush');
    },
  );

  it('does not follow a redirect, so the client secret reaches no other endpoint', async () => {
    const seen: (string | undefined)[] = [];
    const elsewhere = await serve((request, response) => {
      seen.push(request.headers.authorization);
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ access_token: 'stolen', token_type: 'bearer' }));
    });
    const tokenUrl = await serve((_request, response) => {
      response.writeHead(307, { location: `${elsewhere}/token` });
      response.end();
    });
    const error = await clientCredentialsTokens({ ...client, tokenUrl: `${tokenUrl}/token` })
      .token()
      .catch((e: Error) => e);
    expect(error).toMatchObject({ code: 'UPSTREAM_AUTH_FAILED' });
    expect(seen).toEqual([]);
  });

  it('gives up on a token endpoint that never answers', async () => {
    const tokenUrl = await serve(() => {});
    const error = await clientCredentialsTokens({ ...client, tokenUrl }, { timeoutMs: 100 })
      .token()
      .catch((e: Error) => e);
    expect(error).toMatchObject({ code: 'UPSTREAM_AUTH_FAILED', message: expect.stringContaining('reach') });
  });

  it('stops reading an answer larger than a token answer can be', async () => {
    let sent = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        sent += 1;
        controller.enqueue(new TextEncoder().encode(`${' '.repeat(16 * 1024)}`));
      },
    });
    const fetch: typeof globalThis.fetch = async () => new Response(endless, { status: 200 });
    const error = await clientCredentialsTokens(client, { fetch })
      .token()
      .catch((e: Error) => e);
    expect(error).toMatchObject({ code: 'UPSTREAM_AUTH_FAILED' });
    expect(sent).toBeLessThan(100);
  });

  it('names the endpoint in errors without its user info or query', async () => {
    const { fetch } = endpoint(() => ({ status: 401, body: { error: 'invalid_client' } }));
    const tokens = clientCredentialsTokens(
      { ...client, tokenUrl: 'https://gw:hush@auth.test/token?key=hush' },
      { fetch },
    );
    const error = await tokens.token().catch((e: Error) => e);
    expect(error).toMatchObject({ message: expect.stringContaining('https://auth.test/token') });
    expect((error as Error).message).not.toContain('hush');
  });
});
