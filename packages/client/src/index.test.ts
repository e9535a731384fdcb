import { describe, expect, it } from 'vitest';
import * as client from './index';
import * as testing from './testing';

// Pins the public surface: an export added or removed by accident shows up in review here.
describe('@vouch/client', () => {
  describe('when imported', () => {
    it('exports exactly these values', () => {
      expect(Object.keys(client).sort()).toEqual([
        'API_CONTRACT',
        'CLIENT_ERROR_CODES',
        'PROPOSAL_OUTCOMES',
        'PROPOSAL_STAGES',
        'SERVER_ERROR_CODES',
        'VouchClientError',
        'approvalStateOf',
        'createVouchClient',
        'deriveIdempotencyKey',
        'isServerErrorCode',
        'isVouchClientError',
        'payloadHashOf',
        'proposalPayloadOf',
      ]);
    });
  });
  describe('when @vouch/client/testing is imported', () => {
    it('exports the fake server only', () => {
      expect(Object.keys(testing).sort()).toEqual(['createFakeVouch']);
    });
  });
});
