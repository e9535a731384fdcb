import { describe, expect, it } from 'vitest';
import * as verifiers from './index';

// Pins the public surface: an export added or removed by accident shows up here in review.
describe('@vouch/verifiers', () => {
  describe('when imported', () => {
    it('exports exactly these values', () => {
      expect(Object.keys(verifiers).sort()).toEqual([
        'BUILTIN_VERIFIERS',
        'DEFAULT_PLUGIN_MEMORY_MB',
        'PluginLoadError',
        'REDIS_READ_COMMANDS',
        'checkAddress',
        'createGuardedFetch',
        'createMysqlSqlGrant',
        'createPostgresSqlGrant',
        'createRedisGrant',
        'defineVerifierConfig',
        'fileVerifier',
        'httpJsonVerifier',
        'isAllowListEntry',
        'loadIsolatedVerifier',
        'loadVerifierConfig',
        'prometheusVerifier',
        'redisVerifier',
        'resolvePinnedAddress',
        'sqlVerifier',
        'verifierConfigSchema',
      ]);
    });

    it('names the built-ins by their ids', () => {
      expect(Object.entries(verifiers.BUILTIN_VERIFIERS).map(([key, v]) => [key, v.id])).toEqual([
        ['http-json', 'http-json'],
        ['sql', 'sql'],
        ['file', 'file'],
        ['redis', 'redis'],
        ['prometheus', 'prometheus'],
      ]);
    });
  });
});
