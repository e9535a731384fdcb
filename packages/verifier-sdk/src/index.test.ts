import { describe, expect, it } from 'vitest';
import * as sdk from './index';
import * as testing from './testing';

// Pins the public surface: an export added or removed by accident shows up here in review.
describe('@vouch/verifier-sdk', () => {
  describe('when imported', () => {
    it('exports exactly these values', () => {
      expect(Object.keys(sdk).sort()).toEqual([
        'CEL_CONDITION_VARIABLES',
        'DEFAULT_VERIFIER_TIMEOUT_MS',
        'MAX_CHECK_RESULT_BYTES',
        'MAX_MEASUREMENT_COUNT',
        'MAX_MEASUREMENT_MS',
        'MAX_VERIFIER_TIMEOUT_MS',
        'SUPPORTED_API_VERSIONS',
        'VERIFIER_API_VERSION',
        'VERIFIER_ERROR_CODES',
        'VerifierError',
        'answeredConditions',
        'answeredPostcondition',
        'assessAllowedVerifier',
        'assessIndependence',
        'assessMeasurements',
        'celCondition',
        'combinePostconditions',
        'countedStatus',
        'createVerifierRegistry',
        'defineVerifier',
        'delaysVerification',
        'deriveDeclaredStatus',
        'deriveStatus',
        'findJsonIssue',
        'isEvidenceRef',
        'isVerifierError',
        'jsonToCel',
        'matchesPostcondition',
        'optionsJsonSchema',
        'phasesOf',
        'resolveMeasurementPolicy',
        'runVerifiers',
        'silentLogger',
        'sourceForbidden',
        'sourceUnavailable',
        'validateOptions',
        'validateVerifier',
      ]);
    });
  });
});

describe('@vouch/verifier-sdk/testing', () => {
  describe('when imported', () => {
    it('exports exactly these values', () => {
      expect(Object.keys(testing).sort()).toEqual([
        'VerifierTester',
        'exampleObservation',
        'exampleProposal',
        'fixedNow',
      ]);
    });
  });
});
