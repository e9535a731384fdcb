import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort, sendJson, startServer, type TestServer } from '../test-support/http-server';
import { createGuardedFetch, type ResolveHost } from './guarded-fetch';

// No test here ever queries real DNS: every hostname goes through an injected resolver.
function resolver(table: Record<string, string[]>) {
  const calls: string[] = [];
  const resolveHost: ResolveHost = async (hostname) => {
    calls.push(hostname);
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return addresses;
  };
  return { resolveHost, calls };
}

let server: TestServer;
beforeAll(async () => {
  server = await startServer((req, res) => {
    if (req.url === '/to-private') {
      res.writeHead(302, { location: 'http://10.0.0.7/secret' }).end();
    } else if (req.url === '/to-metadata-name') {
      res.writeHead(302, { location: 'http://metadata.test/latest/meta-data' }).end();
    } else if (req.url === '/to-other-origin') {
      res.writeHead(307, { location: `http://ledger.test:${server.port}/echo` }).end();
    } else if (req.url === '/loop') {
      res.writeHead(302, { location: '/loop' }).end();
    } else if (req.url === '/echo') {
      sendJson(res, 200, { host: req.headers.host, authorization: req.headers.authorization ?? null });
    } else {
      sendJson(res, 200, { ok: true });
    }
  });
});
afterAll(() => server.close());

