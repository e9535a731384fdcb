import { describe, expect, it } from 'vitest';
import { clientCredentialsTokens } from './client-credentials';

/** A token endpoint as a `fetch`: answers `tok-<n>` valid for `expiresIn` seconds, and counts requests. */
function endpoint(
  answer: (n: number) => { status: number; body: unknown } = (n) => ({
    status: 200,
    body: { access_token: `tok-${n}`, token_type: 'bearer', expires_in: 120 },
  }),
) {
  const bodies: string[] = [];
  const fetch: typeof globalThis.fetch = async (_url, init) => {
    bodies.push(String(init?.body));
    const { status, body } = answer(bodies.length);
    return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  };
  return { fetch, bodies };
}

const client = { tokenUrl: 'http://auth.test/token', clientId: 'gw', clientSecret: 'hush', scope: 'a b' };

describe('clientCredentialsTokens', () => {
  it('keeps a token until shortly before it expires, then fetches a new one', async () => {
    let now = 0;
    const { fetch, bodies } = endpoint();
    const tokens = clientCredentialsTokens(client, { fetch, now: () => now });
    expect(await tokens.token()).toBe('tok-1');
    now = 60_000;
    expect(await tokens.token()).toBe('tok-1');
    // 120 s lifetime, 30 s margin: at 90 s the token is no longer used.
    now = 90_000;
    expect(await tokens.token()).toBe('tok-2');
    expect(bodies).toEqual([
      'grant_type=client_credentials&scope=a+b',
      'grant_type=client_credentials&scope=a+b',
    ]);
  });

  it('shares one token request between concurrent callers', async () => {
    const { fetch, bodies } = endpoint();
    const tokens = clientCredentialsTokens(client, { fetch, now: () => 0 });
    expect(await Promise.all([tokens.token(), tokens.token(), tokens.token()])).toEqual([
      'tok-1',
      'tok-1',
      'tok-1',
    ]);
    expect(bodies).toHaveLength(1);
  });

  it('forgets a refused token only if it is the one it holds', async () => {
    const { fetch } = endpoint();
    const tokens = clientCredentialsTokens(client, { fetch, now: () => 0 });
    expect(await tokens.token()).toBe('tok-1');
    tokens.invalidate('tok-0');
    expect(await tokens.token()).toBe('tok-1');
    tokens.invalidate('tok-1');
    expect(await tokens.token()).toBe('tok-2');
  });

  it.each([
    [{ status: 400, body: { error: 'invalid_scope', error_description: 'hush' } }, 'invalid_scope'],
    [{ status: 200, body: { access_token: 'x', token_type: 'mac' } }, 'bearer access token'],
    [{ status: 200, body: { token_type: 'bearer' } }, 'bearer access token'],
  ])(
    'refuses the answer %j with UPSTREAM_AUTH_FAILED (%s), never repeating the secret',
    async (answer, says) => {
      const { fetch } = endpoint(() => answer);
      const error = await clientCredentialsTokens(client, { fetch })
        .token()
        .catch((e: Error) => e);
      expect(error).toMatchObject({ code: 'UPSTREAM_AUTH_FAILED', message: expect.stringContaining(says) });
      expect((error as Error).message).not.toContain('hush');
    },
  );
});
