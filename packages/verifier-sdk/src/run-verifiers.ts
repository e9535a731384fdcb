import { canonicalByteLength } from './canonical-text';
import type { Check, CheckReason, CheckResult, CheckVerdict, DerivedStatus } from './check';
import type { VerifierContext } from './define-verifier';
import { assessIndependence, deriveStatus } from './derive-status';
import { isVerifierError, VerifierError } from './errors';
import type { Grants } from './grants';
import { findJsonIssue, frozenCopy, type JsonObject } from './json';
import { type Logger, silentLogger, withLogFields } from './logger';
import { measureChecks } from './measure-checks';
import type { Observation, Postcondition, Proposal, VerifierPhase } from './records';
import type { RegisteredVerifier, VerifierRegistry } from './verifier-registry';

/** Input to {@link runVerifiers}: plain JSON records plus what the host lends the verifiers. */
export interface RunVerifiersOptions {
  registry: VerifierRegistry;
  /** `post` (default) answers `proposal.postconditions`; `pre` answers `proposal.preconditions`. */
  phase?: VerifierPhase;
  /** The conditions to check; defaults to the proposal's own for the phase. */
  postconditions?: readonly Postcondition[];
  proposal: Proposal;
  /** Required in the `post` phase: the write whose result is being checked. */
  observation?: Observation | null;
  /** Grants for registrations that bring none of their own. */
  grants?: Grants;
  /**
   * The named systems the tool's registration says it writes to: a check that reads one is
   * allowed and marked `readsWrittenSystem`.
   */
  writes?: readonly string[];
  /** How source names are compared (see `WriterOptions.canonical`); the ledger passes its confusable skeleton. */
  canonical?: (name: string) => string;
  /** Cancels the whole run (e.g. the HTTP request went away). */
  signal?: AbortSignal;
  logger?: Logger;
  now?: () => Date;
}

/** What a run produced: every check, and the status derived from them. */
export interface VerificationOutcome {
  status: DerivedStatus;
  checks: Check[];
  /** The tool's server, as registered: a pass sourced here is `NOT_INDEPENDENT`. */
  writers: string[];
}

/**
 * Run every registered verifier that handles each postcondition, all concurrently, each under
 * its own deadline, and derive the status.
 *
 * Trust boundary: verifiers are plugins. Each gets frozen copies of the records, its own
 * AbortSignal, only the grants of its registration, and is raced against its deadline, so a
 * slow or hung verifier costs at most its own timeout and never delays the others. Whatever it
 * throws or returns that is not a clean verdict becomes an `error` (or `inconclusive`) check
 * with a reason code; only a verifier's own `fail` can make the status `failed`.
 *
 * @example
 * const { status, checks } = await runVerifiers({ registry, proposal, observation });
 */
export async function runVerifiers(options: RunVerifiersOptions): Promise<VerificationOutcome> {
  const phase = options.phase ?? 'post';
  const observation = options.observation ?? null;
  const conditions =
    options.postconditions ??
    (phase === 'post' ? options.proposal.postconditions : options.proposal.preconditions) ??
    [];
  if (phase === 'post' && observation === null) {
    throw new VerifierError('INPUT_INVALID', 'the post phase needs the observation it verifies', {
      field: '/observation',
    });
  }
  // Only the operator's configuration decides independence: the tool's server (the proposal
  // names its registered one; the observation must name the same). The observation's
  // `result_source` is the gateway's claim and is kept in its record, never counted here.
  const writers = [options.proposal.server_id, observation?.server_id].filter(
    (w, i, all): w is string => typeof w === 'string' && w !== '' && all.indexOf(w) === i,
  );
  const independence = {
    writer: writers,
    writes: options.writes ?? [],
    ...(options.canonical ? { canonical: options.canonical } : {}),
  };
  const assess = (check: Check) => assessIndependence(check, independence);
  const shared: Shared = {
    assess,
    phase,
    proposal: frozenCopy(options.proposal),
    observation: observation === null ? null : frozenCopy(observation),
    grants: options.grants ?? {},
    signal: options.signal,
    logger: options.logger ?? silentLogger,
    now: options.now ?? (() => new Date()),
  };
  const perCondition = conditions.map((postcondition) => {
    const entries = options.registry.forPostcondition(postcondition.name, phase);
    if (entries.length === 0) return [Promise.resolve([noVerifier(postcondition)])];
    return entries.map((entry) =>
      runMeasured(entry, frozenCopy(postcondition), shared).then((checks) =>
        answering(checks, postcondition),
      ),
    );
  });
  const checks = (await Promise.all(perCondition.flat())).flat().map(assess);
  return { status: deriveStatus(checks, independence), checks, writers };
}

