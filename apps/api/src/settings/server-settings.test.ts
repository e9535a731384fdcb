import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runVouch } from '../testing/cli-io';
import { loadServerSettings } from './server-settings';

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'vouch-config-'));
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

function configFile(name: string, content: unknown): string {
  const file = join(root, name);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

const check = (argv: string[], env: NodeJS.ProcessEnv = {}) =>
  runVouch(['config', 'check', ...argv], { env: { VOUCH_DATA_DIR: join(root, 'data'), ...env }, cwd: root });

describe('vouch config check', () => {
  describe('when the file and the environment are valid', () => {
    it('prints the effective settings, the environment over the file, and masks every secret', async () => {
      const file = configFile('ok.json', {
        verifiers: [],
        server: {
          approvals: { requestTtlSeconds: 600, maxWindowSeconds: 120 },
          rateLimit: { requestsPerSecond: 5, burst: 10 },
          keys: { maxAgeDays: 90 },
        },
      });
      const adminKey = 'a'.repeat(40);
      const { code, out } = await check(['--file', file], {
        VOUCH_RATE_LIMIT_RPS: '20',
        VOUCH_ADMIN_KEY: adminKey,
        VOUCH_LOG_SIGNING_KEY: 'PRIVATE+KEY+vouch+deadbeef+secretsecretsecret',
        DATABASE_URL: 'postgres://vouch:hunter2hunter2@127.0.0.1:5432/vouch',
      });
      expect(code).toBe(0);
      const printed = JSON.parse(out);
      expect(printed.settings).toEqual({
        policy: { engine: 'built_in' },
        approvals: { requestTtlSeconds: 600, maxWindowSeconds: 120 },
        limits: { bodyBytes: 1024 * 1024, jsonDepth: 32, pageSize: 1000 },
        rateLimit: { requestsPerSecond: 20, burst: 10 },
        keys: { maxAgeDays: 90, allowRoleCombinations: false },
        checkpoints: {},
      });
      // Postgres and no setting: nothing kept outside the database, and the check says so.
      expect(printed.checkpointStateDir).toBeNull();
      expect(printed.adminKey).toBe('[set, not shown]');
      expect(printed.transparency.signingKey).toBe('[set, not shown]');
      for (const secret of [adminKey, 'secretsecretsecret', 'hunter2hunter2'])
        expect(out).not.toContain(secret);
    });

    it('takes ./vouch.config.json when no file is named, and the defaults without one', async () => {
      const { code, out } = await check([]);
      expect(code).toBe(0);
      expect(JSON.parse(out).settings.rateLimit).toEqual({ requestsPerSecond: 0, burst: 1 });
    });

    it('shows where the last signed checkpoints are kept: beside a PGlite data directory by default', async () => {
      const { out } = await check([]);
      expect(JSON.parse(out).checkpointStateDir).toBe(`${join(root, 'data')}.checkpoints`);
    });

    it('takes server.checkpoints.stateDir, resolved against the working directory, and the variable over it', async () => {
      const file = configFile('state.json', { server: { checkpoints: { stateDir: 'kept/state' } } });
      const fromFile = JSON.parse((await check(['--file', file])).out);
      expect(fromFile.checkpointStateDir).toBe(join(root, 'kept/state'));
      expect(fromFile.settings.checkpoints).toEqual({ stateDir: 'kept/state' });
      const fromEnv = JSON.parse(
        (await check(['--file', file], { VOUCH_CHECKPOINT_STATE_DIR: '/var/lib/vouch/state' })).out,
      );
      expect(fromEnv.checkpointStateDir).toBe('/var/lib/vouch/state');
    });
  });

  describe('when a setting is wrong', () => {
    it.each([
      ['a variable that is not a number', {}, { VOUCH_RATE_LIMIT_RPS: 'fast' }, 'VOUCH_RATE_LIMIT_RPS'],
      [
        'a variable out of range',
        {},
        { VOUCH_APPROVAL_MAX_WINDOW_SECONDS: '0' },
        'VOUCH_APPROVAL_MAX_WINDOW_SECONDS',
      ],
      [
        'a flag that is neither 1 nor 0',
        {},
        { VOUCH_ALLOW_ROLE_COMBINATIONS: 'maybe' },
        'VOUCH_ALLOW_ROLE_COMBINATIONS',
      ],
      [
        'a member of the wrong type',
        { server: { keys: { maxAgeDays: 'ninety' } } },
        {},
        'server.keys.maxAgeDays',
      ],
      ['a member out of range', { server: { limits: { bodyBytes: 10 } } }, {}, 'server.limits.bodyBytes'],
      [
        'a member that is no setting (a typo)',
        { server: { rateLimit: { burts: 5 } } },
        {},
        'server.rateLimit.burts',
      ],
      ['an unknown policy engine', { server: { policy: { engine: 'opa' } } }, {}, 'server.policy.engine'],
      ['a server section that is not an object', { server: [] }, {}, 'server'],
      [
        'an empty checkpoint state directory',
        { server: { checkpoints: { stateDir: '' } } },
        {},
        'server.checkpoints.stateDir',
      ],
      ['an environment variable of the serve settings', {}, { PORT: '99999' }, 'PORT'],
    ])('names the key and the reason: %s', async (_, content, env, key) => {
      const file = configFile(`bad-${key}.json`, content);
      const { code, out, err } = await check(['--file', file], env);
      expect(code).toBe(2);
      expect(out).toBe('');
      expect(err).toContain(key);
      expect(err).toMatch(new RegExp(`${key.replace(/\./g, '\\.')}[^:]*: \\S`));
    });

    it('names the file that is not JSON', async () => {
      const file = configFile('broken.json', '{ "server": ');
      const { code, err } = await check(['--file', file]);
      expect(code).toBe(2);
      expect(err).toContain('broken.json');
      expect(err).toMatch(/not (readable )?JSON/);
    });

    it('names VOUCH_CONFIG for a file that does not exist', async () => {
      const { code, err } = await check(['--file', join(root, 'missing.json')]);
      expect(code).toBe(2);
      expect(err).toContain('VOUCH_CONFIG');
    });
  });

  describe('when an external policy engine is configured', () => {
    it('refuses a decision URL on an internal address, naming the variable', async () => {
      const { code, err } = await check([], {
        VOUCH_POLICY_ENGINE: 'external',
        VOUCH_POLICY_DECISION_URL: 'http://127.0.0.1:8181/v1/decide',
      });
      expect(code).toBe(2);
      expect(err).toContain('VOUCH_POLICY_DECISION_URL');
      expect(err).toContain('loopback');
    });

    it('refuses a name that resolves to a metadata address, even when the name is allowed', async () => {
      await expect(
        loadServerSettings({
          env: {},
          file: configFile('meta.json', {
            server: {
              policy: {
                engine: 'external',
                decisionUrl: 'http://policy.test/decide',
                allowHosts: ['policy.test'],
              },
            },
          }),
          resolveHost: async () => ['169.254.169.254'],
        }),
      ).rejects.toMatchObject({ name: 'ConfigError', key: 'server.policy.decisionUrl' });
    });

    it('accepts an internal address the file allows, and a public one', async () => {
      const file = configFile('allowed.json', {
        server: {
          policy: { engine: 'external', decisionUrl: 'http://10.1.2.3/decide', allowHosts: ['10.1.2.3'] },
        },
      });
      const { code, out } = await check(['--file', file]);
      expect(code).toBe(0);
      expect(JSON.parse(out).settings.policy).toEqual({
        engine: 'external',
        decisionUrl: 'http://10.1.2.3/decide',
        allowHosts: ['10.1.2.3'],
        identity: 'service:policy-engine',
        source: 'external',
        timeoutMs: 5000,
        retrySeconds: 15,
        token: null,
      });
      const settings = await loadServerSettings({
        env: { VOUCH_POLICY_ENGINE: 'external', VOUCH_POLICY_DECISION_URL: 'https://policy.example/decide' },
        resolveHost: async () => ['93.184.215.14'],
      });
      expect(settings.policy).toMatchObject({
        engine: 'external',
        decisionUrl: 'https://policy.example/decide',
      });
    });

    it('keeps an engine that posts its decisions (no decisionUrl) as it was', async () => {
      const settings = await loadServerSettings({ env: { VOUCH_POLICY_ENGINE: 'external' } });
      expect(settings.policy).toEqual({ engine: 'external' });
    });

    it('reads the identity, timeout and token, and masks the token', async () => {
      const token = 'opa-bearer-0123456789-secret';
      const file = configFile('engine.json', {
        server: {
          policy: {
            engine: 'external',
            decisionUrl: 'http://10.1.2.3/v1/data/vouch/decision',
            allowHosts: ['10.1.2.3'],
            source: 'opa',
            retrySeconds: 30,
            tokenEnv: 'OPA_TOKEN',
            tokenHeader: 'X-Opa-Key',
          },
        },
      });
      const env = { VOUCH_POLICY_IDENTITY: 'service:opa', VOUCH_POLICY_TIMEOUT_MS: '2500', OPA_TOKEN: token };
      const settings = await loadServerSettings({ file, env });
      expect(settings.policy).toMatchObject({
        identity: 'service:opa',
        source: 'opa',
        timeoutMs: 2500,
        retrySeconds: 30,
        token: { header: 'x-opa-key', value: token },
      });
      const { code, out } = await check(['--file', file], env);
      expect(code).toBe(0);
      expect(JSON.parse(out).settings.policy.token).toEqual({
        header: 'x-opa-key',
        value: '[set, not shown]',
      });
      expect(out).not.toContain(token);
    });

    it.each([
      ['a token variable that is not set', { tokenEnv: 'OPA_TOKEN' }, {}, 'server.policy.tokenEnv'],
      ['an identity that is not one', {}, { VOUCH_POLICY_IDENTITY: 'opa' }, 'VOUCH_POLICY_IDENTITY'],
      ['a timeout that is not a number', {}, { VOUCH_POLICY_TIMEOUT_MS: 'soon' }, 'VOUCH_POLICY_TIMEOUT_MS'],
      ['a timeout too long', { timeoutMs: 600_000 }, {}, 'server.policy.timeoutMs'],
      ['the ledger policy as the source', { source: 'built_in' }, {}, 'server.policy.source'],
      ['a retry interval of zero', { retrySeconds: 0 }, {}, 'server.policy.retrySeconds'],
    ])('refuses %s, naming the key', async (_name, policy, env, key) => {
      const file = configFile('bad-engine.json', {
        server: {
          policy: {
            engine: 'external',
            decisionUrl: 'http://10.1.2.3/decide',
            allowHosts: ['10.1.2.3'],
            ...policy,
          },
        },
      });
      await expect(loadServerSettings({ file, env })).rejects.toMatchObject({ name: 'ConfigError', key });
      const { code, err } = await check(['--file', file], env);
      expect(code).toBe(2);
      expect(err).toContain(key);
    });
  });
});
