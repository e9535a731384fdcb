import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import { Readable } from 'node:stream';
import { type FetchGrant, sourceForbidden, sourceUnavailable } from '@vouch/verifier-sdk';
import { type AddressPolicy, checkAddress, isAllowedHostname } from './address-policy';

/** Resolves a hostname to every address it has. Injected in tests so no real DNS is queried. */
export type ResolveHost = (hostname: string) => Promise<readonly string[]>;

/** Options for {@link createGuardedFetch}. */
export interface GuardedFetchOptions extends AddressPolicy {
  /** Hostname resolution; defaults to the system resolver (`dns.lookup`, every address). */
  resolveHost?: ResolveHost;
  /** Redirects followed when a caller asks for `redirect: 'follow'` (default 5); each hop is checked again. */
  maxRedirects?: number;
  /** Extra CA certificates (PEM) for https sources with a private CA. */
  ca?: string | readonly string[];
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const NULL_BODY = new Set([204, 205, 304]);

const systemResolve: ResolveHost = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/**
 * A `fetch` for verifiers that cannot be pointed at the inside of your network.
 *
 * For every request (and every redirect hop) it resolves the hostname, checks every address
 * against the policy, and then connects to the address it checked: the socket's `lookup` is
 * pinned, so a DNS answer that changes between check and connect (DNS rebinding) cannot slip
 * a private address in. Only GET and HEAD are allowed, because a verifier reads; a fetch grant
 * can never change anything at the source. A refusal throws `SOURCE_FORBIDDEN`; a network
 * failure throws `SOURCE_UNAVAILABLE` (both become error checks, never a `fail`).
 *
 * @example
 * const fetch = createGuardedFetch({ allowHosts: ['ledger.internal'] });
 * const res = await fetch('https://ledger.internal/refunds/re_1', { signal, redirect: 'manual' });
 */
export function createGuardedFetch(options: GuardedFetchOptions = {}): FetchGrant {
  const resolveHost = options.resolveHost ?? systemResolve;
  const maxRedirects = options.maxRedirects ?? 5;
  return async (input, init = {}) => {
    const method = (init.method ?? 'GET').toUpperCase();
    if (method !== 'GET' && method !== 'HEAD') {
      throw sourceForbidden(`a verifier's fetch only reads: ${method} is not allowed`, {
        evidence: { method },
      });
    }
    if (init.body !== undefined && init.body !== null) {
      throw sourceForbidden("a verifier's fetch sends no request body");
    }
    let url = new URL(String(input));
    let headers = new Headers(init.headers);
    for (let hop = 0; ; hop++) {
      init.signal?.throwIfAborted();
      const response = await requestOnce(url, {
        method,
        headers,
        signal: init.signal ?? undefined,
        resolveHost,
        options,
      });
      const location = response.headers.get('location');
      if (!REDIRECTS.has(response.status) || location === null || init.redirect === 'manual') return response;
      await response.body?.cancel();
      if (init.redirect === 'error')
        throw sourceUnavailable(`redirected to ${location}`, { evidence: { status: response.status } });
      if (hop >= maxRedirects) {
        throw sourceUnavailable(`more than ${maxRedirects} redirects`, { evidence: { maxRedirects } });
      }
      const next = new URL(location, url);
      // Credentials belong to the origin they were configured for, as browsers do on redirect.
      if (next.origin !== url.origin) {
        headers = new Headers(headers);
        headers.delete('authorization');
        headers.delete('cookie');
      }
      url = next;
    }
  };
}

interface RequestInput {
  method: string;
  headers: Headers;
  signal: AbortSignal | undefined;
  resolveHost: ResolveHost;
  options: GuardedFetchOptions;
}

/**
 * The address a request to `url` may connect to under the policy, checked as
 * {@link createGuardedFetch} checks it (scheme, no credentials in the URL, every address the
 * host resolves to), with a `lookup` that pins the connection to it. For senders that are not
 * verifiers (webhooks POST): the same SSRF policy, one implementation. Throws
 * `SOURCE_FORBIDDEN` for an address the policy refuses, `SOURCE_UNAVAILABLE` when the host
 * does not resolve.
 */
export async function resolvePinnedAddress(
  url: URL,
  options: AddressPolicy & { resolveHost?: ResolveHost; signal?: AbortSignal },
): Promise<{ address: string; lookup: LookupFunction }> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw sourceForbidden(`scheme ${url.protocol} is not allowed`, { evidence: { scheme: url.protocol } });
  }
  if (url.username !== '' || url.password !== '') {
    throw sourceForbidden('URLs with credentials are not allowed; configure a header instead');
  }
  const address = await pickAddress(url.hostname.replace(/^\[|\]$/g, ''), {
    resolveHost: options.resolveHost ?? systemResolve,
    options,
    signal: options.signal,
  });
  // Connect only to the address that was checked, whatever DNS says now.
  const lookup: LookupFunction = (_hostname, lookupOptions, callback) => {
    const family = isIP(address);
    if (lookupOptions.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
  return { address, lookup };
}

async function requestOnce(url: URL, input: RequestInput): Promise<Response> {
  const { lookup: pinned } = await resolvePinnedAddress(url, {
    ...input.options,
    resolveHost: input.resolveHost,
    ...(input.signal ? { signal: input.signal } : {}),
  });
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise<Response>((resolve, reject) => {
    const request = transport.request(url, {
      method: input.method,
      headers: Object.fromEntries(input.headers),
      lookup: pinned,
      agent: false,
      signal: input.signal,
      ...(url.protocol === 'https:' && input.options.ca ? { ca: [...[input.options.ca].flat()] } : {}),
    });
    request.on('error', (error) => {
      if (input.signal?.aborted) reject(input.signal.reason);
      else
        reject(
          sourceUnavailable(
            `cannot reach ${url.origin}: ${(error as NodeJS.ErrnoException).code ?? error.message}`,
            {
              evidence: { code: (error as NodeJS.ErrnoException).code ?? 'ERROR' },
              cause: error,
            },
          ),
        );
    });
    request.on('response', (incoming) => {
      const headers = new Headers();
      for (let i = 0; i < incoming.rawHeaders.length; i += 2) {
        headers.append(incoming.rawHeaders[i]!, incoming.rawHeaders[i + 1]!);
      }
      const status = incoming.statusCode ?? 0;
      const bodiless = input.method === 'HEAD' || NULL_BODY.has(status);
      if (bodiless) incoming.resume();
      const body = bodiless ? null : (Readable.toWeb(incoming) as unknown as ReadableStream<Uint8Array>);
      try {
        const response = new Response(body, { status, statusText: incoming.statusMessage ?? '', headers });
        Object.defineProperty(response, 'url', { value: url.href });
        resolve(response);
      } catch (error) {
        incoming.destroy();
        reject(
          sourceUnavailable(`unusable response status ${status}`, { evidence: { status }, cause: error }),
        );
      }
    });
    request.end();
  });
}

async function pickAddress(
  hostname: string,
  input: Pick<RequestInput, 'resolveHost' | 'signal'> & { options: AddressPolicy },
): Promise<string> {
  const policy = input.options;
  const hostAllowed = isAllowedHostname(hostname, policy);
  let addresses: readonly string[];
  if (isIP(hostname) !== 0) {
    addresses = [hostname];
  } else {
    try {
      addresses = await input.resolveHost(hostname);
    } catch (error) {
      throw sourceUnavailable(`cannot resolve ${hostname}`, {
        evidence: { host: hostname, code: (error as NodeJS.ErrnoException).code ?? 'ERROR' },
        cause: error,
      });
    }
    input.signal?.throwIfAborted();
  }
  if (addresses.length === 0)
    throw sourceUnavailable(`${hostname} has no addresses`, { evidence: { host: hostname } });
  // Every address must pass, not just the first: the connection might otherwise use another.
  for (const address of addresses) {
    const verdict = checkAddress(address, policy);
    if (!verdict.allowed && !(hostAllowed && verdict.range !== 'metadata' && verdict.range !== 'invalid')) {
      throw sourceForbidden(
        `${hostname} resolves to ${verdict.address} (${verdict.range}), which verifiers may not reach`,
        {
          evidence: { host: hostname, address: verdict.address, range: verdict.range },
        },
      );
    }
  }
  return checkAddress(addresses[0]!, policy).address;
}