// A check answers one declared postcondition, named by its name and its params: two of one
// name with different params are proven separately (see `answeredConditions`).
function answering(checks: Check[], postcondition: Postcondition): Check[] {
  return checks.map((check) => ({ ...check, params: postcondition.params ?? {} }));
}

interface Shared {
  assess: (check: Check) => Check;
  phase: VerifierPhase;
  proposal: Proposal;
  observation: Observation | null;
  grants: Grants;
  signal: AbortSignal | undefined;
  logger: Logger;
  now: () => Date;
}

/** One reading without a policy; with one, as many as it says (see `measureChecks`). */
function runMeasured(
  entry: RegisteredVerifier,
  postcondition: Postcondition,
  shared: Shared,
): Promise<Check[]> {
  if (entry.measurement === null) return runOne(entry, postcondition, shared);
  return measureChecks({
    policy: entry.measurement,
    read: () => runOne(entry, postcondition, shared),
    assess: shared.assess,
    ...(shared.signal ? { signal: shared.signal } : {}),
    now: shared.now,
    postcondition: postcondition.name,
    verifier: recordedAs(entry),
  });
}

function recordedAs(entry: RegisteredVerifier): Check['verifier'] {
  const { verifier } = entry;
  return { id: verifier.id, version: verifier.version, apiVersion: verifier.apiVersion, name: entry.name };
}

async function runOne(
  entry: RegisteredVerifier,
  postcondition: Postcondition,
  shared: Shared,
): Promise<Check[]> {
  const { verifier } = entry;
  const recordedAsVerifier = recordedAs(entry);
  const logger = withLogFields(shared.logger, { verifier: entry.name, postcondition: postcondition.name });
  const grants: Grants = { ...shared.grants, ...entry.grants };
  const started = performance.now();
  const errorCheck = (reason: CheckReason, message: string, evidence: JsonObject = {}): Check[] => [
    {
      name: postcondition.name,
      postcondition: postcondition.name,
      status: 'error',
      source: null,
      observed: null,
      expected: null,
      evidence,
      message,
      reason,
      verifier: recordedAsVerifier,
      durationMs: elapsed(started),
    },
  ];

  const missing = (verifier.requires ?? []).filter((grant) => grants[grant] === undefined);
  if (missing.length > 0) {
    return errorCheck('GRANT_MISSING', `the host did not grant ${missing.join(' and ')}`, { missing });
  }
  if (shared.signal?.aborted)
    return errorCheck('VERIFIER_ABORTED', 'the run was cancelled before this verifier started');

  const controller = new AbortController();
  const deadline = new VerifierError('VERIFIER_TIMEOUT', `no answer within ${entry.timeoutMs} ms`);
  const cancelled = new VerifierError('VERIFIER_ABORTED', 'the run was cancelled');
  const onCancel = () => controller.abort(cancelled);
  shared.signal?.addEventListener('abort', onCancel, { once: true });
  const timer = setTimeout(() => controller.abort(deadline), entry.timeoutMs);
  const context: VerifierContext<unknown> = {
    verifier: { id: verifier.id, version: verifier.version, name: entry.name },
    phase: shared.phase,
    proposal: shared.proposal,
    observation: shared.observation,
    postcondition,
    options: entry.options,
    signal: controller.signal,
    timeoutMs: entry.timeoutMs,
    ...(grants.fetch ? { fetch: grants.fetch } : {}),
    ...(grants.sql ? { sql: grants.sql } : {}),
    ...(grants.redis ? { redis: grants.redis } : {}),
    logger,
    now: shared.now,
  };
  try {
    const work = Promise.resolve().then(() => verifier.check(context));
    // The verifier may ignore its signal; the race makes sure we stop waiting at the deadline.
    // A late settlement is swallowed so it cannot become an unhandled rejection.
    work.catch(() => undefined);
    const returned = await Promise.race([work, rejectOnAbort(controller.signal)]);
    const checks = toChecks(returned, postcondition, recordedAsVerifier, started);
    return entry.source === null ? checks : checks.map((check) => withConfiguredSource(check, entry.source!));
  } catch (error) {
    if (controller.signal.aborted) {
      const reason = controller.signal.reason === cancelled ? 'VERIFIER_ABORTED' : 'VERIFIER_TIMEOUT';
      return errorCheck(reason, (controller.signal.reason as Error).message, { timeoutMs: entry.timeoutMs });
    }
    if (
      isVerifierError(error) &&
      (error.code === 'SOURCE_UNAVAILABLE' || error.code === 'SOURCE_FORBIDDEN')
    ) {
      return errorCheck(error.code, error.message, jsonEvidence(error.evidence));
    }
    logger.warn('verifier crashed', { error: describeError(error) });
    return errorCheck('VERIFIER_CRASHED', `verifier threw: ${describeError(error)}`, {
      error: { name: error instanceof Error ? error.name : typeof error },
    });
  } finally {
    clearTimeout(timer);
    shared.signal?.removeEventListener('abort', onCancel);
  }
}

