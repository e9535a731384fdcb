import { describe, expect, it } from 'vitest';
import { createHttpTransport, type HttpFetch, readErrorEnvelope } from './http-transport';

// The transport is tested through both of its users as well (@vouch/client's http.test.ts,
// witness.test.ts); this pins what both rely on.
function stub(answers: Array<Response | Error | 'hang'>) {
  const calls: Array<{ url: string; headers: Record<string, string> }> = [];
  const fetch: HttpFetch<Response> = (url, init) => {
    calls.push({ url, headers: init.headers });
    const next = answers.shift() ?? new Response('{}');
    if (next === 'hang')
      return new Promise((_, reject) =>
        init.signal.addEventListener('abort', () => reject(init.signal.reason)),
      );
    return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
  };
  return { fetch, calls };
}

const retry = { attempts: 3, minDelayMs: 1, maxDelayMs: 5 };

describe('createHttpTransport', () => {
  it('sends the key and accept to the base URL with its prefix, and the query', async () => {
    const { fetch, calls } = stub([new Response('ok')]);
    const transport = createHttpTransport({ baseUrl: 'http://vouch.test/prefix/', apiKey: 'k', fetch });
    const sent = await transport.send({
      method: 'GET',
      path: '/v1/x',
      query: { a: 1, b: undefined },
      accept: 'text/plain',
      retry: 'safe',
    });
    expect(sent.kind).toBe('answered');
    expect(calls).toEqual([
      {
        url: 'http://vouch.test/prefix/v1/x?a=1',
        headers: { authorization: 'Bearer k', accept: 'text/plain' },
      },
    ]);
  });

  it('retries a safe request after a failed connection and a 503, and answers with the last response', async () => {
    const { fetch, calls } = stub([
      new TypeError('reset'),
      new Response('busy', { status: 503 }),
      new Response('ok'),
    ]);
    const sent = await createHttpTransport({ baseUrl: 'http://v', apiKey: 'k', fetch, retry }).send({
      method: 'GET',
      path: '/',
      retry: 'safe',
    });
    expect(calls).toHaveLength(3);
    expect(sent.kind === 'answered' && (await sent.response.text())).toBe('ok');
  });

  it('hands back an error status unretried when it is a refusal, or the request is never retried', async () => {
    for (const [status, policy] of [
      [403, 'safe'],
      [503, 'never'],
    ] as const) {
      const { fetch, calls } = stub([new Response('no', { status })]);
      const sent = await createHttpTransport({ baseUrl: 'http://v', apiKey: 'k', fetch, retry }).send({
        method: 'POST',
        path: '/',
        retry: policy,
      });
      expect(calls).toHaveLength(1);
      expect(sent.kind === 'answered' && sent.response.status).toBe(status);
    }
  });

  it('says failed and timedOut when no answer comes within the time limit', async () => {
    const { fetch } = stub(['hang']);
    const sent = await createHttpTransport({ baseUrl: 'http://v', apiKey: 'k', fetch, timeoutMs: 10 }).send({
      method: 'GET',
      path: '/',
      retry: 'never',
    });
    expect(sent).toMatchObject({ kind: 'failed', timedOut: true });
  });

  it('says aborted, without sending, for a signal that already fired', async () => {
    const { fetch, calls } = stub([]);
    const sent = await createHttpTransport({ baseUrl: 'http://v', apiKey: 'k', fetch }).send({
      method: 'GET',
      path: '/',
      retry: 'safe',
      signal: AbortSignal.abort('stop'),
    });
    expect(sent).toEqual({ kind: 'aborted', reason: 'stop' });
    expect(calls).toHaveLength(0);
  });
});

describe('readErrorEnvelope', () => {
  it('reads the code, message, details and request id', async () => {
    const response = Response.json(
      { error: { code: 'LOG_NOT_FOUND', message: 'no log', details: { log: 'x' }, request_id: 'r1' } },
      { status: 404 },
    );
    expect(await readErrorEnvelope(response)).toEqual({
      code: 'LOG_NOT_FOUND',
      message: 'no log',
      details: { log: 'x' },
      requestId: 'r1',
    });
  });

  it.each([['<html>proxy</html>'], ['{"error":{"message":"no code"}}'], ['null']])(
    'is null for a body without the envelope: %s',
    async (text) => {
      expect(await readErrorEnvelope(new Response(text, { status: 502 }))).toBeNull();
    },
  );
});
