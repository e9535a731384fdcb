import type { CheckResult } from '@vouch/verifier-sdk';
import type { TemplateProblem } from './template';

/** The fields of a check a built-in fills in; its name, status and source come from {@link checkResultOf}. */
export type CheckFields = Omit<CheckResult, 'name' | 'status' | 'source'>;

/** Builds one postcondition's check: `result('fail', { message, evidence })`. */
export type ResultOf = (status: CheckResult['status'], fields: CheckFields) => CheckResult;

/**
 * The result builder every built-in verifier uses: each check carries the postcondition's
 * name and the source it read (the configured connection's name unless the options name one).
 */
export function checkResultOf(name: string, source: string): ResultOf {
  return (status, fields) => ({ name, status, source, ...fields });
}

/**
 * The inconclusive check for a template that could not be filled: the agent's proposal lacks
 * a value the query needs, which says nothing about the postcondition either way.
 */
export function unfilledTemplate(result: ResultOf, problem: TemplateProblem, what: string): CheckResult {
  return result('inconclusive', {
    reason: problem.reason,
    evidence: { placeholder: problem.path },
    message: `cannot build ${what}: {${problem.path}} is missing or not a plain value`,
  });
}
