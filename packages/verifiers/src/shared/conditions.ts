import { Environment } from '@marcbachmann/cel-js';
import { type JsonValue, jsonToCel } from '@vouch/verifier-sdk';
import { z } from 'zod';
import type { TemplateScope } from './template';

/**
 * Declarative conditions in CEL (Common Expression Language). CEL rather than JSONata because
 * CEL is not Turing-complete (no recursion, no unbounded loops: every expression terminates in
 * time linear in its size and its input), has no side effects, is type-checked before it runs,
 * and is what Kubernetes admission policies and many policy engines already use. JSONata can
 * define recursive functions, so a condition in configuration could spin a verifier forever.
 */

/**
 * The variables a condition can read. `result` is what the verifier fetched; the rest is the
 * approved proposal. Not `observation`: the tool's result is what the gateway posted, and a
 * condition that reads it lets the audited party decide what counts as proof (docs/verification.md,
 * "Evidence is bound").
 */
export const CONDITION_VARIABLES = ['result', 'target', 'arguments', 'params', 'proposal'] as const;

type ConditionVariable = (typeof CONDITION_VARIABLES)[number];

/** Extra variables a verifier may declare next to `result` (e.g. `status` for http-json). */
export type ConditionExtras = Readonly<Record<string, JsonValue>>;

const MAX_EXPRESSION_LENGTH = 4096;

function environment(extras: readonly string[]): Environment {
  let env = new Environment({
    enableOptionalTypes: true,
    limits: {
      maxAstNodes: 2000,
      maxDepth: 50,
      maxListElements: 200,
      maxMapEntries: 200,
      maxCallArguments: 16,
    },
  });
  for (const name of [...CONDITION_VARIABLES, ...extras]) env = env.registerVariable(name, 'dyn');
  return env;
}

const environments = new Map<string, Environment>();
function environmentFor(extras: readonly string[]): Environment {
  const key = [...extras].sort().join(',');
  let env = environments.get(key);
  if (env === undefined) {
    env = environment(extras);
    environments.set(key, env);
  }
  return env;
}

type Compiled = (context: Record<string, unknown>) => unknown;
const compiled = new Map<string, Compiled>();

/** Why an expression cannot be used, with its 1-based line and column; null when it compiles to a bool. */
export function conditionProblem(source: string, extras: readonly string[] = []): string | null {
  if (source.length > MAX_EXPRESSION_LENGTH) return `longer than ${MAX_EXPRESSION_LENGTH} characters`;
  const env = environmentFor(extras);
  try {
    env.parse(source);
  } catch (error) {
    const e = error as { range?: { start: number }; summary?: string; message?: string };
    return `${at(source, e.range?.start)}: ${e.summary ?? firstLine(e.message)}`;
  }
  const checked = env.check(source) as {
    valid: boolean;
    type?: string;
    error?: { range?: { start: number }; message?: string };
  };
  if (!checked.valid) {
    const where = at(source, checked.error?.range?.start);
    if (/\bobservation\b/.test(checked.error?.message ?? '')) {
      return `${where}: a condition may not read observation (the tool's result, which the gateway posted): judge what was read against target, arguments and params`;
    }
    return `${where}: ${firstLine(checked.error?.message)}`;
  }
  if (checked.type !== 'bool' && checked.type !== 'dyn') {
    return `line 1, column 1: must evaluate to a bool, not ${checked.type}`;
  }
  return null;
}

function at(source: string, offset: number | undefined): string {
  const upTo = source.slice(0, offset ?? 0);
  const lines = upTo.split('\n');
  return `line ${lines.length}, column ${lines.at(-1)!.length + 1}`;
}

function firstLine(message: string | undefined): string {
  return (message ?? 'invalid expression').split('\n')[0]!;
}

/** A zod string that must be a CEL expression compiling to a bool over the condition variables and `extras`. */
export function celCondition(extras: readonly string[] = []) {
  return z
    .string()
    .min(1)
    .superRefine((source, ctx) => {
      const problem = conditionProblem(source, extras);
      if (problem !== null)
        ctx.addIssue({ code: 'custom', message: `not a valid CEL condition: ${problem}` });
    });
}

/** The option fields every built-in with conditions accepts. */
export function conditionOptions(extras: readonly string[] = []) {
  return {
    /** CEL: the check passes when this is true (and fails when it is false, unless `failureCondition` is given). */
    successCondition: celCondition(extras).optional(),
    /** CEL: the check fails when this is true. */
    failureCondition: celCondition(extras).optional(),
  };
}

