import type { TokenSource } from './client-credentials';

/**
 * The `fetch` an HTTP upstream transport uses: every request (the SSE stream too) carries
 * the configured headers and, with a token source, `Authorization: Bearer <token>`. When the
 * upstream answers 401 to a token it fetched, the request is sent once more with a new token
 * (the old one was revoked or expired early). With headers or a token, no redirect is followed.
 */
export function upstreamFetch(options: {
  headers: Readonly<Record<string, string>>;
  tokens?: TokenSource;
  /** Whether a 401 may be answered with a new token (an OAuth token source; not a static token). */
  refreshOn401?: boolean;
  fetch?: typeof fetch;
}): typeof fetch {
  const fetchImpl = options.fetch ?? fetch;
  const secretsSent = Object.keys(options.headers).length > 0 || options.tokens !== undefined;
  const send = async (input: string | URL | Request, init: RequestInit | undefined) => {
    const headers = new Headers(init?.headers);
    for (const [name, value] of Object.entries(options.headers)) headers.set(name, value);
    const token = options.tokens ? await options.tokens.token() : undefined;
    if (token !== undefined) headers.set('authorization', `Bearer ${token}`);
    // A redirect would carry the headers (a secret among them, maybe) to wherever it points:
    // fetch drops only Authorization and Cookie across origins. With credentials, none is followed.
    const redirect = secretsSent ? ('error' as const) : init?.redirect;
    return {
      response: await fetchImpl(input, { ...init, headers, ...(redirect ? { redirect } : {}) }),
      token,
    };
  };
  return async (input, init) => {
    const first = await send(input, init);
    if (first.response.status !== 401 || !options.refreshOn401 || first.token === undefined) {
      return first.response;
    }
    options.tokens?.invalidate(first.token);
    await first.response.body?.cancel().catch(() => {});
    return (await send(input, init)).response;
  };
}
