// The one way to reach a Vouch server over HTTP: the witness here reads through it, and
// @vouch/client builds its typed API client on it. It lives in this package because the
// witness must run with nothing but @vouch/audit (in a browser too), and the client already
// depends on audit, never the other way.
//
// It owns what every caller needs alike: the base URL and bearer key, a time limit per
// attempt, retries with backoff (and the server's Retry-After) for requests that are safe to
// send again, and reading the server's error envelope. Answers come back as values, any status
// included, so each caller says what they mean in its own terms (the client: a typed error;
// the witness: a verdict such as WITHHELD). Only fetch, AbortController and timers.

/** The part of a fetch `Response` the transport and its callers read; the global `fetch`'s satisfies it. */
export interface HttpResponse {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  text(): Promise<string>;
  readonly body: {
    getReader(): {
      read(): Promise<{ done: boolean; value?: Uint8Array }>;
      cancel(reason?: unknown): Promise<void>;
    };
  } | null;
}

/** A fetch: `globalThis.fetch`, or anything that answers the same way (a test stub, `app.request`). */
export type HttpFetch<R extends HttpResponse = HttpResponse> = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string; signal: AbortSignal },
) => Promise<R>;

/** How requests that are safe to send again are retried. */
export interface RetryOptions {
  /** Attempts in total, the first included (default 3; 1 turns retries off). */
  attempts?: number;
  /** Backoff base in milliseconds (default 100). */
  minDelayMs?: number;
  /** Longest wait between attempts, also for a server's `Retry-After` (default 2000). */
  maxDelayMs?: number;
}

/** Where the server is and how to reach it. */
export interface HttpTransportOptions<R extends HttpResponse> {
  /** The server's base URL, e.g. `http://127.0.0.1:8787` (a path prefix is kept). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey: string;
  fetch: HttpFetch<R>;
  /** Per-attempt time limit in milliseconds (default 30 000). */
  timeoutMs?: number;
  retry?: RetryOptions;
}

/**
 * Whether a request may be sent again after a failure that leaves its fate unknown.
 * `safe`: reading (GET), or a POST the server deduplicates (it carries an idempotency key).
 * `never`: anything else.
 */
export type RetryPolicy = 'safe' | 'never';

/** One request, before the base URL and credentials are added. */
export interface HttpRequest {
  method: 'GET' | 'POST';
  /** Path with its segments already encoded. */
  path: string;
  query?: Record<string, string | number | undefined>;
  /** Sent as JSON. */
  body?: unknown;
  retry: RetryPolicy;
  signal?: AbortSignal;
  /** Default `application/json`. */
  accept?: string;
  /** More headers (e.g. an author's `Vouch-Signature`); never `authorization`, which the transport sets. */
  headers?: Record<string, string>;
}

/** One attempt's time limit: over the request, and over the body for as long as the caller wants. */
export interface Deadline {
  /** True once the time ran out (the request or its body was aborted for it). */
  expired(): boolean;
  /** Stop the clock: a streamed body may take as long as it takes (the caller's signal still aborts it). */
  stop(): void;
  /** Stop the clock and let go of the caller's signal. */
  release(): void;
}

/** What came of a request, after any retries. */
export type Sent<R> =
  /** The server answered: any status (an error status once the retries ran out). */
  | { kind: 'answered'; response: R; deadline: Deadline }
  /** No answer: the connection failed, or the time limit ran out (`timedOut`). */
  | { kind: 'failed'; cause: unknown; timedOut: boolean }
  /** The caller's signal fired. */
  | { kind: 'aborted'; reason: unknown };

export interface HttpTransport<R extends HttpResponse> {
  /** The base URL without a trailing slash, for messages. */
  readonly baseUrl: string;
  readonly timeoutMs: number;
  send(request: HttpRequest): Promise<Sent<R>>;
}

// Statuses that say "not now" rather than "no": the request was not acted on, or is safe to repeat.
const RETRYABLE_STATUSES = new Set([408, 425, 429, 502, 503, 504]);

