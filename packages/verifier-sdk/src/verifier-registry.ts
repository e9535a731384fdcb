import {
  type AnyVerifier,
  DEFAULT_VERIFIER_TIMEOUT_MS,
  MAX_VERIFIER_TIMEOUT_MS,
  matchesPostcondition,
  type PostconditionPattern,
  phasesOf,
  SUPPORTED_API_VERSIONS,
} from './define-verifier';
import { VerifierError } from './errors';
import type { Grants } from './grants';
import { findJsonIssue, frozenCopy } from './json';
import {
  type MeasurementPolicy,
  type ResolvedMeasurementPolicy,
  resolveMeasurementPolicy,
} from './measurement-policy';
import type { VerifierPhase } from './records';
import { isStandardSchema, type OptionIssue, validateWithSchema } from './standard-schema';

/** One verifier with its configuration, as given to {@link createVerifierRegistry}. */
export interface VerifierRegistration {
  // biome-ignore lint/suspicious/noExplicitAny: verifiers of every options type are registered side by side
  verifier: AnyVerifier | Record<string, any>;
  /** Raw options; validated against the verifier's schema, with defaults applied. */
  options?: unknown;
  /** What this registration may reach; overrides the grants passed to `runVerifiers`. */
  grants?: Grants;
  /** Unique name for this registration (defaults to the verifier id); needed to register one verifier twice. */
  name?: string;
  /** Replaces the verifier's own `handles`, e.g. to bind a generic `sql` verifier to `refund.recorded`. */
  handles?: readonly PostconditionPattern[];
  /** Replaces the verifier's default deadline. */
  timeoutMs?: number;
  /** Read each postcondition more than once (retries, interval, limits); replaces the verifier's own. */
  measurement?: MeasurementPolicy;
  /**
   * The configured, named system this registration reads (`payments-ledger`): recorded as the
   * source of its checks, whatever the plugin reports, so independence is judged on a name the
   * operator chose. Without it, the plugin's own `source` is recorded.
   */
  source?: string;
}

/** A validated registration: what the host runs. */
export interface RegisteredVerifier {
  readonly name: string;
  readonly verifier: AnyVerifier;
  /** Validated options with defaults applied, frozen. */
  readonly options: unknown;
  readonly grants: Readonly<Grants>;
  readonly handles: readonly PostconditionPattern[];
  readonly phases: readonly VerifierPhase[];
  /** The deadline of one reading. */
  readonly timeoutMs: number;
  /** Null: one reading, as without a policy. */
  readonly measurement: ResolvedMeasurementPolicy | null;
  /** The configured system its checks are recorded as read from; null: the plugin's own `source`. */
  readonly source: string | null;
}

/** The verifiers a host can run, validated once at startup. */
export interface VerifierRegistry {
  readonly entries: readonly RegisteredVerifier[];
  /** The registrations that answer `postcondition` in `phase`, in registration order. */
  forPostcondition(postcondition: string, phase: VerifierPhase): RegisteredVerifier[];
  get(name: string): RegisteredVerifier | undefined;
}

