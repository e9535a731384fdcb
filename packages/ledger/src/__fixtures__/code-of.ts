import { isLedgerError } from '../errors';

/** The code of the LedgerError `promise` rejects with, or `SUCCEEDED`; any other error is rethrown. */
export async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (isLedgerError(error)) return error.code;
    throw error;
  }
  return 'SUCCEEDED';
}
