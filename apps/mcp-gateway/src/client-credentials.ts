import { GatewayError } from './errors';

/** An OAuth 2 client registered for the client-credentials grant (RFC 6749 §4.4). */
export interface ClientCredentials {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  scope?: string;
  /** RFC 8707 resource indicator. */
  resource?: string;
}

/** Access tokens for one client: cached until they expire, fetched again after a refusal. */
export interface TokenSource {
  /** A valid access token, from the cache or the token endpoint. */
  token(): Promise<string>;
  /** The upstream refused `token` (401): forget it, so the next `token()` fetches a new one. */
  invalidate(token: string): void;
}

// A token this close to its expiry is not used: the request could arrive after it.
const EXPIRY_MARGIN_MS = 30_000;
// A token answer is a small JSON object; anything larger is not read to its end.
const MAX_ANSWER_BYTES = 64 * 1024;
const DEFAULT_TIMEOUT_MS = 10_000;

/** The token endpoint as errors name it: no user info, query or fragment (they may hold secrets). */
export function endpointLabel(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return 'the configured URL';
  }
}

/** The body of `response` as JSON, or null when it is not JSON or longer than `limit` bytes. */
async function boundedJson(response: Response, limit: number): Promise<Record<string, unknown> | null> {
  if (!response.body) return null;
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  try {
    const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * Fetch tokens with the client-credentials grant, authenticating with HTTP Basic
 * (`client_secret_basic`). Concurrent callers share one token request. The request follows
 * no redirect (the secret goes to the configured endpoint only), gives up after `timeoutMs`
 * and reads at most 64 KiB of the answer. Errors name the endpoint's status and OAuth error
 * code, never the secret or the token.
 */
export function clientCredentialsTokens(
  client: ClientCredentials,
  options: { fetch?: typeof fetch; now?: () => number; timeoutMs?: number } = {},
): TokenSource {
  const fetchImpl = options.fetch ?? fetch;
  const now = options.now ?? Date.now;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const endpoint = endpointLabel(client.tokenUrl);
  let cached: { token: string; expiresAt: number } | undefined;
  let inflight: Promise<string> | undefined;

  const request = async (): Promise<string> => {
    const body = new URLSearchParams({ grant_type: 'client_credentials' });
    if (client.scope) body.set('scope', client.scope);
    if (client.resource) body.set('resource', client.resource);
    const basic = Buffer.from(
      `${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`,
    ).toString('base64');
    const signal = AbortSignal.timeout(timeoutMs);
    let response: Response;
    let answer: Record<string, unknown> | null;
    try {
      response = await fetchImpl(client.tokenUrl, {
        method: 'POST',
        headers: {
          authorization: `Basic ${basic}`,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: body.toString(),
        redirect: 'error',
        signal,
      });
      answer = await boundedJson(response, MAX_ANSWER_BYTES);
    } catch (cause) {
      throw new GatewayError('UPSTREAM_AUTH_FAILED', `cannot reach the token endpoint ${endpoint}`, {
        cause,
      });
    }
    if (!response.ok) {
      const code = typeof answer?.error === 'string' ? answer.error : 'no OAuth error code';
      throw new GatewayError(
        'UPSTREAM_AUTH_FAILED',
        `the token endpoint ${endpoint} refused the client credentials (${response.status}, ${code})`,
        { details: { status: response.status, error: code } },
      );
    }
    const token = answer?.access_token;
    const type = answer?.token_type;
    if (
      typeof token !== 'string' ||
      token === '' ||
      typeof type !== 'string' ||
      type.toLowerCase() !== 'bearer'
    ) {
      throw new GatewayError(
        'UPSTREAM_AUTH_FAILED',
        `the token endpoint ${endpoint} did not answer with a bearer access token`,
      );
    }
    const lifetime =
      typeof answer?.expires_in === 'number' ? answer.expires_in * 1000 : Number.POSITIVE_INFINITY;
    cached = { token, expiresAt: now() + lifetime - EXPIRY_MARGIN_MS };
    return token;
  };

  return {
    token() {
      if (cached && now() < cached.expiresAt) return Promise.resolve(cached.token);
      inflight ??= request().finally(() => {
        inflight = undefined;
      });
      return inflight;
    },
    invalidate(token) {
      if (cached?.token === token) cached = undefined;
    },
  };
}
