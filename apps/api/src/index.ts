/** Build the Vouch HTTP app over a ledger (inject everything; `app.request()` works without a socket). */
export { type AppOptions, createApp, type VouchApp } from './app';
/** Generate, hash and compare API keys (`vch_…`, stored as SHA-256 only). */
export { generateApiKey, hashApiKey } from './auth/api-key';
/** The key store over the ledger's database; key changes are events in the `system` log. */
export {
  createKeyStore,
  type KeyStore,
  type NewApiKey,
  type StoredApiKey,
  SYSTEM_LOG,
} from './auth/key-store';
/** Who a request acts as, from its key. */
export type { Principal } from './auth/principal';
/** The roles a key can hold. */
export { isRole, ROLES, type Role } from './auth/roles';
/** The error envelope every failure answers with. */
export type { ErrorBody } from './error-response';
/** The one table from error code to HTTP status. */
export { type ErrorCode, STATUS_BY_CODE, statusOf } from './error-status';
/** The HTTP layer's own error codes and error class. */
export { API_ERROR_CODES, ApiError, type ApiErrorCode, isApiError } from './errors';
/** Request limits and their defaults. */
export { DEFAULT_LIMITS, type Limits } from './limits';
/** The injected logger and the JSON-lines implementation `vouch serve` uses. */
export { createJsonLogger, type LogFields, type Logger, silentLogger } from './logger';
/** The server's Prometheus metrics and the calls that move them (webhook deliveries among them). */
export {
  createMetrics,
  METRIC_NAMES,
  type Metrics,
  type VerificationOutcome,
  type WebhookDeliveryOutcome,
} from './metrics/metrics';
/** `GET /metrics`, for the metrics listener. */
export { createMetricsApp } from './metrics/metrics-app';
/** What /readyz checks. */
export type { Readiness } from './routes/health';
