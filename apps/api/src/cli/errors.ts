import { ConfigError, type DatabaseTarget, describeTarget } from '../config';
import { DataDirBusyError } from '../data-dir-lock';
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
  if (err?.name === 'LedgerError' && err.code === 'DATABASE_UNAVAILABLE') {
    const where = target ? describeTarget(target) : 'the database';
    const hint =
      target?.kind === 'postgres'
        ? 'Check DATABASE_URL and that Postgres is running and reachable.'
        : 'Check VOUCH_DATA_DIR and that the directory is readable and writable.';
    return `cannot use ${where}: ${err.message}${causeText(err.cause)}. ${hint}`;
  }
  if (err?.name === 'ApiError' || err?.name === 'LedgerError') return `${err.code}: ${err.message}`;
  // Verifier configuration errors name the file and the field (a JSON Pointer) to fix.
  if (err?.name === 'VerifierError') return `verifier configuration: ${err.code}: ${err.message}`;
  return `unexpected error: ${error instanceof Error ? error.message : String(error)}`;
}

function causeText(cause: unknown): string {
  if (!(cause instanceof Error)) return '';
  return ` (${cause.message.split('\n')[0]})`;
}
