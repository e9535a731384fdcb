import { LedgerError } from '@vouch/ledger';
import { IDENTIFIER_ISSUE } from '@vouch/records';
import type { ZodError } from 'zod';
import { ApiError } from '../errors';

/** One problem with a request, located by a JSON Pointer into the part it came from. */
export interface RequestIssue {
  /** `json`, `query`, `param` or `header`. */
  in: string;
  path: string;
  code: string;
  message: string;
  /** For `unrecognized_keys`: the fields the schema does not know. */
  keys?: string[];
}

/**
 * The `defaultHook` of every route: a request that fails its zod schema (wrong type, missing
 * field, unknown field) is refused with 400 `INVALID_REQUEST` and every issue, before the
 * handler runs.
 */
export function validationHook(result: { success: boolean; error?: ZodError; target: string }): void {
  if (result.success || !result.error) return;
  // A name an approver would read that is not a plain identifier has its own code, as the
  // ledger answers it (`parseInput`): the caller learns which field, not only that one failed.
  const name = result.error.issues.find(
    (issue) => issue.code === 'custom' && issue.params?.code === IDENTIFIER_ISSUE,
  );
  if (name && result.target === 'json') {
    const path = pointerOf(name.path);
    throw new LedgerError('IDENTIFIER_INVALID', `the request body is invalid at ${path}: ${name.message}`, {
      details: { path },
    });
  }
  const issues: RequestIssue[] = result.error.issues.map((issue) => ({
    in: result.target,
    path: pointerOf(issue.path),
    code: issue.code,
    message: issue.message,
    ...('keys' in issue && Array.isArray(issue.keys) ? { keys: issue.keys.map(String) } : {}),
  }));
  const first = issues[0]!;
  const part = result.target === 'json' ? 'body' : result.target;
  throw new ApiError(
    'INVALID_REQUEST',
    `the request ${part} does not match the schema: ${first.path || '(root)'}: ${first.message}`,
    { details: { issues } },
  );
}

function pointerOf(path: readonly PropertyKey[]): string {
  return `/${path.map((p) => String(p).replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`.replace(
    /^\/$/,
    '',
  );
}