/** Build the transport. */
export function createHttpTransport<R extends HttpResponse>(
  options: HttpTransportOptions<R>,
): HttpTransport<R> {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 30_000;
  const attempts = Math.max(1, options.retry?.attempts ?? 3);
  const minDelayMs = options.retry?.minDelayMs ?? 100;
  const maxDelayMs = options.retry?.maxDelayMs ?? 2000;

  async function attemptOnce(
    url: string,
    init: { method: string; headers: Record<string, string>; body?: string },
    signal: AbortSignal | undefined,
  ): Promise<{ response: R; deadline: Deadline } | { cause: unknown; timedOut: boolean }> {
    const deadline = deadlineFor(timeoutMs, signal);
    try {
      const response = await options.fetch(url, { ...init, signal: deadline.signal });
      return { response, deadline };
    } catch (cause) {
      deadline.release();
      return { cause, timedOut: deadline.expired() };
    }
  }

  return {
    baseUrl,
    timeoutMs,
    async send(request): Promise<Sent<R>> {
      const url = baseUrl + request.path + queryString(request.query);
      const headers: Record<string, string> = {
        ...request.headers,
        authorization: `Bearer ${options.apiKey}`,
        accept: request.accept ?? 'application/json',
      };
      let body: string | undefined;
      if (request.body !== undefined) {
        headers['content-type'] = 'application/json';
        body = JSON.stringify(request.body);
      }
      const { signal } = request;
      const maxAttempts = request.retry === 'safe' ? attempts : 1;
      for (let attempt = 0; ; attempt++) {
        if (signal?.aborted) return { kind: 'aborted', reason: signal.reason };
        const answer = await attemptOnce(
          url,
          { method: request.method, headers, ...(body === undefined ? {} : { body }) },
          signal,
        );
        const last = attempt + 1 >= maxAttempts;
        let retryAfterMs: number | null = null;
        if ('response' in answer) {
          const { response, deadline } = answer;
          if (last || !RETRYABLE_STATUSES.has(response.status))
            return { kind: 'answered', response, deadline };
          retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
          // Let the connection go before waiting.
          await response.text().catch(() => {});
          deadline.release();
        } else {
          if (signal?.aborted) return { kind: 'aborted', reason: signal.reason };
          // The request may or may not have reached the server: only a `safe` one is sent again.
          if (last) return { kind: 'failed', cause: answer.cause, timedOut: answer.timedOut };
        }
        const wait = Math.min(maxDelayMs, retryAfterMs ?? backoffDelay(attempt, { minDelayMs, maxDelayMs }));
        if (!(await sleep(wait, signal))) return { kind: 'aborted', reason: signal!.reason };
      }
    },
  };
}

/** The server's error envelope `{ error: { code, message, details?, request_id? } }`. */
export interface ErrorEnvelope {
  code: string;
  message: string | null;
  details: unknown;
  requestId: string | null;
}

/** Read an error answer's envelope; null when it has none (a proxy's page, a body that broke off). */
export async function readErrorEnvelope(response: HttpResponse): Promise<ErrorEnvelope | null> {
  let envelope: unknown;
  try {
    envelope = JSON.parse(await response.text());
  } catch {
    // Not JSON, or the body broke off: either way there is no envelope to read.
    return null;
  }
  const error = (envelope as { error?: unknown } | null)?.error as
    | { code?: unknown; message?: unknown; details?: unknown; request_id?: unknown }
    | undefined;
  if (!error || typeof error.code !== 'string') return null;
  return {
    code: error.code,
    message: typeof error.message === 'string' ? error.message : null,
    details: error.details,
    requestId: typeof error.request_id === 'string' ? error.request_id : null,
  };
}

/**
 * Exponential backoff with full jitter: a random wait in [0, min(max, base * 2^attempt)], so
 * many clients retrying after one outage do not arrive in lockstep.
 */
export function backoffDelay(
  attempt: number,
  options: { minDelayMs: number; maxDelayMs: number; random?: () => number },
): number {
  const ceiling = Math.min(options.maxDelayMs, options.minDelayMs * 2 ** attempt);
  return Math.round((options.random ?? Math.random)() * ceiling);
}

/** Wait `ms`; false as soon as `signal` fires instead. Timers only. */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A timer, not `AbortSignal.timeout`, so a streamed body can outlive it once the headers arrived. */
function deadlineFor(timeoutMs: number, outer: AbortSignal | undefined): Deadline & { signal: AbortSignal } {
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
    stop: () => clearTimeout(timer),
    release: () => {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
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

function parseRetryAfter(header: string | null): number | null {
  if (header === null) return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}
