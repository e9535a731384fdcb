import { once } from 'node:events';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../testing/app-harness';

// The app as `vouch serve` runs it: behind the node adapter on a real socket.
let h: Harness;
let admin: string;
let server: ReturnType<typeof serve>;
let port: number;
let made: Response | undefined;
const newKey = JSON.stringify({ identity: 'user:bob', roles: ['approver'] });

beforeAll(async () => {
  h = await createHarness({ limits: { bodyBytes: 4096, jsonDepth: 8 } });
  admin = await h.keyFor('user:root', ['admin']);
  // Before the first request, which builds the router.
  h.app.get('/v1/answer-probe', (c) => {
    made = c.json({ probe: true }, 200);
    return made;
  });
  server = serve({ fetch: h.app.fetch, port: 0, hostname: '127.0.0.1' });
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.close();
  await h.close();
});

function post(path: string, body: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
    (resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path,
          headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json', ...headers },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            text += chunk;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
        },
      );
      req.on('error', reject);
      req.end(body);
    },
  );
}

describe('answers over a socket', () => {
  it('sends a JSON answer whole with its length, with the headers every answer carries', async () => {
    const res = await post('/v1/keys', newKey);
    expect(res.status).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    // Not re-wrapped as a stream by the headers set after the handler: no chunked encoding.
    expect(res.headers['transfer-encoding']).toBeUndefined();
    expect(res.headers['content-length']).toBe(String(Buffer.byteLength(res.body)));
  });

  it('refuses a body over the limit with its declared length, and writes nothing', async () => {
    const before = await h.rowCounts();
    const body = newKey.replace('}', `,"pad":"${'x'.repeat(5000)}"}`);
    const res = await post('/v1/keys', body);
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body).error.code).toBe('BODY_TOO_LARGE');
    expect(await h.rowCounts()).toEqual(before);
  });

  it('refuses a chunked body over the limit, and writes nothing', async () => {
    const before = await h.rowCounts();
    const body = newKey.replace('}', `,"pad":"${'x'.repeat(5000)}"}`);
    const res = await post('/v1/keys', body, { 'transfer-encoding': 'chunked' });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body).error.code).toBe('BODY_TOO_LARGE');
    expect(await h.rowCounts()).toEqual(before);
  });
});

describe('the headers every answer carries', () => {
  it('are set on the answer the handler made, not on a rebuilt copy of it', async () => {
    const response = await h.app.request('/v1/answer-probe', {
      headers: { authorization: `Bearer ${admin}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    // A rebuilt answer has its body as a stream, which the node adapter copies chunk by chunk.
    expect(response).toBe(made);
  });
});

describe('a body of declared length', () => {
  it('is read whole without opening the web stream of the request', async () => {
    let streamOpened = 0;
    const body = new TextEncoder().encode(newKey);
    const watched = new Request('http://localhost/v1/keys', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${admin}`,
        'content-type': 'application/json',
        'content-length': String(body.byteLength),
      },
      body,
    });
    // The web Request's own getter (the node adapter replaces the global class with a subclass).
    let proto = Object.getPrototypeOf(watched);
    while (!Object.hasOwn(proto, 'body')) proto = Object.getPrototypeOf(proto);
    const stream = Object.getOwnPropertyDescriptor(proto, 'body')!.get!;
    Object.defineProperty(watched, 'body', {
      get() {
        streamOpened++;
        return stream.call(watched);
      },
    });
    const response = await h.app.request(watched);
    expect(response.status).toBe(201);
    expect(streamOpened).toBe(0);
  });
});