// The host, not the plugin, knows which system it lent the verifier: its configured name is the
// source. What the plugin said is kept when it differs; an error check keeps naming no source.
function withConfiguredSource(check: Check, source: string): Check {
  if (check.status === 'error' || check.reason === 'RESULT_INVALID') return check;
  if (check.source === source) return check;
  return { ...check, source, ...(check.source === null ? {} : { reportedSource: check.source }) };
}

function rejectOnAbort(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

const RESULT_KEYS = new Set([
  'name',
  'status',
  'source',
  'observed',
  'expected',
  'evidence',
  'message',
  'reason',
  'evidence_ref',
]);
const VERDICTS: readonly string[] = ['pass', 'fail', 'inconclusive'];
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
const NO_CONTROL_CHARACTERS = /^[^\u0000-\u001f\u007f]+$/u;

/** Whether `value` can be a check's `evidence_ref`: 1 to 256 characters, no control characters, no surrounding spaces. */
export function isEvidenceRef(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length <= 256 &&
    NO_CONTROL_CHARACTERS.test(value) &&
    value.trim() === value
  );
}

/**
 * The largest check result the host records, in bytes of its canonical JSON (64 KiB). A larger
 * one is recorded as one `RESULT_INVALID` check with its size and this limit as evidence (and
 * its verdict in `reported`: a `fail` still counts), so one verbose check can neither crowd
 * out the others nor make the whole verification too large to record.
 */
export const MAX_CHECK_RESULT_BYTES = 64 * 1024;
const REASON = /^[A-Z][A-Z0-9_]*$/;

/**
 * Turn what a verifier returned into recorded checks, or one `RESULT_INVALID` error check when
 * it is not a clean list of plain-JSON results: the ledger hashes these bytes, so nothing
 * JSON cannot carry may get through, and a typo in a key (`evidance`) must not vanish silently.
 */
export function toChecks(
  returned: unknown,
  postcondition: Postcondition,
  verifier: Check['verifier'],
  started?: number,
): Check[] {
  const durationMs = started === undefined ? null : elapsed(started);
  const invalid = (message: string, evidence: JsonObject = {}): Check[] => [
    {
      name: postcondition.name,
      postcondition: postcondition.name,
      status: 'error',
      source: null,
      observed: null,
      expected: null,
      evidence,
      message: `verifier returned an invalid result: ${message}`,
      reason: 'RESULT_INVALID',
      verifier,
      durationMs,
    },
  ];
  const list = Array.isArray(returned) ? returned : [returned];
  if (list.length === 0) return invalid('no check results');
  const issue = findJsonIssue(list);
  if (issue) {
    const path = Array.isArray(returned) ? issue.path : issue.path.replace(/^\/0/, '');
    return invalid(issue.message, { issue: { code: issue.code, path } });
  }
  const checks: Check[] = [];
  for (const [index, item] of list.entries()) {
    const at = Array.isArray(returned) ? `/${index}` : '';
    const problem = resultProblem(item);
    if (problem) return invalid(`${at || 'result'}: ${problem.message}`, { field: `${at}${problem.field}` });
    const result = item as CheckResult;
    const bytes = canonicalByteLength(result);
    if (bytes > MAX_CHECK_RESULT_BYTES) {
      checks.push(oversize(result, bytes, postcondition, verifier, durationMs));
      continue;
    }
    checks.push({
      name: result.name,
      postcondition: postcondition.name,
      status: result.status as CheckVerdict,
      source: typeof result.source === 'string' && result.source.trim() !== '' ? result.source : null,
      observed: result.observed ?? null,
      expected: result.expected ?? null,
      evidence: result.evidence ?? {},
      message: result.message ?? '',
      reason: result.reason ?? null,
      ...(result.evidence_ref !== undefined ? { evidence_ref: result.evidence_ref } : {}),
      verifier,
      durationMs,
    });
  }
  return checks;
}

