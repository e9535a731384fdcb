import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { webhookConfig } from './webhook-config';
import { retryDelayMs } from './webhook-dispatcher';

const dir = mkdtempSync(join(tmpdir(), 'vouch-webhook-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const file = (webhooks: unknown) => {
  const path = join(dir, `c${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify({ verifiers: [], webhooks }));
  return path;
};
const target = {
  name: 'ops',
  url: 'https://hooks.example.com/v',
  secretEnv: 'OPS_SECRET',
  events: ['approval.requested'],
};
const failure = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    return error as { name: string; message: string };
  }
  throw new Error('no error');
};

describe('webhookConfig', () => {
  describe('when the file has no webhooks section, or is not JSON config', () => {
    it('is undefined', () => {
      expect(webhookConfig({}, file(undefined))).toBeUndefined();
      expect(webhookConfig({}, undefined)).toBeUndefined();
      expect(webhookConfig({}, join(dir, 'vouch.config.ts'))).toBeUndefined();
    });
  });
  describe('when a target is complete', () => {
    it('resolves its secret and URL from the environment, with the defaults', () => {
      const config = webhookConfig(
        { OPS_SECRET: 's3cret', HOOK: 'https://hooks.slack.example/services/T/B/x' },
        file({
          targets: [target, { name: 'chat', urlEnv: 'HOOK', format: 'slack', events: ['integrity.alarm'] }],
        }),
      )!;
      expect(config).toMatchObject({ maxAttempts: 8, expiringLeadSeconds: 900, timeoutMs: 10_000 });
      expect(config.targets.map((t) => [t.name, t.url.href, t.secret, t.format, [...t.events]])).toEqual([
        ['ops', 'https://hooks.example.com/v', 's3cret', 'vouch', ['approval.requested']],
        ['chat', 'https://hooks.slack.example/services/T/B/x', undefined, 'slack', ['integrity.alarm']],
      ]);
    });
  });
  describe('when a secret or URL variable is missing', () => {
    it('is a ConfigError that names the variable', () => {
      const error = failure(() => webhookConfig({}, file({ targets: [target] })));
      expect(error.name).toBe('ConfigError');
      expect(error.message).toContain('OPS_SECRET');
    });
  });
  describe('when the URL variable holds no URL', () => {
    it('says which variable, not what it holds', () => {
      const error = failure(() =>
        webhookConfig(
          { HOOK: 'not a url xoxb-secret', OPS_SECRET: 's' },
          file({ targets: [{ ...target, url: undefined, urlEnv: 'HOOK' }] }),
        ),
      );
      expect(error.message).toContain('HOOK');
      expect(error.message).not.toContain('xoxb-secret');
    });
  });
  describe('when the configuration is wrong', () => {
    it.each([
      ['a vouch target without a secret', { targets: [{ ...target, secretEnv: undefined }] }, 'secretEnv'],
      ['both url and urlEnv', { targets: [{ ...target, urlEnv: 'HOOK' }] }, 'url'],
      ['an unknown event', { targets: [{ ...target, events: ['approval.requsted'] }] }, 'events'],
      ['a bad allow-list entry', { targets: [{ ...target, allowHosts: ['10.0.0.0/99'] }] }, 'allowHosts'],
      ['two targets of one name', { targets: [target, target] }, 'targets'],
      ['an unknown field', { targets: [target], retries: 3 }, 'retries'],
    ])('%s is refused, naming the field', (_, webhooks, field) => {
      const error = failure(() =>
        webhookConfig({ OPS_SECRET: 's', HOOK: 'https://x.example' }, file(webhooks)),
      );
      expect(error.name).toBe('ConfigError');
      expect(error.message).toContain(field);
    });
  });
});

describe('retryDelayMs', () => {
  const config = { retryBaseMs: 1000, retryMaxMs: 10_000 };
  describe('when attempts fail one after another', () => {
    it('doubles the delay up to the cap, half of it jitter', () => {
      expect([1, 2, 3, 4, 5, 6].map((attempt) => retryDelayMs(config, attempt, 0))).toEqual([
        500, 1000, 2000, 4000, 5000, 5000,
      ]);
      expect([1, 2, 3, 4, 5, 6].map((attempt) => retryDelayMs(config, attempt, 0.999_999))).toEqual([
        1000, 2000, 4000, 8000, 10_000, 10_000,
      ]);
    });
  });
});
