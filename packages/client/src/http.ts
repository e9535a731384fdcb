import {
  createHttpTransport,
  type HttpRequest,
  type HttpTransport,
  type RetryOptions,
  readErrorEnvelope,
} from '@vouch/audit/transport';
import { abortedError } from './delay';
import { isServerErrorCode, VouchClientError } from './errors';
import { tracedFetch } from './traced-fetch';

export type { HttpRequest, RetryOptions, RetryPolicy } from '@vouch/audit/transport';

/** How the client reaches the server. */
export interface HttpOptions {
  /** The server's base URL, e.g. `http://127.0.0.1:8787` (a path prefix is kept). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`; the identity comes from the key, never from a body. */
  apiKey: string;
  /** Defaults to the global `fetch`; pass one to use a test stub or `app.request`. */
  fetch?: typeof fetch;
  /** Per-attempt time limit in milliseconds (default 30 000). */
  timeoutMs?: number;
  retry?: RetryOptions;
}

/** The transport `createVouchClient` builds on: JSON in, JSON out, one error type. */
export interface Http {
  /** Send and parse a JSON answer; error statuses become a {@link VouchClientError} with the server's code. */
  json<T>(request: HttpRequest): Promise<T>;
  /** Send and return the successful response unread (for streamed bodies). */
  stream(request: HttpRequest): Promise<Response>;
}

/**
 * Build the client's transport on `@vouch/audit`'s (base URL, key, time limits, retries):
 * this adds JSON and turns every failure into a {@link VouchClientError}.
 */
export function createHttp(options: HttpOptions): Http {
  const fetchImpl = options.fetch ?? globalThis.fetch;
  if (typeof fetchImpl !== 'function') {
    throw new VouchClientError(
      'INVALID_ARGUMENT',
      'no fetch: pass options.fetch on a runtime without a global fetch',
    );
  }
  if (!options.apiKey) throw new VouchClientError('INVALID_ARGUMENT', 'apiKey is required');
  const transport: HttpTransport<Response> = createHttpTransport({
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    fetch: tracedFetch(fetchImpl),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.retry === undefined ? {} : { retry: options.retry }),
  });

  function failureOf(error: unknown, request: HttpRequest, timedOut: boolean): VouchClientError {
    const what = `${request.method} ${request.path}`;
    return timedOut
      ? new VouchClientError('TIMEOUT', `${what} took longer than ${transport.timeoutMs} ms`, {
          cause: error,
        })
      : new VouchClientError('NETWORK_ERROR', `${what} failed: ${String(error)}`, { cause: error });
  }

  async function send(request: HttpRequest) {
    const sent = await transport.send(request);
    if (sent.kind === 'aborted') throw abortedError(request.signal!);
    if (sent.kind === 'failed') throw failureOf(sent.cause, request, sent.timedOut);
    const { response, deadline } = sent;
    if (response.ok) return { response, deadline };
    try {
      throw await errorFrom(response);
    } finally {
      deadline.release();
    }
  }

  return {
    async json<T>(request: HttpRequest): Promise<T> {
      const { response, deadline } = await send(request);
      let text: string;
      try {
        text = await response.text();
      } catch (error) {
        if (request.signal?.aborted) throw abortedError(request.signal);
        throw failureOf(error, request, deadline.expired());
      } finally {
        deadline.release();
      }
      if (response.status === 204) return undefined as T;
      return parseJson(text, response, request) as T;
    },
    async stream(request: HttpRequest): Promise<Response> {
      const { response, deadline } = await send(request);
      // The headers arrived in time; the body streams for as long as it takes.
      deadline.stop();
      return response;
    },
  };
}

function parseJson(text: string, response: Response, request: HttpRequest): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new VouchClientError(
      'UNEXPECTED_RESPONSE',
      `${request.method} ${request.path}: the answer is not JSON`,
      {
        status: response.status,
        cause: error,
      },
    );
  }
}

/** The server's error envelope as a typed error. */
async function errorFrom(response: Response): Promise<VouchClientError> {
  const error = await readErrorEnvelope(response);
  if (error === null) {
    // A proxy or load balancer in front of Vouch may answer without the envelope.
    return new VouchClientError('UNEXPECTED_RESPONSE', `HTTP ${response.status} without a Vouch error body`, {
      status: response.status,
    });
  }
  return new VouchClientError(
    isServerErrorCode(error.code) ? error.code : 'UNRECOGNIZED_SERVER_ERROR',
    error.message ?? `HTTP ${response.status}`,
    {
      status: response.status,
      requestId: error.requestId,
      details: error.details,
      serverCode: error.code,
    },
  );
}
