import { describe, expect, it } from 'vitest';
import { type ConfigSources, loadConfig } from './config';

const file = JSON.stringify({
  upstream: { command: 'node', args: ['server.js'] },
  vouch: { url: 'http://127.0.0.1:8787' },
  serverId: 'files',
  environment: 'staging',
  tools: { write_file: { target: { kind: 'file', idArgument: 'path' } } },
});

function sources(overrides: Partial<ConfigSources> & { files?: Record<string, string> } = {}): ConfigSources {
  const files = overrides.files ?? { 'gateway.json': file };
  return {
    argv: overrides.argv ?? ['--config', 'gateway.json'],
    env: overrides.env ?? { VOUCH_API_KEY: 'vk_test' },
    readFile: async (path) => {
      const text = files[path];
      if (text === undefined) throw new Error('ENOENT');
      return text;
    },
  };
}

async function codeOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => 'resolved',
    (error: { code?: unknown }) => error.code,
  );
}

describe('loadConfig', () => {
  describe('when a JSON file is given', () => {
    it('reads it, fills defaults and takes the key from VOUCH_API_KEY', async () => {
      const { config, apiKey } = await loadConfig(sources());
      expect(apiKey).toBe('vk_test');
      expect(config).toMatchObject({
        upstream: { command: 'node', args: ['server.js'] },
        serverId: 'files',
        environment: 'staging',
        approvalWaitMs: 0,
        invokeTimeoutMs: 60_000,
      });
      expect(config.tools?.write_file?.target?.idArgument).toBe('path');
      expect(config.governed).toBeUndefined();
    });

    it('reads the governed methods', async () => {
      const governed = [
        { method: 'resources/read', match: 'file:///secrets/**', sideEffect: 'read_only' },
        { method: 'prompts/get', action: 'prompt.render' },
      ];
      const withGoverned = JSON.stringify({ ...JSON.parse(file), governed });
      const { config } = await loadConfig(sources({ files: { 'gateway.json': withGoverned } }));
      expect(config.governed).toEqual(governed);
    });
  });

  describe('when several upstreams are given', () => {
    const multi = (extra: Record<string, unknown> = {}) =>
      JSON.stringify({
        upstreams: {
          files: { command: 'node', args: ['files.js'], tools: { write: { sideEffect: 'irreversible' } } },
          'git-hub': {
            url: 'https://mcp.example/mcp',
            serverId: 'github',
            transport: 'auto',
            headers: { 'X-Team': 'ops', Authorization: { env: 'GH_AUTH' } },
          },
          crm: {
            url: 'https://crm.example/mcp',
            auth: {
              type: 'client_credentials',
              tokenUrl: 'https://auth.example/token',
              clientId: 'vouch',
              clientSecret: { env: 'CRM_SECRET' },
              scope: 'mcp',
            },
          },
        },
        vouch: { url: 'http://127.0.0.1:8787' },
        environment: 'production',
        ...extra,
      });
    const env = { VOUCH_API_KEY: 'k', GH_AUTH: 'Bearer gh-secret', CRM_SECRET: 'crm-secret' };

    it('reads each one with its settings, and the secrets its headers and auth name from the environment', async () => {
      const { config, upstreamSecrets } = await loadConfig(
        sources({ env, files: { 'gateway.json': multi() } }),
      );
      expect(Object.keys(config.upstreams ?? {})).toEqual(['files', 'git-hub', 'crm']);
      expect(config.upstreams?.['git-hub']).toMatchObject({ serverId: 'github', transport: 'auto' });
      expect(upstreamSecrets).toEqual({ GH_AUTH: 'Bearer gh-secret', CRM_SECRET: 'crm-secret' });
      // The file holds the variables' names; the values never enter the configuration.
      expect(JSON.stringify(config)).not.toContain('gh-secret');
      expect(JSON.stringify(config)).not.toContain('crm-secret');
    });

    it.each(['http://127.0.0.1:9/token', 'http://localhost:9/token', 'http://[::1]:9/token'])(
      'accepts the loopback token endpoint %s over plain http',
      async (tokenUrl) => {
        const upstreams = {
          a: {
            url: 'http://127.0.0.1:9/mcp',
            auth: {
              type: 'client_credentials',
              tokenUrl,
              clientId: 'c',
              clientSecret: { env: 'CRM_SECRET' },
            },
          },
        };
        const { config } = await loadConfig(
          sources({ env, files: { 'gateway.json': multi({ upstreams }) } }),
        );
        expect(config.upstreams?.a).toMatchObject({ auth: { tokenUrl } });
      },
    );

    it('refuses a secret whose variable is not set, naming the variable and never a value', async () => {
      const error = await loadConfig(
        sources({ env: { VOUCH_API_KEY: 'k', GH_AUTH: 'x' }, files: { 'gateway.json': multi() } }),
      ).catch((e: Error) => e);
      expect(error).toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringContaining('CRM_SECRET') });
    });

    it.each([
      [{ bad_name: { command: 'x' } }, '/upstreams'],
      [{ a: { url: 'https://a.example', auth: { type: 'bearer', token: 'literal-token' } } }, '/upstreams/a'],
      [{}, '/upstreams'],
      // Approvals are bound to the server id: one shared would let one upstream use the other's.
      [{ a: { command: 'x' }, b: { command: 'y', serverId: 'a' } }, '/upstreams/b/serverId'],
      [{ a: { command: 'x', serverId: 's' }, b: { command: 'y', serverId: 's' } }, '/upstreams/b/serverId'],
      // The client secret never travels in clear over a network.
      [
        {
          a: {
            url: 'https://a.example/mcp',
            auth: {
              type: 'client_credentials',
              tokenUrl: 'http://auth.example/token',
              clientId: 'c',
              clientSecret: { env: 'CRM_SECRET' },
            },
          },
        },
        '/upstreams/a',
      ],
    ])('refuses the upstreams %j, naming %s', async (upstreams, path) => {
      const error = await loadConfig(sources({ env, files: { 'gateway.json': multi({ upstreams }) } })).catch(
        (e: Error) => e,
      );
      expect(error).toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringContaining(path) });
    });

    it.each([
      ['upstream', { upstream: { command: 'x' } }],
      ['serverId', { serverId: 'files' }],
      ['tools', { tools: {} }],
      ['governed', { governed: [] }],
    ])('refuses a top-level %s beside upstreams', async (key, extra) => {
      const error = await loadConfig(sources({ env, files: { 'gateway.json': multi(extra) } })).catch(
        (e: Error) => e,
      );
      expect(error).toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringContaining(`/${key}`) });
    });
  });

  describe('when only the environment is given', () => {
    it('builds the whole configuration from it', async () => {
      const { config } = await loadConfig(
        sources({
          argv: [],
          env: {
            VOUCH_API_KEY: 'k',
            VOUCH_URL: 'http://127.0.0.1:8787',
            VOUCH_SERVER_ID: 'git',
            VOUCH_ENVIRONMENT: 'production',
            VOUCH_UPSTREAM_COMMAND: 'npx',
            VOUCH_UPSTREAM_ARGS: '["-y","some-mcp-server"]',
          },
        }),
      );
      expect(config.upstream).toEqual({ command: 'npx', args: ['-y', 'some-mcp-server'] });
      expect(config.serverId).toBe('git');
    });

    it('lets an environment variable override the file', async () => {
      const { config } = await loadConfig(
        sources({ env: { VOUCH_API_KEY: 'k', VOUCH_ENVIRONMENT: 'production' } }),
      );
      expect(config.environment).toBe('production');
    });
  });

  describe('when something is missing or wrong', () => {
    it('refuses a missing API key with CONFIG_INVALID', async () => {
      expect(await codeOf(loadConfig(sources({ env: {} })))).toBe('CONFIG_INVALID');
    });
    it('refuses a missing file with CONFIG_NOT_FOUND', async () => {
      expect(await codeOf(loadConfig(sources({ files: {} })))).toBe('CONFIG_NOT_FOUND');
    });
    it('refuses a file that is not JSON with CONFIG_INVALID', async () => {
      expect(await codeOf(loadConfig(sources({ files: { 'gateway.json': '{' } })))).toBe('CONFIG_INVALID');
    });
    it('refuses an unknown field with CONFIG_INVALID', async () => {
      const withExtra = JSON.stringify({ ...JSON.parse(file), apiKey: 'in-a-file' });
      expect(await codeOf(loadConfig(sources({ files: { 'gateway.json': withExtra } })))).toBe(
        'CONFIG_INVALID',
      );
    });
    it.each([
      [{ method: 'tools/call' }, '/governed/0/method'],
      [{ method: 'resources/read', match: '' }, '/governed/0/match'],
      [{ method: 'prompts/get', sideEffect: 'harmless' }, '/governed/0/sideEffect'],
    ])('refuses the governed entry %j, naming %s', async (entry, path) => {
      const governed = JSON.stringify({ ...JSON.parse(file), governed: [entry] });
      const error = await loadConfig(sources({ files: { 'gateway.json': governed } })).catch((e: Error) => e);
      expect(error).toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringContaining(path) });
    });
    it.each([
      [{ result: { mask: { pointers: ['ssn'] } } }, '/tools/write_file/result/mask/pointers/0'],
      [{ result: { mask: { patterns: [{ regex: '(' }] } } }, '/tools/write_file/result/mask/patterns/0'],
      [{ result: { mask: { patterns: ['passwords'] } } }, '/tools/write_file/result/mask/patterns/0'],
      [{ result: { maxBytes: 0 } }, '/tools/write_file/result/maxBytes'],
    ])('refuses the result obligations %j, naming %s', async (settings, path) => {
      const tools = JSON.stringify({ ...JSON.parse(file), tools: { write_file: settings } });
      const error = await loadConfig(sources({ files: { 'gateway.json': tools } })).catch((e: Error) => e);
      expect(error).toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringContaining(path) });
    });
    it('refuses an agent that may see an upstream the gateway does not have', async () => {
      const config = JSON.stringify({
        upstreams: { notes: { url: 'http://127.0.0.1:9/mcp' } },
        vouch: { url: 'http://127.0.0.1:8787' },
        environment: 'staging',
        agentServer: {
          port: 0,
          agents: [{ name: 'a', tokenSha256: 'a'.repeat(64), apiKeyEnv: 'KEY_A', upstreams: ['crm'] }],
        },
      });
      const error = await loadConfig(
        sources({ files: { 'gateway.json': config }, env: { KEY_A: 'k' } }),
      ).catch((e: Error) => e);
      expect(error).toMatchObject({
        code: 'CONFIG_INVALID',
        message: expect.stringContaining('/agentServer/agents/0/upstreams'),
      });
    });
    it('refuses upstream args that are not a JSON array with CONFIG_INVALID', async () => {
      const env = { VOUCH_API_KEY: 'k', VOUCH_UPSTREAM_COMMAND: 'x', VOUCH_UPSTREAM_ARGS: '-y server' };
      expect(await codeOf(loadConfig(sources({ env })))).toBe('CONFIG_INVALID');
    });
  });

  describe('the signing key', () => {
    const key = `vouch-author-key-v1:${'A'.repeat(43)}=`;
    const env = (more: Record<string, string>) => ({ VOUCH_API_KEY: 'vk_test', ...more });

    it('is read from VOUCH_SIGNING_KEY or a file, with the identity it signs as', async () => {
      const inline = await loadConfig(
        sources({ env: env({ VOUCH_SIGNING_KEY: key, VOUCH_SIGNING_IDENTITY: 'agent:gw' }) }),
      );
      expect(inline.signing).toEqual({ key, identity: 'agent:gw' });
      const fromFile = await loadConfig(
        sources({
          env: env({ VOUCH_SIGNING_KEY_FILE: 'gw.key', VOUCH_SIGNING_IDENTITY: 'agent:gw' }),
          files: { 'gateway.json': file, 'gw.key': `${key}\n` },
        }),
      );
      expect(fromFile.signing).toEqual({ key, identity: 'agent:gw' });
      expect((await loadConfig(sources())).signing).toBeUndefined();
    });

    it.each([
      ['without an identity', { VOUCH_SIGNING_KEY: key }, 'CONFIG_INVALID'],
      [
        'that is not a key',
        { VOUCH_SIGNING_KEY: 'ed25519:AAAA', VOUCH_SIGNING_IDENTITY: 'agent:gw' },
        'CONFIG_INVALID',
      ],
      [
        'given twice',
        { VOUCH_SIGNING_KEY: key, VOUCH_SIGNING_KEY_FILE: 'gw.key', VOUCH_SIGNING_IDENTITY: 'a:b' },
        'CONFIG_INVALID',
      ],
      [
        'in a file that is not there',
        { VOUCH_SIGNING_KEY_FILE: 'none.key', VOUCH_SIGNING_IDENTITY: 'a:b' },
        'CONFIG_NOT_FOUND',
      ],
    ])('is refused %s', async (_what, more, code) => {
      expect(await codeOf(loadConfig(sources({ env: env(more) })))).toBe(code);
    });
  });
});