function resultProblem(item: unknown): { field: string; message: string } | null {
  if (typeof item !== 'object' || item === null || Array.isArray(item))
    return { field: '', message: 'is not an object' };
  const result = item as Record<string, unknown>;
  const unknownKey = Object.keys(result).find((key) => !RESULT_KEYS.has(key));
  if (unknownKey !== undefined) return { field: `/${unknownKey}`, message: `unknown key "${unknownKey}"` };
  if (typeof result.name !== 'string' || result.name === '') {
    return { field: '/name', message: 'name must be a non-empty string' };
  }
  if (typeof result.status !== 'string' || !VERDICTS.includes(result.status)) {
    return { field: '/status', message: 'status must be "pass", "fail" or "inconclusive"' };
  }
  if (result.source !== undefined && typeof result.source !== 'string') {
    return { field: '/source', message: 'source must be a string' };
  }
  const evidence = result.evidence;
  if (
    evidence !== undefined &&
    (typeof evidence !== 'object' || evidence === null || Array.isArray(evidence))
  ) {
    return { field: '/evidence', message: 'evidence must be an object' };
  }
  if (result.message !== undefined && typeof result.message !== 'string') {
    return { field: '/message', message: 'message must be a string' };
  }
  if (result.reason !== undefined && (typeof result.reason !== 'string' || !REASON.test(result.reason))) {
    return { field: '/reason', message: 'reason must be a SCREAMING_SNAKE code' };
  }
  if (result.evidence_ref !== undefined && !isEvidenceRef(result.evidence_ref)) {
    return {
      field: '/evidence_ref',
      message: 'evidence_ref must be 1 to 256 characters, without control characters or surrounding spaces',
    };
  }
  return null;
}

function oversize(
  result: CheckResult,
  bytes: number,
  postcondition: Postcondition,
  verifier: Check['verifier'],
  durationMs: number | null,
): Check {
  return {
    name: postcondition.name,
    postcondition: postcondition.name,
    status: 'error',
    source: null,
    observed: null,
    expected: null,
    evidence: { bytes, limit: MAX_CHECK_RESULT_BYTES },
    message: `verifier returned an invalid result: ${bytes} bytes, over the limit of ${MAX_CHECK_RESULT_BYTES}`,
    reason: 'RESULT_INVALID',
    reported: result.status,
    verifier,
    durationMs,
  };
}

function noVerifier(postcondition: Postcondition): Check {
  return {
    name: postcondition.name,
    postcondition: postcondition.name,
    status: 'inconclusive',
    source: null,
    observed: null,
    expected: null,
    evidence: {},
    message: `no registered verifier handles "${postcondition.name}"`,
    reason: 'NO_VERIFIER',
    verifier: null,
    durationMs: null,
  };
}

function jsonEvidence(evidence: Record<string, unknown> | undefined): JsonObject {
  if (evidence === undefined) return {};
  // Evidence attached to a thrown error is the plugin's and unchecked: keep it only if it is JSON.
  return findJsonIssue(evidence) === null ? (evidence as JsonObject) : {};
}

function describeError(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}

function elapsed(started: number): number {
  return Math.round((performance.now() - started) * 1000) / 1000;
}
