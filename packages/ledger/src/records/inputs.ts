import { canonicalJson, isAuditError } from '@vouch/audit';
import { IDENTIFIER_ISSUE } from '@vouch/records';
import type { z } from 'zod';
import { LedgerError } from '../errors';

/**
 * The request bodies of the record writes are declared in `@vouch/records` (the API documents
 * the same schemas); re-exported here under the names the ledger has always used. Every body
 * is first turned into canonical JSON and back ({@link parseInput}), so what is validated is
 * exactly what will be stored and hashed: a value JSON cannot carry (undefined, NaN, a Date, a
 * lone surrogate) is refused, never dropped.
 */
export type {
  ApproveInput,
  AuthorizeInput,
  CheckInput,
  DecisionInput,
  DenyInput,
  ObservationInput,
  ProposalInput,
  ReverificationInput,
  ToolDefinitionApprovalInput,
  ToolInput,
  VerificationInput,
} from '@vouch/records';
export {
  approveInputSchema,
  authorizeInputSchema,
  checkInputSchema,
  checksInputSchema,
  decisionInputSchema,
  denyInputSchema,
  observationInputSchema,
  proposalInputSchema,
  reverificationInputSchema,
  toolDefinitionApprovalInputSchema,
  toolInputSchema,
  verificationInputSchema,
} from '@vouch/records';

/** Largest canonical body, in bytes, a record write accepts by default (the event limit is larger). */
export const DEFAULT_MAX_INPUT_BYTES = 256 * 1024;

/**
 * Canonicalize, bound and validate a body. Throws `PAYLOAD_NOT_JSON`, `PAYLOAD_TOO_LARGE`,
 * `IDENTIFIER_INVALID` (a name an approver reads is not a plain identifier: its `path` in
 * `details`) or `VALIDATION_FAILED` (with the issues in `details`), before anything is written.
 */
export function parseInput<S extends z.ZodType>(
  schema: S,
  body: unknown,
  options: { what: string; maxBytes: number },
): z.output<S> {
  let canonical: string;
  try {
    canonical = canonicalJson(body);
  } catch (cause) {
    if (!isAuditError(cause)) throw cause;
    throw new LedgerError('PAYLOAD_NOT_JSON', `${options.what} cannot be stored: ${cause.message}`, {
      cause,
      details: { reason: cause.code, path: cause.path ?? '' },
    });
  }
  const bytes = Buffer.byteLength(canonical, 'utf8');
  if (bytes > options.maxBytes) {
    throw new LedgerError(
      'PAYLOAD_TOO_LARGE',
      `${options.what} is ${bytes} bytes as canonical JSON; the limit is ${options.maxBytes}`,
      { details: { bytes, limit: options.maxBytes } },
    );
  }
  const parsed = schema.safeParse(JSON.parse(canonical));
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => ({
      path: issue.path.map((key) => `/${String(key).replaceAll('~', '~0').replaceAll('/', '~1')}`).join(''),
      code: issue.code,
      message: issue.message,
      identifier: issue.code === 'custom' && issue.params?.code === IDENTIFIER_ISSUE,
    }));
    const name = issues.find((issue) => issue.identifier);
    if (name) {
      throw new LedgerError(
        'IDENTIFIER_INVALID',
        `${options.what} is invalid at ${name.path}: ${name.message}`,
        { details: { path: name.path, issues: issues.map(({ identifier: _, ...issue }) => issue) } },
      );
    }
    throw new LedgerError(
      'VALIDATION_FAILED',
      `${options.what} is invalid at ${issues[0]!.path || 'the root'}: ${issues[0]!.message}`,
      {
        details: { issues: issues.map(({ identifier: _, ...issue }) => issue) },
      },
    );
  }
  return parsed.data;
}
