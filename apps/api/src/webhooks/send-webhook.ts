import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { signWebhook, WEBHOOK_SIGNATURE_HEADER } from '@vouch/client';
import { type ResolveHost, resolvePinnedAddress } from '@vouch/verifiers';
import type { WebhookTarget } from './webhook-config';

/** Why an attempt did not deliver. Logged and stored; never the secret or the signature. */
export type WebhookErrorCode =
  /** The target answered with a status outside 2xx (the status is logged beside it). */
  | 'HTTP_STATUS'
  /** No complete answer within the attempt's time limit. */
  | 'TIMEOUT'
  /** The connection failed (refused, reset, TLS). */
  | 'NETWORK'
  /** The SSRF policy refused the target's address: private or special, and not allow-listed. */
  | 'TARGET_FORBIDDEN'
  /** The target's hostname did not resolve. */
  | 'TARGET_UNRESOLVED';

/** What one attempt got. */
export interface WebhookSendResult {
  delivered: boolean;
  statusCode: number | null;
  errorCode: WebhookErrorCode | null;
  durationMs: number;
}

/**
 * POST one delivery to its target under the SSRF policy the http-json verifier uses (every
 * address the host resolves to must be public, or allow-listed for this target; the
 * connection is pinned to the address checked). Signed anew for this attempt: the
 * timestamp is now. Redirects are not followed: a 3xx is not a delivery.
 */
export async function sendWebhook(input: {
  target: WebhookTarget;
  body: string;
  deliveryId: string;
  event: string;
  timeoutMs: number;
  now: () => number;
  resolveHost?: ResolveHost;
}): Promise<WebhookSendResult> {
  const { target, body, timeoutMs } = input;
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const signal = AbortSignal.timeout(timeoutMs);
  let lookup: Awaited<ReturnType<typeof resolvePinnedAddress>>['lookup'];
  try {
    ({ lookup } = await resolvePinnedAddress(target.url, {
      allowHosts: target.allowHosts,
      signal,
      ...(input.resolveHost ? { resolveHost: input.resolveHost } : {}),
    }));
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (signal.aborted)
      return { delivered: false, statusCode: null, errorCode: 'TIMEOUT', durationMs: elapsed() };
    return {
      delivered: false,
      statusCode: null,
      errorCode: code === 'SOURCE_FORBIDDEN' ? 'TARGET_FORBIDDEN' : 'TARGET_UNRESOLVED',
      durationMs: elapsed(),
    };
  }
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    'user-agent': 'vouch-webhooks/1',
    'vouch-delivery': input.deliveryId,
    'vouch-event': input.event,
  };
  if (target.secret !== undefined) {
    headers[WEBHOOK_SIGNATURE_HEADER.toLowerCase()] = await signWebhook({
      secret: target.secret,
      body,
      timestamp: Math.floor(input.now() / 1000),
    });
  }
  const transport = target.url.protocol === 'https:' ? https : http;
  return new Promise<WebhookSendResult>((resolve) => {
    const request = transport.request(target.url, { method: 'POST', headers, lookup, agent: false, signal });
    request.on('error', () => {
      resolve({
        delivered: false,
        statusCode: null,
        errorCode: signal.aborted ? 'TIMEOUT' : 'NETWORK',
        durationMs: elapsed(),
      });
    });
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      // The answer's body is not needed (and not stored): drain it so the socket closes.
      response.resume();
      response.on('end', () => {
        const delivered = status >= 200 && status < 300;
        resolve({
          delivered,
          statusCode: status,
          errorCode: delivered ? null : 'HTTP_STATUS',
          durationMs: elapsed(),
        });
      });
      response.on('error', () => {
        resolve({
          delivered: false,
          statusCode: status,
          errorCode: signal.aborted ? 'TIMEOUT' : 'NETWORK',
          durationMs: elapsed(),
        });
      });
    });
    request.end(body);
  });
}
