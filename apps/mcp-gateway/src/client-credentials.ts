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

/**
 * Fetch tokens with the client-credentials grant, authenticating with HTTP Basic
 * (`client_secret_basic`). Concurrent callers share one token request. Errors name the
 * endpoint's status and OAuth error code, never the secret or the token.
 */
export function clientCredentialsTokens(
  client: ClientCredentials,
  options: { fetch?: typeof fetch; now?: () => number } = {},
): TokenSource {
  const fetchImpl = options.fetch ?? fetch;
  const now = options.now ?? Date.now;
  let cached: { token: string; expiresAt: number } | undefined;
  let inflight: Promise<string> | undefined;

  const request = async (): Promise<string> => {
    const body = new URLSearchParams({ grant_type: 'client_credentials' });
    if (client.scope) body.set('scope', client.scope);
    if (client.resource) body.set('resource', client.resource);
    const basic = Buffer.from(
      `${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`,
    ).toString('base64');
    let response: Response;
    try {
      response = await fetchImpl(client.tokenUrl, {
        method: 'POST',
        headers: {
          authorization: `Basic ${basic}`,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: body.toString(),
      });
    } catch (cause) {
      throw new GatewayError('UPSTREAM_AUTH_FAILED', `cannot reach the token endpoint ${client.tokenUrl}`, {
        cause,
      });
    }
    const answer = (await response.json().catch(() => null)) as Record<string, unknown> | null;
    if (!response.ok) {
      const code = typeof answer?.error === 'string' ? answer.error : 'no OAuth error code';
      throw new GatewayError(
        'UPSTREAM_AUTH_FAILED',
        `the token endpoint ${client.tokenUrl} refused the client credentials (${response.status}, ${code})`,
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
        `the token endpoint ${client.tokenUrl} did not answer with a bearer access token`,
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
