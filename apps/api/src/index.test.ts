import { describe, expect, it } from 'vitest';
import * as api from './index';

describe('@vouch/api public surface', () => {
  describe('when the package is imported', () => {
    it('exports exactly these runtime names', () => {
      expect(Object.keys(api).sort()).toEqual(
        [
          'API_ERROR_CODES',
          'ApiError',
          'DEFAULT_LIMITS',
          'ROLES',
          'STATUS_BY_CODE',
          'SYSTEM_LOG',
          'createApp',
          'createJsonLogger',
          'createKeyStore',
          'createMetrics',
          'createMetricsApp',
          'METRIC_NAMES',
          'generateApiKey',
          'hashApiKey',
          'isApiError',
          'isRole',
          'silentLogger',
          'statusOf',
        ].sort(),
      );
    });
  });
});
