/** The verdict of one check, the recorded check, and the derived status. */

/** Measurement policies: read a postcondition more than once, with Argo Rollouts' limits. */
export type { MeasurementAssessment, MeasurementDecision } from './assess-measurements';
export { assessMeasurements } from './assess-measurements';
/** CEL conditions for plugin authors: compile once, judge what the verifier read. */
export type {
  CelCondition,
  CelConditionInput,
  CelConditionReason,
  CelConditionVerdict,
} from './cel-condition';
export { CEL_CONDITION_VARIABLES, celCondition, jsonToCel } from './cel-condition';
export type {
  Check,
  CheckMeasurement,
  CheckReason,
  CheckResult,
  CheckStatus,
  CheckVerdict,
  CheckVerifier,
  DerivedStatus,
  MeasurementAttempt,
} from './check';
/** Declaring verifiers: the contract version, defaults and pattern matching. */
export type {
  AnyVerifier,
  CheckReturn,
  PostconditionPattern,
  VerifierContext,
  VerifierDefinition,
} from './define-verifier';
export {
  DEFAULT_VERIFIER_TIMEOUT_MS,
  defineVerifier,
  MAX_VERIFIER_TIMEOUT_MS,
  matchesPostcondition,
  phasesOf,
  SUPPORTED_API_VERSIONS,
  VERIFIER_API_VERSION,
} from './define-verifier';
/** Status derivation and independence: the one rule the ledger shares. */
export type {
  DeclaredCondition,
  DeclaredStatus,
  DeclaredStatusOptions,
  PostconditionStatus,
  StatusInput,
  WriterOptions,
} from './derive-status';
export {
  answeredConditions,
  answeredPostcondition,
  assessAllowedVerifier,
  assessIndependence,
  combinePostconditions,
  countedStatus,
  deriveDeclaredStatus,
  deriveStatus,
} from './derive-status';
/** The SDK's error class, its codes, and the two errors a verifier throws on purpose. */
export type { VerifierErrorCode, VerifierErrorOptions } from './errors';
export {
  isVerifierError,
  sourceForbidden,
  sourceUnavailable,
  VERIFIER_ERROR_CODES,
  VerifierError,
} from './errors';
/** Capabilities a host lends verifiers. */
export type {
  FetchGrant,
  GrantName,
  Grants,
  RedisCommandOptions,
  RedisGrant,
  RedisReadCommand,
  SqlGrant,
  SqlParam,
  SqlQueryOptions,
} from './grants';
/** JSON values and the local canonicalizability check. */
export type { JsonIssue, JsonIssueCode, JsonObject, JsonValue } from './json';
export { findJsonIssue } from './json';
/** Injected logging. */
export type { LogFields, Logger } from './logger';
export { silentLogger } from './logger';
export type { Duration, MeasurementPolicy, ResolvedMeasurementPolicy } from './measurement-policy';
export {
  delaysVerification,
  MAX_MEASUREMENT_COUNT,
  MAX_MEASUREMENT_MS,
  resolveMeasurementPolicy,
} from './measurement-policy';
/** Publish a verifier's options schema. */
export { optionsJsonSchema } from './options-json-schema';
/** The records verifiers read, as plain JSON. */
export type { Observation, Postcondition, Precondition, Proposal, Target, VerifierPhase } from './records';
/** The verifier host: run every verifier for every postcondition. */
export type { RunVerifiersOptions, VerificationOutcome } from './run-verifiers';
export { isEvidenceRef, MAX_CHECK_RESULT_BYTES, runVerifiers } from './run-verifiers';
/** Standard Schema, the options schema contract. */
export type { OptionIssue, StandardSchemaV1 } from './standard-schema';
/** The registry of validated verifier registrations. */
export type { RegisteredVerifier, VerifierRegistration, VerifierRegistry } from './verifier-registry';
export { createVerifierRegistry, validateOptions, validateVerifier } from './verifier-registry';
