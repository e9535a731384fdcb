// The console's one way to the server: same origin, the signed-in key as a bearer token,
// and every refusal as an ApiError carrying the server's code and message.

/** A refusal from the server (or no answer), with its stable code. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export interface Api {
  get<T>(path: string, query?: Record<string, string | number | undefined>): Promise<T>;
  getText(path: string, accept: string): Promise<string>;
  post<T>(path: string, body: unknown, headers?: Record<string, string>): Promise<T>;
}

export function createApi(key: string, log: () => string): Api {
  const request = async (
    method: string,
    path: string,
    init: {
      query?: Record<string, string | number | undefined>;
      body?: unknown;
      accept?: string;
      headers?: Record<string, string>;
    } = {},
  ) => {
    const url = new URL(path, window.location.origin);
    for (const [name, value] of Object.entries(init.query ?? {})) {
      if (value !== undefined && value !== '') url.searchParams.set(name, String(value));
    }
    if (path.startsWith('/v1/') && !path.startsWith('/v1/logs') && !path.startsWith('/v1/me')) {
      url.searchParams.set('log', log());
    }
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          accept: init.accept ?? 'application/json',
          ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...init.headers,
        },
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      });
    } catch (error) {
      throw new ApiError('NO_ANSWER', `the server did not answer: ${(error as Error).message}`, 0);
    }
    if (!response.ok) {
      const body = (await response.json().catch(() => null)) as {
        error?: { code?: string; message?: string };
      } | null;
      throw new ApiError(
        body?.error?.code ?? `HTTP_${response.status}`,
        body?.error?.message ?? response.statusText,
        response.status,
      );
    }
    return response;
  };
  return {
    get: async (path, query) => (await request('GET', path, query ? { query } : {})).json(),
    getText: async (path, accept) => (await request('GET', path, { accept })).text(),
    post: async (path, body, headers) =>
      (await request('POST', path, { body, ...(headers ? { headers } : {}) })).json(),
  };
}

/** The key lives in this tab's sessionStorage only: closing the tab forgets it. */
const KEY_ITEM = 'vouch.apiKey';
export const session = {
  load: (): string | null => window.sessionStorage.getItem(KEY_ITEM),
  save: (key: string) => window.sessionStorage.setItem(KEY_ITEM, key),
  clear: () => window.sessionStorage.removeItem(KEY_ITEM),
};
