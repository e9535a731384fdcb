import { canonicalJson, committedMemberOf, FIELDS_COMMITMENT, isAuditError } from '@vouch/audit';
import { LedgerError } from './errors';

/** What a caller asks the ledger to append; seq, time and hashes are the ledger's. */
export interface AppendInput {
  log: string;
  kind: string;
  entity: string;
  actor: string;
  payload: unknown;
  /**
   * `fields/1` when `payload` is the object of field hashes of a field commitment (see
   * `appendWithFields`, which writes the content beside it); `member-fields/1:<member>` when
   * `payload` is a record whose member is such an object (proposals and observations).
   * Default: the whole-payload rule.
   */
  commitment?: string;
}

/** Limits on what one event may carry. */
export interface EventLimits {
  /** Largest canonical payload in bytes (default 1 MiB). */
  maxPayloadBytes: number;
}

export const DEFAULT_EVENT_LIMITS: EventLimits = { maxPayloadBytes: 1024 * 1024 };

const LOG_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const KIND = /^[a-z][a-z0-9_.-]{0,63}$/;
// Lone surrogates cannot be encoded as UTF-8 and Postgres text refuses NUL.
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * Validate an append and canonicalize its payload before it reaches a transaction, so bad
 * input is refused with a typed error and never takes a seq.
 */
export function prepareEvent(input: AppendInput, limits: EventLimits): { canonicalPayload: string } {
  assertLogId(input.log);
  if (typeof input.kind !== 'string' || !KIND.test(input.kind)) {
    throw invalid('kind', 'an event kind is lowercase letters, digits and . _ - (starting with a letter)');
  }
  for (const field of ['entity', 'actor'] as const) {
    const value = input[field];
    if (
      typeof value !== 'string' ||
      value.length === 0 ||
      value.length > 512 ||
      LONE_SURROGATE.test(value) ||
      value.includes('\0')
    ) {
      throw invalid(field, `${field} must be a non-empty well-formed string of at most 512 characters`);
    }
  }
  if (
    input.commitment !== undefined &&
    input.commitment !== FIELDS_COMMITMENT &&
    committedMemberOf(input.commitment) === null
  ) {
    throw invalid(
      'commitment',
      `the payload commitments besides the default are ${FIELDS_COMMITMENT} and member-fields/1:<member>`,
    );
  }
  let canonicalPayload: string;
  try {
    canonicalPayload = canonicalJson(input.payload);
  } catch (cause) {
    if (isAuditError(cause)) {
      throw new LedgerError('PAYLOAD_NOT_JSON', `payload cannot be stored: ${cause.message}`, {
        cause,
        details: { reason: cause.code, path: cause.path },
      });
    }
    throw cause;
  }
  const bytes = Buffer.byteLength(canonicalPayload, 'utf8');
  if (bytes > limits.maxPayloadBytes) {
    throw new LedgerError(
      'PAYLOAD_TOO_LARGE',
      `payload is ${bytes} bytes as canonical JSON; the limit is ${limits.maxPayloadBytes}`,
      { details: { bytes, limit: limits.maxPayloadBytes } },
    );
  }
  return { canonicalPayload };
}

/** Refuse a log id the ledger cannot store, with `INVALID_EVENT`. */
export function assertLogId(log: unknown): asserts log is string {
  if (typeof log !== 'string' || !LOG_ID.test(log)) {
    throw invalid(
      'log',
      'a log id is 1-128 characters of letters, digits and . _ : - (starting alphanumeric)',
    );
  }
}

function invalid(field: string, message: string): LedgerError {
  return new LedgerError('INVALID_EVENT', `${field}: ${message}`, { details: { field } });
}
