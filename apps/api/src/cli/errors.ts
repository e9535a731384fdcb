import { postgresReason } from '@vouch/ledger';
import { ConfigError, type DatabaseTarget, describeTarget } from '../config';
import { DataDirBusyError } from '../data-dir-lock';
import { summarizeError } from '../logger';
import { CliError } from './io';

/**
 * Say what to fix. Every failure that is not a verdict becomes one sentence that names the
 * setting or the command to change; the cause's own message is appended for the details.
 */
export function explainFailure(error: unknown, target?: DatabaseTarget): string {
  if (error instanceof CliError || error instanceof ConfigError) return error.message;
  if (error instanceof DataDirBusyError) {
    return `${error.dataDir} is open in another process (pid ${error.pid}), probably \`vouch serve\`. PGlite serves one process at a time: stop that process first, or ask the running server over HTTP (GET /v1/logs/{log}/verify, POST /v1/keys).`;
  }
  const err = error as { name?: string; code?: string; message?: string; cause?: unknown };
  // Refused by the grants (42501 insufficient_privilege): the connection works, the role is wrong.
  if (err?.code === 'DATABASE_PERMISSION_DENIED') return `${err.code}: ${err.message}`;
  const reason = postgresReason(error);
  if (reason.sqlstate === '42501') {
    const what = err?.name === 'LedgerError' ? err.message : 'a statement failed';
    return `${what}: ${reason.message} (SQLSTATE 42501). The database role in DATABASE_URL lacks a privilege this needs: apply migrations with \`vouch migrate\` as the owner role (not \`serve --migrate\` as the runtime role), then serve as the runtime role that \`vouch migrate --runtime-role\` grants.`;
  }
  if (err?.name === 'LedgerError' && err.code === 'DATABASE_UNAVAILABLE') {
    const where = target ? describeTarget(target) : 'the database';
    // A SQLSTATE outside the connection and resource classes means the server answered.
    const answered = reason.sqlstate !== undefined && !/^(08|53|57)/.test(reason.sqlstate);
    const hint =
      target?.kind !== 'postgres'
        ? 'Check VOUCH_DATA_DIR and that the directory is readable and writable.'
        : answered
          ? 'Postgres is reachable and refused the statement for the reason given.'
          : 'Check DATABASE_URL and that Postgres is running and reachable.';
    return `cannot use ${where}: ${err.message}${causeText(err.cause)}. ${hint}`;
  }
  if (err?.name === 'ApiError' || err?.name === 'LedgerError' || err?.name === 'AuditError')
    return `${err.code}: ${err.message}`;
  // Verifier configuration errors name the file and the field (a JSON Pointer) to fix.
  if (err?.name === 'VerifierError') return `verifier configuration: ${err.code}: ${err.message}`;
  return `unexpected error: ${safeText(error)}`;
}

function causeText(cause: unknown): string {
  if (!(cause instanceof Error)) return '';
  return ` (${safeText(cause)})`;
}

/**
 * One line about an error that never carries a statement or its parameters: a statement can
 * hold a secret (a role's password is statement text) and parameters can be anything a
 * request carried. A failed query is told by the server's reason instead.
 */
function safeText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const summary = summarizeError(error);
  const message = String(summary.message);
  if (!message.startsWith('Failed query:')) return message.split('\n')[0]!;
  const reason = postgresReason(error);
  return reason.sqlstate ? `${reason.message} (SQLSTATE ${reason.sqlstate})` : reason.message;
}
