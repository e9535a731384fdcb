import { describe, expect, it } from 'vitest';
import * as client from './index';
import * as testing from './testing';

// Pins the public surface: an export added or removed by accident shows up in review here.
describe('@vouch/client', () => {
  describe('when imported', () => {
    it('exports exactly these values', () => {
      expect(Object.keys(client).sort()).toEqual([
        'CLIENT_ERROR_CODES',
        'DEFAULT_WEBHOOK_TOLERANCE_SECONDS',
        'SERVER_ERROR_CODES',
        'VouchClientError',
        'WEBHOOK_SIGNATURE_HEADER',
        'createVouchClient',
        'deriveIdempotencyKey',
        'isServerErrorCode',
        'isVouchClientError',
        'payloadHashOf',
        'proposalPayloadOf',
        'signWebhook',
        'verifyWebhookSignature',
      ]);
    });
  });
  describe('when @vouch/client/testing is imported', () => {
    it('exports the fake server and the conformance suite only', () => {
      expect(Object.keys(testing).sort()).toEqual([
        'CLIENT_CONFORMANCE_CASES',
        'CONFORMANCE_POLICY',
        'createFakeVouch',
      ]);
    });
  });
});