/** How the conditions came out. `null` verdict: no condition configured. */
export interface ConditionOutcome {
  verdict: 'pass' | 'fail' | 'inconclusive' | null;
  /** Recorded in the check's evidence: each condition and its value, or why it could not be evaluated. */
  evidence: Record<string, JsonValue>;
  message: string;
  reason?: 'CONDITION_ERROR' | 'CONDITIONS_UNDECIDED';
}

/**
 * Evaluate the configured conditions, with Argo Rollouts' semantics: a true `failureCondition`
 * fails; otherwise a true `successCondition` passes; with only a `successCondition`, false fails;
 * with only a `failureCondition`, false passes; with both and neither true, inconclusive.
 * A condition that cannot be evaluated (a missing key, a type mismatch, a non-bool) is
 * inconclusive with reason `CONDITION_ERROR`: the expression broke, not the postcondition.
 */
export function evaluateConditions(
  options: { successCondition?: string | undefined; failureCondition?: string | undefined },
  input: { result: unknown; scope: TemplateScope; extras?: ConditionExtras },
): ConditionOutcome {
  const { successCondition, failureCondition } = options;
  if (successCondition === undefined && failureCondition === undefined) {
    return { verdict: null, evidence: {}, message: '' };
  }
  const extras = input.extras ?? {};
  const context: Record<ConditionVariable | string, unknown> = {
    result: jsonToCel(input.result),
    target: jsonToCel(input.scope.target),
    arguments: jsonToCel(input.scope.arguments),
    params: jsonToCel(input.scope.params),
    proposal: jsonToCel(input.scope.proposal),
  };
  for (const [name, value] of Object.entries(extras)) context[name] = jsonToCel(value);
  const names = Object.keys(extras);

  const evidence: Record<string, JsonValue> = {};
  const run = (label: 'successCondition' | 'failureCondition', source: string): boolean | string => {
    let value: unknown;
    try {
      value = compile(source, names)(context);
    } catch (error) {
      const e = error as { summary?: string; message?: string };
      const problem = e.summary ?? firstLine(e.message);
      evidence[label] = { expression: source, error: problem };
      return problem;
    }
    if (typeof value !== 'boolean') {
      evidence[label] = { expression: source, error: 'did not evaluate to a bool' };
      return 'did not evaluate to a bool';
    }
    evidence[label] = { expression: source, value };
    return value;
  };

  const failed = failureCondition === undefined ? false : run('failureCondition', failureCondition);
  if (typeof failed === 'string') return broken('failureCondition', failed, evidence);
  if (failed) return { verdict: 'fail', evidence, message: 'failureCondition is true' };
  if (successCondition === undefined) {
    return { verdict: 'pass', evidence, message: 'failureCondition is false' };
  }
  const succeeded = run('successCondition', successCondition);
  if (typeof succeeded === 'string') return broken('successCondition', succeeded, evidence);
  if (succeeded) return { verdict: 'pass', evidence, message: 'successCondition is true' };
  if (failureCondition === undefined) {
    return { verdict: 'fail', evidence, message: 'successCondition is false' };
  }
  return {
    verdict: 'inconclusive',
    reason: 'CONDITIONS_UNDECIDED',
    evidence,
    message: 'neither successCondition nor failureCondition is true',
  };
}

function broken(label: string, problem: string, evidence: Record<string, JsonValue>): ConditionOutcome {
  return {
    verdict: 'inconclusive',
    reason: 'CONDITION_ERROR',
    evidence,
    message: `${label} could not be evaluated: ${problem}`,
  };
}

function compile(source: string, extras: readonly string[]): Compiled {
  const key = `${[...extras].sort().join(',')}\u0000${source}`;
  let fn = compiled.get(key);
  if (fn === undefined) {
    fn = environmentFor(extras).parse(source) as unknown as Compiled;
    compiled.set(key, fn);
  }
  return fn;
}

/** Combine an assertion verdict with a condition verdict: any fail fails, then any inconclusive. */
export function combineVerdicts(
  ...verdicts: ReadonlyArray<'pass' | 'fail' | 'inconclusive' | null>
): 'pass' | 'fail' | 'inconclusive' {
  if (verdicts.includes('fail')) return 'fail';
  if (verdicts.includes('inconclusive')) return 'inconclusive';
  return 'pass';
}