describe('createGuardedFetch', () => {
  describe('when the URL is a loopback address and nothing is allowed', () => {
    it('refuses with SOURCE_FORBIDDEN before connecting', async () => {
      const before = server.requests.length;
      await expect(createGuardedFetch()(`${server.url}/`)).rejects.toMatchObject({
        name: 'VerifierError',
        code: 'SOURCE_FORBIDDEN',
        evidence: { range: 'loopback' },
      });
      expect(server.requests.length).toBe(before);
    });
  });

  describe('when loopback is explicitly allowed', () => {
    it('fetches', async () => {
      const res = await createGuardedFetch({ allowHosts: ['127.0.0.1'] })(`${server.url}/`);
      expect(await res.json()).toEqual({ ok: true });
    });
  });

  describe('when a hostname resolves to a forbidden address', () => {
    it.each([
      ['a private address', ['10.0.0.5']],
      ['an IPv4-mapped loopback', ['::ffff:127.0.0.1']],
      ['the metadata address', ['169.254.169.254']],
      ['one public and one private address', ['8.8.8.8', '192.168.0.1']],
    ])('refuses %s with SOURCE_FORBIDDEN', async (_label, addresses) => {
      const { resolveHost } = resolver({ 'refunds.test': addresses });
      await expect(createGuardedFetch({ resolveHost })('http://refunds.test/x')).rejects.toMatchObject({
        code: 'SOURCE_FORBIDDEN',
      });
    });
  });

  describe('when a hostname resolves to an allowed address', () => {
    it('resolves once and connects to exactly the checked address (no second lookup to rebind)', async () => {
      const { resolveHost, calls } = resolver({ 'ledger.test': ['127.0.0.1'] });
      const fetch = createGuardedFetch({ resolveHost, allowHosts: ['127.0.0.1'] });
      const res = await fetch(`http://ledger.test:${server.port}/echo`);
      expect(await res.json()).toMatchObject({ host: `ledger.test:${server.port}` });
      expect(calls).toEqual(['ledger.test']);
    });
  });

  describe('when the hostname itself is allowed', () => {
    it('may reach the private addresses it resolves to, but never metadata', async () => {
      const { resolveHost } = resolver({ 'ledger.test': ['127.0.0.1'], 'meta.test': ['169.254.169.254'] });
      const fetch = createGuardedFetch({ resolveHost, allowHosts: ['ledger.test', 'meta.test'] });
      expect((await fetch(`http://ledger.test:${server.port}/`)).status).toBe(200);
      await expect(fetch('http://meta.test/')).rejects.toMatchObject({ code: 'SOURCE_FORBIDDEN' });
    });
  });

  describe('when a redirect leads to a forbidden address', () => {
    it('refuses the hop with SOURCE_FORBIDDEN', async () => {
      const fetch = createGuardedFetch({ allowHosts: ['127.0.0.1'] });
      await expect(fetch(`${server.url}/to-private`)).rejects.toMatchObject({ code: 'SOURCE_FORBIDDEN' });
    });

    it('refuses a hop to a hostname that resolves to metadata', async () => {
      const { resolveHost } = resolver({ 'metadata.test': ['169.254.169.254'] });
      const fetch = createGuardedFetch({ allowHosts: ['127.0.0.1'], resolveHost });
      await expect(fetch(`${server.url}/to-metadata-name`)).rejects.toMatchObject({
        code: 'SOURCE_FORBIDDEN',
      });
    });
  });

  describe('when asked not to follow redirects', () => {
    it('returns the redirect response', async () => {
      const res = await createGuardedFetch({ allowHosts: ['127.0.0.1'] })(`${server.url}/to-private`, {
        redirect: 'manual',
      });
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toBe('http://10.0.0.7/secret');
    });
  });

  describe('when redirects loop', () => {
    it('stops after maxRedirects with SOURCE_UNAVAILABLE', async () => {
      const fetch = createGuardedFetch({ allowHosts: ['127.0.0.1'], maxRedirects: 2 });
      await expect(fetch(`${server.url}/loop`)).rejects.toMatchObject({
        code: 'SOURCE_UNAVAILABLE',
        evidence: { maxRedirects: 2 },
      });
    });
  });

  describe('when a redirect crosses origins', () => {
    it('drops the Authorization header', async () => {
      const { resolveHost } = resolver({ 'ledger.test': ['127.0.0.1'] });
      const fetch = createGuardedFetch({ allowHosts: ['127.0.0.1'], resolveHost });
      const res = await fetch(`${server.url}/to-other-origin`, {
        headers: { authorization: 'Bearer s3cret' },
      });
      expect(await res.json()).toEqual({ host: `ledger.test:${server.port}`, authorization: null });
    });
  });

  describe('when asked to write', () => {
    it.each(['POST', 'PUT', 'DELETE', 'PATCH'])('refuses %s with SOURCE_FORBIDDEN', async (method) => {
      await expect(
        createGuardedFetch({ allowHosts: ['127.0.0.1'] })(`${server.url}/`, { method }),
      ).rejects.toMatchObject({
        code: 'SOURCE_FORBIDDEN',
      });
    });
  });

  describe('when the URL is not http(s) or carries credentials', () => {
    it.each(['file:///etc/passwd', 'ftp://127.0.0.1/', 'http://user:pw@127.0.0.1/'])(
      'refuses %s',
      async (url) => {
        await expect(createGuardedFetch({ allowHosts: ['127.0.0.1'] })(url)).rejects.toMatchObject({
          code: 'SOURCE_FORBIDDEN',
        });
      },
    );
  });

  describe('when the source is down', () => {
    it('throws SOURCE_UNAVAILABLE', async () => {
      const port = await closedPort();
      await expect(
        createGuardedFetch({ allowHosts: ['127.0.0.1'] })(`http://127.0.0.1:${port}/`),
      ).rejects.toMatchObject({
        code: 'SOURCE_UNAVAILABLE',
        evidence: { code: 'ECONNREFUSED' },
      });
    });

    it('throws SOURCE_UNAVAILABLE when the name does not resolve', async () => {
      const { resolveHost } = resolver({});
      await expect(createGuardedFetch({ resolveHost })('http://nowhere.test/')).rejects.toMatchObject({
        code: 'SOURCE_UNAVAILABLE',
      });
    });
  });

  describe('when the signal aborts', () => {
    it('rejects with the signal reason', async () => {
      const hang = await startServer(() => {});
      const controller = new AbortController();
      const pending = createGuardedFetch({ allowHosts: ['127.0.0.1'] })(`${hang.url}/`, {
        signal: controller.signal,
      });
      const reason = new Error('stop');
      controller.abort(reason);
      await expect(pending).rejects.toBe(reason);
      await hang.close();
    });
  });
});