const ID = /^(?:[a-z][a-z0-9]*(?:-[a-z0-9]+)*\/)?[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;
const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;
const PHASES: readonly string[] = ['pre', 'post'];
const GRANTS: readonly string[] = ['fetch', 'sql', 'redis'];

/**
 * Validate verifiers and their options and return a registry. Everything that can be wrong
 * with a configuration fails here, at startup, with a `VerifierError` that names the verifier
 * (`verifier`) and the field (`field`, a JSON Pointer into the registration): an unsupported
 * `apiVersion` (`VERIFIER_API_UNSUPPORTED`), a malformed definition (`VERIFIER_INVALID`), a
 * repeated name (`VERIFIER_DUPLICATE`), options the schema refuses (`OPTIONS_INVALID`).
 *
 * @example
 * const registry = createVerifierRegistry([
 *   { verifier: sqlVerifier, name: 'refund-row', handles: ['refund.recorded'], options: { query, assert }, grants: { sql } },
 * ]);
 */
export function createVerifierRegistry(registrations: readonly VerifierRegistration[]): VerifierRegistry {
  const entries: RegisteredVerifier[] = [];
  const byName = new Map<string, RegisteredVerifier>();
  registrations.forEach((registration, index) => {
    const entry = register(registration, index);
    if (byName.has(entry.name)) {
      throw new VerifierError(
        'VERIFIER_DUPLICATE',
        `verifier "${entry.name}" is registered twice; give one registration a distinct name`,
        { verifier: entry.name, field: '/name' },
      );
    }
    byName.set(entry.name, entry);
    entries.push(entry);
  });
  Object.freeze(entries);
  return Object.freeze({
    entries,
    forPostcondition(postcondition: string, phase: VerifierPhase) {
      return entries.filter(
        (e) => e.phases.includes(phase) && matchesPostcondition(e.handles, postcondition),
      );
    },
    get(name: string) {
      return byName.get(name);
    },
  });
}

function register(registration: VerifierRegistration, index: number): RegisteredVerifier {
  const verifier = validateVerifier(registration?.verifier, `#${index}`);
  const name = registration.name ?? verifier.id;
  const fail = (field: string, message: string): never => {
    throw new VerifierError('VERIFIER_INVALID', `verifier "${name}": ${message}`, { verifier: name, field });
  };
  if (typeof name !== 'string' || name.trim() === '') fail('/name', 'name must be a non-empty string');
  const handles = registration.handles ?? verifier.handles;
  if (registration.handles !== undefined) checkHandles(registration.handles, (m) => fail('/handles', m));
  const timeoutMs = registration.timeoutMs ?? verifier.timeoutMs ?? DEFAULT_VERIFIER_TIMEOUT_MS;
  if (registration.timeoutMs !== undefined)
    checkTimeout(registration.timeoutMs, (m) => fail('/timeoutMs', m));
  const measurement =
    registration.measurement !== undefined
      ? resolveMeasurementPolicy(registration.measurement, '/measurement', name)
      : verifier.measurement !== undefined
        ? resolveMeasurementPolicy(verifier.measurement, '/verifier/measurement', name)
        : null;
  if (
    registration.source !== undefined &&
    (typeof registration.source !== 'string' || registration.source.trim() === '')
  ) {
    fail('/source', 'source must name a configured system');
  }
  const source = registration.source ?? null;
  return Object.freeze({
    name,
    verifier,
    options: validateOptions(verifier, registration.options, name),
    grants: Object.freeze({ ...registration.grants }),
    handles: Object.freeze([...handles]),
    phases: phasesOf(verifier),
    timeoutMs,
    measurement,
    source,
  });
}

/**
 * Check that `value` is a verifier this host can run; throws `VERIFIER_INVALID` (with `field`
 * under `/verifier`) or `VERIFIER_API_UNSUPPORTED`. `label` names it when it has no usable id.
 */
export function validateVerifier(value: unknown, label = 'verifier'): AnyVerifier {
  const v = value as Record<string, unknown> | null | undefined;
  const id = typeof v?.id === 'string' ? v.id : label;
  const fail = (field: string, message: string): never => {
    throw new VerifierError('VERIFIER_INVALID', `verifier "${id}": ${message}`, {
      verifier: id,
      field: `/verifier${field}`,
    });
  };
  if (typeof v !== 'object' || v === null) return fail('', 'is not a verifier object (did you export it?)');
  if (typeof v.id !== 'string' || !ID.test(v.id)) {
    fail('/id', 'id must be kebab-case, or vendor/name for third-party verifiers');
  }
  if (typeof v.version !== 'string' || !SEMVER.test(v.version))
    fail('/version', 'version must be a semver string');
  if (typeof v.apiVersion !== 'number' || !SUPPORTED_API_VERSIONS.includes(v.apiVersion)) {
    throw new VerifierError(
      'VERIFIER_API_UNSUPPORTED',
      `verifier "${id}" was written for SDK apiVersion ${String(v.apiVersion)}; this host supports ${SUPPORTED_API_VERSIONS.join(', ')}`,
      { verifier: id, field: '/verifier/apiVersion' },
    );
  }
  checkHandles(v.handles, (m) => fail('/handles', m));
  if (v.phase !== undefined) {
    const phases: unknown = typeof v.phase === 'string' ? [v.phase] : v.phase;
    if (!Array.isArray(phases) || phases.length === 0 || phases.some((p) => !PHASES.includes(p))) {
      fail('/phase', 'phase must be "pre", "post" or a list of them');
    }
  }
  if (v.options !== undefined && !isStandardSchema(v.options))
    fail('/options', 'options must be a Standard Schema (e.g. zod)');
  if (v.timeoutMs !== undefined) checkTimeout(v.timeoutMs, (m) => fail('/timeoutMs', m));
  if (v.measurement !== undefined) resolveMeasurementPolicy(v.measurement, '/verifier/measurement', id);
  if (
    v.requires !== undefined &&
    (!Array.isArray(v.requires) || v.requires.some((g) => !GRANTS.includes(g)))
  ) {
    fail('/requires', 'requires must list grants among "fetch", "sql" and "redis"');
  }
  if (typeof v.check !== 'function') fail('/check', 'check must be a function');
  return v as unknown as AnyVerifier;
}

function checkHandles(handles: unknown, fail: (message: string) => never): void {
  if (!Array.isArray(handles) || handles.length === 0) fail('handles must list at least one postcondition');
  for (const pattern of handles as unknown[]) {
    if (!(pattern instanceof RegExp) && (typeof pattern !== 'string' || pattern.trim() === '')) {
      fail('handles must hold postcondition names, globs or RegExps');
    }
  }
}

function checkTimeout(timeoutMs: unknown, fail: (message: string) => never): void {
  if (
    typeof timeoutMs !== 'number' ||
    !Number.isInteger(timeoutMs) ||
    timeoutMs < 1 ||
    timeoutMs > MAX_VERIFIER_TIMEOUT_MS
  ) {
    fail(`timeoutMs must be an integer between 1 and ${MAX_VERIFIER_TIMEOUT_MS}`);
  }
}

/**
 * Validate `options` for `verifier` and apply its defaults; throws `OPTIONS_INVALID` naming the
 * verifier and the first offending field (`/options/<pointer>`), with every issue in `evidence`.
 */
export function validateOptions(
  verifier: AnyVerifier,
  options: unknown,
  name: string = verifier.id,
): unknown {
  let issues: OptionIssue[] | undefined;
  let value: unknown;
  if (verifier.options === undefined) {
    // A verifier without a schema takes no options; anything given is a configuration mistake.
    const empty = options === undefined || (isPlainObject(options) && Object.keys(options).length === 0);
    if (empty) value = {};
    else issues = [{ field: '', message: 'this verifier takes no options' }];
  } else {
    // Omitted options mean "all defaults", as in a config entry that lists no options.
    const result = validateWithSchema(verifier.options, options ?? {});
    if (result.ok) value = result.value;
    else issues = result.issues;
  }
  if (issues === undefined) {
    // Options end up in evidence and logs: hold them to the same JSON rules as results.
    const issue = findJsonIssue(value);
    if (issue) issues = [{ field: issue.path, message: `options are not plain JSON (${issue.code})` }];
  }
  if (issues !== undefined) {
    const first = issues[0] ?? { field: '', message: 'invalid' };
    throw new VerifierError(
      'OPTIONS_INVALID',
      `verifier "${name}": options${first.field || ''}: ${first.message}`,
      {
        verifier: name,
        field: `/options${first.field}`,
        evidence: { issues: issues.map((i) => ({ ...i })) },
      },
    );
  }
  return frozenCopy(value);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
