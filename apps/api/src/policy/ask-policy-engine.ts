import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import type { ProposalRecord } from '@vouch/ledger';
import { type ResolveHost, resolvePinnedAddress } from '@vouch/verifiers';
import type { PolicyEngineSettings } from '../settings/server-settings';
import { type EngineAnswer, readEngineAnswer } from './engine-answer';

/**
 * Why the engine gave no usable answer. Logged and counted; never the token. Every one leaves
 * the proposal undecided (never an allow): the retry loop asks again.
 */
export type PolicyEngineErrorCode =
  /** No complete answer within `timeoutMs`. */
  | 'ENGINE_TIMEOUT'
  /** The connection failed (refused, reset, TLS). */
  | 'ENGINE_UNREACHABLE'
  /** The SSRF guard refused the engine's address (it changed since startup, e.g. DNS). */
  | 'ENGINE_FORBIDDEN'
  /** The engine's hostname did not resolve. */
  | 'ENGINE_UNRESOLVED'
  /** The engine answered with a status outside 2xx. */
  | 'ENGINE_HTTP_STATUS'
  /** The answer is not JSON, too large, or not a decision (see `engine-answer.ts`). */
  | 'ENGINE_ANSWER_INVALID';

/** What one question to the engine got: a decision, or why not. */
export type EngineReply =
  | { ok: true; answer: EngineAnswer; durationMs: number }
  | {
      ok: false;
      code: PolicyEngineErrorCode;
      message: string;
      statusCode: number | null;
      durationMs: number;
    };

/** The largest answer read from the engine; a decision is small. */
export const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * Ask the engine about one proposal, OPA-style: `POST decisionUrl` with
 * `{"input": {"log", "proposal"}}`, the answer's `result` read by {@link readEngineAnswer}.
 * The connection goes through the SSRF guard the verifiers and webhooks use (every address the
 * host resolves to is checked, then the socket is pinned to it); redirects are not followed.
 * The token (when set) is sent in its header and appears in nothing this returns.
 */
export async function askPolicyEngine(input: {
  engine: PolicyEngineSettings;
  log: string;
  proposal: ProposalRecord;
  resolveHost?: ResolveHost;
}): Promise<EngineReply> {
  const { engine } = input;
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const failed = (code: PolicyEngineErrorCode, message: string, statusCode: number | null = null) =>
    ({ ok: false, code, message, statusCode, durationMs: elapsed() }) as const;
  const url = new URL(engine.decisionUrl);
  const signal = AbortSignal.timeout(engine.timeoutMs);
  let lookup: Awaited<ReturnType<typeof resolvePinnedAddress>>['lookup'];
  try {
    ({ lookup } = await resolvePinnedAddress(url, {
      allowHosts: engine.allowHosts,
      signal,
      ...(input.resolveHost ? { resolveHost: input.resolveHost } : {}),
    }));
  } catch (error) {
    if (signal.aborted) return failed('ENGINE_TIMEOUT', timeoutMessage(engine));
    return (error as { code?: unknown }).code === 'SOURCE_FORBIDDEN'
      ? failed('ENGINE_FORBIDDEN', `${url.hostname} resolves to an address the SSRF guard refuses`)
      : failed('ENGINE_UNRESOLVED', `cannot resolve ${url.hostname}`);
  }
  const body = JSON.stringify({ input: { log: input.log, proposal: input.proposal } });
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    'user-agent': 'vouch-policy/1',
    'vouch-proposal': input.proposal.id,
  };
  if (engine.token) {
    headers[engine.token.header] =
      engine.token.header === 'authorization' ? `Bearer ${engine.token.value}` : engine.token.value;
  }
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise<EngineReply>((resolve) => {
    const request = transport.request(url, { method: 'POST', headers, lookup, agent: false, signal });
    request.on('error', (error) => {
      resolve(
        signal.aborted
          ? failed('ENGINE_TIMEOUT', timeoutMessage(engine))
          : failed(
              'ENGINE_UNREACHABLE',
              `cannot reach ${url.origin}: ${(error as NodeJS.ErrnoException).code ?? 'connection failed'}`,
            ),
      );
    });
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let size = 0;
      let tooLarge = false;
      response.on('data', (chunk: Buffer) => {
        size += chunk.byteLength;
        if (size > MAX_ANSWER_BYTES) {
          tooLarge = true;
          response.destroy();
          return;
        }
        chunks.push(chunk);
      });
      const finish = () => {
        if (tooLarge) {
          resolve(
            failed('ENGINE_ANSWER_INVALID', `the answer is larger than ${MAX_ANSWER_BYTES} bytes`, status),
          );
          return;
        }
        if (status < 200 || status > 299) {
          resolve(failed('ENGINE_HTTP_STATUS', `the engine answered HTTP ${status}`, status));
          return;
        }
        const read = readEngineAnswer(Buffer.concat(chunks).toString('utf8'));
        resolve(
          read.ok
            ? { ok: true, answer: read.answer, durationMs: elapsed() }
            : failed('ENGINE_ANSWER_INVALID', read.message, status),
        );
      };
      response.on('end', finish);
      response.on('close', () => {
        if (tooLarge) finish();
      });
      response.on('error', () => {
        if (tooLarge) return;
        resolve(
          signal.aborted
            ? failed('ENGINE_TIMEOUT', timeoutMessage(engine))
            : failed('ENGINE_UNREACHABLE', `the answer from ${url.origin} broke off`, status),
        );
      });
    });
    request.end(body);
  });
}

function timeoutMessage(engine: PolicyEngineSettings): string {
  return `no answer within ${engine.timeoutMs} ms`;
}
