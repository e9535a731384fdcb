import { AuditError } from './errors';
import {
  createHttpTransport,
  type Deadline,
  type ErrorEnvelope,
  type HttpFetch,
  type HttpResponse,
  type HttpTransport,
  type RetryOptions,
  readErrorEnvelope,
} from './http-transport';
import { MERKLE_HASH_SIZE } from './merkle-hash';

// How a witness talks to a Vouch server: only the read routes every auditor key may call
// (`/checkpoint`, `/export`, `/proofs/consistency`), through the one HTTP transport
// (http-transport.ts: time limits, retries of these GETs) over a fetch the caller passes in,
// so the same code runs in Node, a browser or a test that answers from `app.request`.
//
// Every answer is classified once, here:
// - 404, 410 and 451 (gone, unavailable for legal reasons): the server withholds something
//   it must serve. That is a verdict (the caller returns `WITHHELD`), never "try again
//   later": a cron job that reads a transient failure as harmless would otherwise never
//   raise the alarm. The one exception is the caller's to make: at first use nothing was
//   promised yet (see `witnessLog`).
// - no answer, 5xx, 429 (once the transport's retries ran out): `AuditError`
//   `SERVER_UNREACHABLE` (nothing concluded).
// - 400, 401, 403 and other refusals: `AuditError` `SERVER_REFUSED` (fix the key or the
//   log name; nothing concluded).

/** The part of a `fetch` Response a witness reads; the global `fetch` satisfies it. */
export type WitnessResponse = HttpResponse;

/** A fetch-like transport: `globalThis.fetch`, or anything that answers the same way. */
export type WitnessFetch = HttpFetch;

/** Where the log lives and how to ask for it. */
export interface WitnessServer {
  /** Base URL of the Vouch server, e.g. `https://vouch.example` (no trailing slash needed). */
  url: string;
  /** An API key with the auditor role for this log. */
  apiKey: string;
  log: string;
  fetch: WitnessFetch;
  signal?: AbortSignal;
  /** Per-attempt time limit in milliseconds (default 30 000); a streamed body may take longer. */
  timeoutMs?: number;
  retry?: RetryOptions;
}

/** The server and the one transport every request of a check goes through. */
interface Connection {
  transport: HttpTransport<HttpResponse>;
  log: string;
  signal?: AbortSignal;
}

/** Open the connection a witness check reads through. */
export function connect(server: WitnessServer): Connection {
  return {
    transport: createHttpTransport({
      baseUrl: server.url,
      apiKey: server.apiKey,
      fetch: server.fetch,
      ...(server.timeoutMs === undefined ? {} : { timeoutMs: server.timeoutMs }),
      ...(server.retry === undefined ? {} : { retry: server.retry }),
    }),
    log: server.log,
    ...(server.signal ? { signal: server.signal } : {}),
  };
}

/** An answer the server owes and did not give (HTTP 404). */
export interface Withheld {
  withheld: true;
  /** What was asked for, e.g. "the latest checkpoint". */
  what: string;
  /** The server's own error code and message, when it sent one. */
  reason: string;
  /**
   * The server's error code (`LOG_NOT_FOUND`: no such log; `NOT_FOUND`: nothing at that
   * size yet), or null when the 404 was not in Vouch's error shape (not a Vouch route).
   */
  code: string | null;
}

const withheldAnswer = (what: string, answer: ErrorAnswer): Withheld => ({
  withheld: true,
  what,
  reason: answer.reason,
  code: answer.code,
});

/** True for the `Withheld` answer of one of the requests below. */
export function isWithheld(value: unknown): value is Withheld {
  return typeof value === 'object' && value !== null && (value as Withheld).withheld === true;
}

interface Answer {
  response: HttpResponse;
  deadline: Deadline;
}

/** Answers that say the server will not serve it: not found, gone, unavailable for legal reasons. */
const WITHHELD_STATUSES = new Set([404, 410, 451]);

async function request(
  server: Connection,
  path: string,
  query: Record<string, number> | undefined,
  accept: string,
  what: string,
): Promise<Answer | Withheld> {
  const { transport } = server;
  const sent = await transport.send({
    method: 'GET',
    path: `/v1/logs/${encodeURIComponent(server.log)}${path}`,
    ...(query ? { query } : {}),
    accept,
    retry: 'safe',
    ...(server.signal ? { signal: server.signal } : {}),
  });
  if (sent.kind === 'aborted') throw sent.reason;
  if (sent.kind === 'failed') {
    const why = sent.timedOut ? `no answer within ${transport.timeoutMs} ms` : (sent.cause as Error)?.message;
    throw new AuditError('SERVER_UNREACHABLE', `cannot reach ${transport.baseUrl}: ${why}`, {
      cause: sent.cause,
    });
  }
  const { response, deadline } = sent;
  if (response.status >= 200 && response.status < 300) return { response, deadline };
  let envelope: ErrorEnvelope | null;
  try {
    envelope = await readErrorEnvelope(response);
  } finally {
    deadline.release();
  }
  const answer: ErrorAnswer = envelope
    ? { code: envelope.code, reason: `${envelope.code}: ${envelope.message ?? `HTTP ${response.status}`}` }
    : { code: null, reason: `HTTP ${response.status}` };
  if (WITHHELD_STATUSES.has(response.status)) return withheldAnswer(what, answer);
  const code = response.status >= 500 || response.status === 429 ? 'SERVER_UNREACHABLE' : 'SERVER_REFUSED';
  throw new AuditError(code, `the server did not answer ${what} of log ${server.log} (${answer.reason})`);
}

