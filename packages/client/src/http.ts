import { abortedError, backoffDelay, delay } from './delay';
import { isServerErrorCode, VouchClientError } from './errors';

/** How the client retries requests that are safe to send again. */
export interface RetryOptions {
  /** Attempts in total, the first included (default 3; 1 turns retries off). */
  attempts?: number;
  /** Backoff base in milliseconds (default 100). */
  minDelayMs?: number;
  /** Longest wait between attempts, also for a server's `Retry-After` (default 2000). */
  maxDelayMs?: number;
}

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

/**
 * Whether a request may be sent again after a failure that leaves its fate unknown.
 * `safe`: reading (GET), or a POST the server deduplicates (it carries an idempotency key).
 * `never`: anything else, above all an observation: re-posting "the tool ran" is not ours to guess.
 */
export type RetryPolicy = 'safe' | 'never';

/** One request, before the base URL and credentials are added. */
export interface HttpRequest {
  method: 'GET' | 'POST';
  /** Path with its segments already encoded. */
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  retry: RetryPolicy;
  signal?: AbortSignal;
  accept?: string;
}

/** The transport `createVouchClient` builds on: JSON in, JSON out, one error type. */
export interface Http {
  /** Send and parse a JSON answer; error statuses become a {@link VouchClientError} with the server's code. */
  json<T>(request: HttpRequest): Promise<T>;
  /** Send and return the successful response unread (for streamed bodies). */
  stream(request: HttpRequest): Promise<Response>;
}

// Statuses that say "not now" rather than "no": the request was not acted on, or is safe to repeat.
const RETRYABLE_STATUSES = new Set([408, 425, 429, 502, 503, 504]);

/** Build the transport. Uses only `fetch`, `AbortSignal`, `URLSearchParams` and timers. */
export function createHttp(options: HttpOptions): Http {
  const fetchImpl = options.fetch ?? globalThis.fetch;
  if (typeof fetchImpl !== 'function') {
    throw new VouchClientError(
      'INVALID_ARGUMENT',
      'no fetch: pass options.fetch on a runtime without a global fetch',
    );
  }
  if (!options.apiKey) throw new VouchClientError('INVALID_ARGUMENT', 'apiKey is required');
  const base = options.baseUrl.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 30_000;
  const attempts = Math.max(1, options.retry?.attempts ?? 3);
  const minDelayMs = options.retry?.minDelayMs ?? 100;
  const maxDelayMs = options.retry?.maxDelayMs ?? 2000;

  /**
   * One attempt's time limit, over the request and (for JSON) the body: a timer, not
   * `AbortSignal.timeout`, so a streamed body can outlive it once the headers arrived.
   */
  function deadlineFor(outer: AbortSignal | undefined) {
    const controller = new AbortController();
    let expired = false;
    const timer = setTimeout(() => {
      expired = true;
      controller.abort(new Error(`timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    const onAbort = () => controller.abort(outer!.reason);
    outer?.addEventListener('abort', onAbort, { once: true });
    return {
      signal: controller.signal,
      expired: () => expired,
      /** Stop the clock (the caller's signal still aborts a streamed body). */
      stop: () => clearTimeout(timer),
      /** Stop the clock and let go of the caller's signal. */
      release: () => {
        clearTimeout(timer);
        outer?.removeEventListener('abort', onAbort);
      },
    };
  }
  type Deadline = ReturnType<typeof deadlineFor>;

  async function send(request: HttpRequest): Promise<{ response: Response; deadline: Deadline }> {
    const url = base + request.path + queryString(request.query);
    const headers: Record<string, string> = {
      authorization: `Bearer ${options.apiKey}`,
      accept: request.accept ?? 'application/json',
    };
    let body: string | undefined;
    if (request.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(request.body);
    }
    const maxAttempts = request.retry === 'safe' ? attempts : 1;
    for (let attempt = 0; ; attempt++) {
      const answer = await attemptOnce(url, { method: request.method, headers, body }, request);
      if ('response' in answer) return answer;
      if (!answer.retryable || attempt + 1 >= maxAttempts) throw answer.failure;
      const wait = Math.min(
        maxDelayMs,
        answer.retryAfterMs ?? backoffDelay(attempt, { minDelayMs, maxDelayMs }),
      );
      await delay(wait, request.signal);
    }
  }

  type Attempt =
    | { response: Response; deadline: Deadline }
    | { failure: VouchClientError; retryable: boolean; retryAfterMs: number | null };

  async function attemptOnce(url: string, init: RequestInit, request: HttpRequest): Promise<Attempt> {
    if (request.signal?.aborted) throw abortedError(request.signal);
    const deadline = deadlineFor(request.signal);
    let response: Response;
    try {
      response = await fetchImpl(url, { ...init, signal: deadline.signal });
    } catch (error) {
      deadline.release();
      if (request.signal?.aborted) throw abortedError(request.signal);
      // The request may or may not have reached the server: only a `safe` request is sent again.
      return { failure: failureOf(error, request, deadline), retryable: true, retryAfterMs: null };
    }
    if (response.ok) return { response, deadline };
    try {
      return {
        failure: await errorFrom(response),
        retryable: RETRYABLE_STATUSES.has(response.status),
        retryAfterMs: parseRetryAfter(response.headers.get('retry-after')),
      };
    } finally {
      deadline.release();
    }
  }

  function failureOf(error: unknown, request: HttpRequest, deadline: Deadline): VouchClientError {
    const what = `${request.method} ${request.path}`;
    return deadline.expired()
      ? new VouchClientError('TIMEOUT', `${what} took longer than ${timeoutMs} ms`, { cause: error })
      : new VouchClientError('NETWORK_ERROR', `${what} failed: ${String(error)}`, { cause: error });
  }

  return {
    async json<T>(request: HttpRequest): Promise<T> {
      const { response, deadline } = await send(request);
      let text: string;
      try {
        text = await response.text();
      } catch (error) {
        if (request.signal?.aborted) throw abortedError(request.signal);
        throw failureOf(error, request, deadline);
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

function queryString(query: HttpRequest['query']): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined) params.set(name, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
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

/** The server's error envelope `{ error: { code, message, details?, request_id } }` as a typed error. */
async function errorFrom(response: Response): Promise<VouchClientError> {
  let envelope: unknown;
  try {
    envelope = JSON.parse(await response.text());
  } catch {
    // Not JSON, or the body broke off: either way there is no envelope to read.
    envelope = undefined;
  }
  const error = (envelope as { error?: unknown } | undefined)?.error as
    | { code?: unknown; message?: unknown; details?: unknown; request_id?: unknown }
    | undefined;
  if (!error || typeof error.code !== 'string') {
    // A proxy or load balancer in front of Vouch may answer without the envelope.
    return new VouchClientError('UNEXPECTED_RESPONSE', `HTTP ${response.status} without a Vouch error body`, {
      status: response.status,
    });
  }
  const message = typeof error.message === 'string' ? error.message : `HTTP ${response.status}`;
  const requestId = typeof error.request_id === 'string' ? error.request_id : null;
  return new VouchClientError(
    isServerErrorCode(error.code) ? error.code : 'UNRECOGNIZED_SERVER_ERROR',
    message,
    {
      status: response.status,
      requestId,
      details: error.details,
      serverCode: error.code,
    },
  );
}

function parseRetryAfter(header: string | null): number | null {
  if (header === null) return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}
