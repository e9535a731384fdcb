import { describe, expect, it } from 'vitest';
import { ConfigError, databaseTarget, serveConfig } from './config';

describe('databaseTarget', () => {
  describe('when Postgres is selected with bounds on its waits', () => {
    it('carries them to openDatabase', () => {
      const env = {
        DATABASE_URL: 'postgres://vouch@127.0.0.1/vouch',
        VOUCH_DB_CONNECT_TIMEOUT_MS: '2000',
        VOUCH_DB_STATEMENT_TIMEOUT_MS: '30000',
      };
      expect(databaseTarget(env, '/')).toEqual({
        kind: 'postgres',
        url: 'postgres://vouch@127.0.0.1/vouch',
        connectTimeoutMs: 2000,
        statementTimeoutMs: 30000,
      });
      expect(databaseTarget({ DATABASE_URL: env.DATABASE_URL }, '/')).toEqual({
        kind: 'postgres',
        url: env.DATABASE_URL,
      });
    });

    it.each(['0', '-1', '1.5', 'soon'])('refuses VOUCH_DB_STATEMENT_TIMEOUT_MS=%s', (value) => {
      expect(() =>
        databaseTarget({ DATABASE_URL: 'postgres://x', VOUCH_DB_STATEMENT_TIMEOUT_MS: value }, '/'),
      ).toThrow(ConfigError);
    });
  });
});

describe('serveConfig', () => {
  describe('when the settle time of unknown outcomes is set', () => {
    it('reads VOUCH_UNKNOWN_OUTCOME_SETTLE_SECONDS, default 900', () => {
      expect(serveConfig({}, '/').unknownOutcomeSettleSeconds).toBe(900);
      expect(
        serveConfig({ VOUCH_UNKNOWN_OUTCOME_SETTLE_SECONDS: '60' }, '/').unknownOutcomeSettleSeconds,
      ).toBe(60);
    });

    it.each(['-1', '1.5', 'later', String(31 * 86_400)])('refuses %s', (value) => {
      expect(() => serveConfig({ VOUCH_UNKNOWN_OUTCOME_SETTLE_SECONDS: value }, '/')).toThrow(ConfigError);
    });
  });

  describe('when VOUCH_ADMIN_KEY is shorter than a key may be', () => {
    it('throws a ConfigError, before anything is opened', () => {
      expect(() => serveConfig({ VOUCH_ADMIN_KEY: 'short' }, '/tmp')).toThrow(ConfigError);
    });
  });

  describe('when VOUCH_ADMIN_KEY is long enough', () => {
    it('carries it', () => {
      const key = `vch_${'a'.repeat(40)}`;
      expect(serveConfig({ VOUCH_ADMIN_KEY: ` ${key} ` }, '/tmp').adminKey).toBe(key);
    });
  });
});
