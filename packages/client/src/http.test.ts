import { describe, expect, it } from 'vitest';
import { isVouchClientError, type VouchClientError } from './errors';
import { createHttp } from './http';

type Answer = Response | 'network' | 'hang';

/** A fetch stub that answers from a script and remembers what it was asked. */
function scriptedFetch(answers: Answer[]) {
  const calls: { url: string; init: RequestInit }[] = [];
  const fetch = (async (url: string, init: RequestInit) => {
    calls.push({ url, init });
    const answer = answers.shift() ?? new Response('{}', { status: 200 });
    if (answer === 'network') throw new TypeError('fetch failed');
    if (answer === 'hang') {
      return new Promise<Response>((_, reject) => {
        init.signal?.addEventListener('abort', () => reject(init.signal?.reason), { once: true });
      });
    }
    return answer;
  }) as unknown as typeof globalThis.fetch;
  return { fetch, calls };
}

const envelope = (status: number, code: string, extra: Record<string, unknown> = {}) =>
  new Response(JSON.stringify({ error: { code, message: 'm', request_id: 'req_1', ...extra } }), { status });

const ok = (body: unknown) => new Response(JSON.stringify(body), { status: 200 });

function http(answers: Answer[], timeoutMs = 5000) {
  const stub = scriptedFetch(answers);
  const client = createHttp({
    baseUrl: 'http://vouch.test/prefix/',
    apiKey: 'secret-key',
    fetch: stub.fetch,
    timeoutMs,
    retry: { attempts: 3, minDelayMs: 0, maxDelayMs: 0 },
  });
  return { client, calls: stub.calls };
}

async function failure(promise: Promise<unknown>): Promise<VouchClientError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isVouchClientError(error)) throw new Error(`expected a VouchClientError, got ${String(error)}`);
  return error;
}