interface ErrorAnswer {
  code: string | null;
  reason: string;
}

/** Read a whole body within the time limit, turning a transfer that breaks off into `SERVER_UNREACHABLE`. */
async function readText({ response, deadline }: Answer, base: string): Promise<string> {
  try {
    return await response.text();
  } catch (error) {
    throw new AuditError(
      'SERVER_UNREACHABLE',
      `the answer from ${base} broke off: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  } finally {
    deadline.release();
  }
}

/** The log's latest signed checkpoint note (`Accept: text/plain`), or `Withheld`. */
export async function fetchLatestCheckpoint(server: Connection): Promise<string | Withheld> {
  const answer = await request(server, '/checkpoint', undefined, 'text/plain', 'the latest checkpoint');
  return isWithheld(answer) ? answer : readText(answer, server.transport.baseUrl);
}

/**
 * The RFC 9162 consistency proof from `first` to `second` events, or `Withheld`. Nodes
 * that are not 64 lowercase hex digits come back empty, which `verifyConsistency` refuses
 * as malformed: the server is not trusted to send well-formed proofs either.
 */
export async function fetchConsistencyProof(
  server: Connection,
  first: number,
  second: number,
): Promise<Uint8Array[] | Withheld> {
  const answer = await request(
    server,
    '/proofs/consistency',
    { first, second },
    'application/json',
    `a consistency proof from ${first} to ${second} events`,
  );
  if (isWithheld(answer)) return answer;
  let body: { proof?: unknown };
  try {
    body = JSON.parse(await readText(answer, server.transport.baseUrl)) as { proof?: unknown };
  } catch {
    body = {};
  }
  const proof = Array.isArray(body?.proof) ? body.proof : [new Uint8Array(0)];
  return proof.map((node) => (typeof node === 'string' ? hexNode(node) : new Uint8Array(0)));
}

function hexNode(text: string): Uint8Array {
  if (!/^[0-9a-f]+$/.test(text) || text.length !== MERKLE_HASH_SIZE * 2) return new Uint8Array(0);
  const bytes = new Uint8Array(MERKLE_HASH_SIZE);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

/**
 * The log's events as the server serves them (`/export`, JSON Lines in seq order), one
 * line at a time and at most `limit` lines: the body is read in chunks and cancelled
 * once `limit` lines were yielded (or the consumer stops), so memory does not grow with
 * the log. `Withheld` when the server answers 404. A body that breaks off mid-way throws
 * `SERVER_UNREACHABLE`; one that ends early is simply fewer lines, which the caller judges.
 */
export async function fetchEventLines(
  server: Connection,
  limit: number,
): Promise<AsyncGenerator<string> | Withheld> {
  const answer = await request(server, '/export', undefined, 'application/jsonl', 'its events');
  if (isWithheld(answer)) return answer;
  // The headers came in time; the events stream for as long as they take, as long as they
  // move: a body that stalls for the request time limit is no answer.
  answer.deadline.stop();
  return eventLines(answer.response, limit, server.transport.baseUrl, server.transport.timeoutMs);
}

async function* eventLines(
  response: HttpResponse,
  limit: number,
  base: string,
  idleMs: number,
): AsyncGenerator<string> {
  const reader = response.body?.getReader();
  if (reader === undefined) return;
  // Invalid UTF-8 becomes U+FFFD, which cannot hash to what the ledger hashed: the chain
  // check reports the line rather than this reader guessing what was meant.
  const decoder = new TextDecoder();
  let yielded = 0;
  let pending = '';
  try {
    while (yielded < limit) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const stalled = new Promise<'stalled'>((resolve) => {
        timer = setTimeout(() => resolve('stalled'), idleMs);
      });
      const read = reader.read();
      let chunk: { done: boolean; value?: Uint8Array } | 'stalled';
      try {
        chunk = await Promise.race([read, stalled]);
      } catch (error) {
        throw new AuditError(
          'SERVER_UNREACHABLE',
          `the events from ${base} broke off after ${yielded}: ${(error as Error).message}`,
          { cause: error },
        );
      } finally {
        clearTimeout(timer);
      }
      if (chunk === 'stalled') {
        read.catch(() => {});
        throw new AuditError(
          'SERVER_UNREACHABLE',
          `the events from ${base} stalled after ${yielded}: nothing came for ${idleMs} ms`,
        );
      }
      pending += chunk.done ? decoder.decode() : decoder.decode(chunk.value, { stream: true });
      let newline = pending.indexOf('\n');
      let start = 0;
      while (newline >= 0 && yielded < limit) {
        yield pending.slice(start, newline);
        yielded++;
        start = newline + 1;
        newline = pending.indexOf('\n', start);
      }
      pending = pending.slice(start);
      if (chunk.done) {
        if (pending !== '' && yielded < limit) yield pending;
        return;
      }
    }
  } finally {
    // Stop the transfer: the rest of the log is past the checkpoint being checked.
    await reader.cancel().catch(() => {});
  }
}
