import type { CheckResult } from './check';
import type { FetchGrant, GrantName, RedisGrant, SqlGrant } from './grants';
import type { Logger } from './logger';
import type { MeasurementPolicy } from './measurement-policy';
import type { Observation, Postcondition, Proposal, VerifierPhase } from './records';
import type { StandardSchemaV1 } from './standard-schema';

/** The SDK contract this package implements. A verifier declares the one it was written for. */
export const VERIFIER_API_VERSION = 1;

/** Contracts this host can run; registration refuses others with `VERIFIER_API_UNSUPPORTED`. */
export const SUPPORTED_API_VERSIONS: readonly number[] = Object.freeze([1]);

/** Used when a verifier declares no `timeoutMs`. */
export const DEFAULT_VERIFIER_TIMEOUT_MS = 5_000;

/** The longest deadline a verifier (or its registration) may ask for. */
export const MAX_VERIFIER_TIMEOUT_MS = 300_000;

/** A postcondition name (`refund.recorded`), a glob where `*` matches any run of characters (`refund.*`), or a RegExp. */
export type PostconditionPattern = string | RegExp;

/** Everything a check needs, handed in by the host. */
export interface VerifierContext<Options = Record<string, never>> {
  /** The registration this run belongs to. */
  readonly verifier: { readonly id: string; readonly version: string; readonly name: string };
  readonly phase: VerifierPhase;
  /** Frozen copy: a verifier cannot change what others (or the ledger) see. */
  readonly proposal: Proposal;
  /** The observation in the `post` phase; null in the `pre` phase. Frozen copy. */
  readonly observation: Observation | null;
  /** The postcondition (or precondition) this run answers. Frozen copy. */
  readonly postcondition: Postcondition;
  /** Options after validation, with defaults applied. Frozen. */
  readonly options: Options;
  /** Aborts on the host's deadline for this verifier and when the caller cancels. Pass it on to every I/O call. */
  readonly signal: AbortSignal;
  /** Milliseconds this run may take in total (the verifier's deadline). */
  readonly timeoutMs: number;
  /** Present when the host granted network access. */
  readonly fetch?: FetchGrant;
  /** Present when the host granted a read-only SQL connection. */
  readonly sql?: SqlGrant;
  /** Present when the host granted a read-only Redis connection. */
  readonly redis?: RedisGrant;
  readonly logger: Logger;
  /** The host's clock; use it instead of `new Date()` so tests are deterministic. */
  now(): Date;
}

/** What `check()` may return: one result, several, or a promise of either. */
export type CheckReturn = CheckResult | readonly CheckResult[];

/** A verifier plugin, as written by its author. */
export interface VerifierDefinition<Options = Record<string, never>> {
  /** kebab-case (`http-json`) for built-ins; `vendor/name` (`acme/refund-api`) for third parties. */
  readonly id: string;
  /** The plugin's own semver version, recorded with every check it produces. */
  readonly version: string;
  /** The SDK contract it was written for: {@link VERIFIER_API_VERSION}. */
  readonly apiVersion: number;
  readonly description?: string;
  /** The postconditions it answers: exact names, `*` globs, or RegExps. A registration may replace these. */
  readonly handles: readonly PostconditionPattern[];
  /** `post` (default) checks after execution; `pre` checks preconditions before it. */
  readonly phase?: VerifierPhase | readonly VerifierPhase[];
  /** Options schema (zod or any Standard Schema). The host validates and applies defaults before any check runs. */
  readonly options?: StandardSchemaV1<unknown, Options>;
  /** Default deadline of one reading in milliseconds ({@link DEFAULT_VERIFIER_TIMEOUT_MS} when absent). */
  readonly timeoutMs?: number;
  /**
   * Read the postcondition more than once (a source that is eventually consistent): how often,
   * how far apart, and which limits decide. A registration may replace it. Default: one reading.
   */
  readonly measurement?: MeasurementPolicy;
  /** Grants without which the verifier cannot run; the host records `GRANT_MISSING` instead of calling it. */
  readonly requires?: readonly GrantName[];
  /**
   * Read the postcondition back from an independent source and say `pass`, `fail` or
   * `inconclusive`. Throw `sourceUnavailable()` / `sourceForbidden()` when you cannot read it;
   * any other throw is recorded as `VERIFIER_CRASHED`. Never return `fail` for "could not read".
   * Annotate it `: Promise<CheckResult>` so each returned literal is checked against the contract.
   */
  check(context: VerifierContext<Options>): CheckReturn | Promise<CheckReturn>;
}

/** A verifier as the host sees it: any options type. */
// biome-ignore lint/suspicious/noExplicitAny: a registry holds verifiers of every options type; `unknown` would make check() uncallable
export type AnyVerifier = VerifierDefinition<any>;

/**
 * Declare a verifier. A typed identity: it returns its argument, and exists so that `check`'s
 * context is typed from the options schema. Validation happens at registration
 * (`createVerifierRegistry`), where the host can say which verifier and which field is wrong.
 *
 * @example
 * import { z } from 'zod';
 * export default defineVerifier({
 *   id: 'acme/ticket-closed',
 *   version: '1.0.0',
 *   apiVersion: VERIFIER_API_VERSION,
 *   handles: ['ticket.closed'],
 *   options: z.object({ source: z.string().default('acme-tickets') }),
 *   requires: ['fetch'],
 *   async check({ proposal, options, fetch, signal }) {
 *     const res = await fetch!(`https://tickets.acme.test/${encodeURIComponent(proposal.target.id)}`, { signal });
 *     const { state } = (await res.json()) as { state: string };
 *     return { name: 'ticket.closed', status: state === 'closed' ? 'pass' : 'fail', source: options.source,
 *       observed: state, expected: 'closed' };
 *   },
 * });
 */
export function defineVerifier<Options = Record<string, never>>(
  definition: VerifierDefinition<Options>,
): VerifierDefinition<Options> {
  return definition;
}

/** The phases a verifier runs in, `post` when it declares none. */
export function phasesOf(verifier: Pick<AnyVerifier, 'phase'>): readonly VerifierPhase[] {
  const phase = verifier.phase ?? 'post';
  return typeof phase === 'string' ? [phase] : phase;
}

/** True when one of `patterns` matches the postcondition `name`. */
export function matchesPostcondition(patterns: readonly PostconditionPattern[], name: string): boolean {
  return patterns.some((pattern) => {
    if (typeof pattern === 'string') {
      return pattern.includes('*') ? globToRegExp(pattern).test(name) : pattern === name;
    }
    // A RegExp with the g or y flag keeps state between calls; test a stateless copy.
    return new RegExp(pattern.source, pattern.flags.replaceAll(/[gy]/g, '')).test(name);
  });
}

function globToRegExp(glob: string): RegExp {
  const body = glob
    .split('*')
    .map((part) => part.replaceAll(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`, 'su');
}