describe('createHttp', () => {
  describe('when a request succeeds', () => {
    it('sends the bearer key, JSON body and query to the base URL with its prefix', async () => {
      const { client, calls } = http([ok({ a: 1 })]);
      const body = await client.json({
        method: 'POST',
        path: '/v1/x',
        query: { after: 3, skip: undefined },
        body: { b: 2 },
        retry: 'never',
      });
      expect(body).toEqual({ a: 1 });
      expect(calls[0]!.url).toBe('http://vouch.test/prefix/v1/x?after=3');
      const headers = calls[0]!.init.headers as Record<string, string>;
      expect(headers.authorization).toBe('Bearer secret-key');
      expect(headers['content-type']).toBe('application/json');
      expect(calls[0]!.init.body).toBe('{"b":2}');
    });
  });

  describe('when the server answers with the error envelope', () => {
    it('throws a VouchClientError with the server code, status, request id and details', async () => {
      const { client } = http([envelope(409, 'IDEMPOTENCY_CONFLICT', { details: { key: 'k' } })]);
      const error = await failure(client.json({ method: 'GET', path: '/v1/x', retry: 'safe' }));
      expect(error.code).toBe('IDEMPOTENCY_CONFLICT');
      expect(error.status).toBe(409);
      expect(error.requestId).toBe('req_1');
      expect(error.details).toEqual({ key: 'k' });
    });

    it('keeps a code it does not know as serverCode under UNRECOGNIZED_SERVER_ERROR', async () => {
      const { client } = http([envelope(418, 'TEAPOT_FROM_THE_FUTURE')]);
      const error = await failure(client.json({ method: 'GET', path: '/v1/x', retry: 'safe' }));
      expect(error.code).toBe('UNRECOGNIZED_SERVER_ERROR');
      expect(error.serverCode).toBe('TEAPOT_FROM_THE_FUTURE');
    });

    it('does not retry a refusal', async () => {
      const { client, calls } = http([envelope(400, 'INVALID_REQUEST'), ok({})]);
      const error = await failure(client.json({ method: 'GET', path: '/v1/x', retry: 'safe' }));
      expect(error.code).toBe('INVALID_REQUEST');
      expect(calls).toHaveLength(1);
    });
  });

  describe('when an answer has no envelope', () => {
    it('throws UNEXPECTED_RESPONSE for an error status from a proxy', async () => {
      const { client } = http([new Response('<html>bad gateway</html>', { status: 400 })]);
      const error = await failure(client.json({ method: 'GET', path: '/v1/x', retry: 'safe' }));
      expect(error.code).toBe('UNEXPECTED_RESPONSE');
      expect(error.status).toBe(400);
    });

    it('throws UNEXPECTED_RESPONSE for a success that is not JSON', async () => {
      const { client } = http([new Response('nope', { status: 200 })]);
      expect((await failure(client.json({ method: 'GET', path: '/v1/x', retry: 'safe' }))).code).toBe(
        'UNEXPECTED_RESPONSE',
      );
    });
  });

  describe('when a safe request meets a transient failure', () => {
    it('retries a network failure and a 503, then returns the answer', async () => {
      const { client, calls } = http(['network', envelope(503, 'DATABASE_UNAVAILABLE'), ok({ done: true })]);
      expect(await client.json({ method: 'GET', path: '/v1/x', retry: 'safe' })).toEqual({ done: true });
      expect(calls).toHaveLength(3);
    });

    it('gives up after the configured attempts with the last failure', async () => {
      const { client, calls } = http(['network', 'network', envelope(503, 'DATABASE_UNAVAILABLE'), ok({})]);
      const error = await failure(client.json({ method: 'GET', path: '/v1/x', retry: 'safe' }));
      expect(error.code).toBe('DATABASE_UNAVAILABLE');
      expect(calls).toHaveLength(3);
    });
  });

  describe('when a request marked never meets a transient failure', () => {
    it('sends it exactly once and reports NETWORK_ERROR', async () => {
      const { client, calls } = http(['network', ok({})]);
      const error = await failure(
        client.json({ method: 'POST', path: '/v1/observations', body: {}, retry: 'never' }),
      );
      expect(error.code).toBe('NETWORK_ERROR');
      expect(calls).toHaveLength(1);
    });

    it('does not retry a 503 either', async () => {
      const { client, calls } = http([envelope(503, 'DATABASE_UNAVAILABLE'), ok({})]);
      await failure(client.json({ method: 'POST', path: '/v1/observations', body: {}, retry: 'never' }));
      expect(calls).toHaveLength(1);
    });
  });

  describe('when the server does not answer in time', () => {
    it('throws TIMEOUT', async () => {
      const { client } = http(['hang'], 20);
      expect((await failure(client.json({ method: 'POST', path: '/v1/x', retry: 'never' }))).code).toBe(
        'TIMEOUT',
      );
    });
  });

  describe('when a body arrives slower than the time limit', () => {
    // A body that sends its first line after `afterMs`, and errors when the request is aborted.
    const slowFetch = (afterMs: number) =>
      (async (_url: string, init: RequestInit) => {
        const body = new ReadableStream<Uint8Array>({
          start(controller) {
            const timer = setTimeout(() => {
              controller.enqueue(new TextEncoder().encode('{"a":1}\n'));
              controller.close();
            }, afterMs);
            init.signal?.addEventListener('abort', () => {
              clearTimeout(timer);
              controller.error(init.signal?.reason);
            });
          },
        });
        return new Response(body, { status: 200 });
      }) as unknown as typeof globalThis.fetch;

    it('lets a streamed body outlive it once the headers arrived', async () => {
      const client = createHttp({ baseUrl: 'http://x', apiKey: 'k', fetch: slowFetch(60), timeoutMs: 20 });
      const response = await client.stream({ method: 'GET', path: '/v1/logs/a/export', retry: 'safe' });
      expect(await response.text()).toBe('{"a":1}\n');
    });

    it('bounds a JSON body by it and throws TIMEOUT', async () => {
      const client = createHttp({ baseUrl: 'http://x', apiKey: 'k', fetch: slowFetch(60), timeoutMs: 20 });
      const error = await failure(client.json({ method: 'GET', path: '/v1/x', retry: 'never' }));
      expect(error.code).toBe('TIMEOUT');
    });
  });

  describe('when the caller aborts', () => {
    it('throws ABORTED for a signal aborted before sending, without sending', async () => {
      const { client, calls } = http([ok({})]);
      const error = await failure(
        client.json({ method: 'GET', path: '/v1/x', retry: 'safe', signal: AbortSignal.abort() }),
      );
      expect(error.code).toBe('ABORTED');
      expect(calls).toHaveLength(0);
    });

    it('throws ABORTED, not a retry, when the signal fires in flight', async () => {
      const { client, calls } = http(['hang', ok({})]);
      const controller = new AbortController();
      const pending = client.json({ method: 'GET', path: '/v1/x', retry: 'safe', signal: controller.signal });
      controller.abort();
      expect((await failure(pending)).code).toBe('ABORTED');
      expect(calls).toHaveLength(1);
    });
  });

  describe('when it is built without what it needs', () => {
    it('refuses an empty API key with INVALID_ARGUMENT', () => {
      expect(() => createHttp({ baseUrl: 'http://x', apiKey: '' })).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      );
    });
  });
});
