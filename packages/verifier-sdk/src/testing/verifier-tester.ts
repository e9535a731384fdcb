import { isDeepStrictEqual } from 'node:util';
import type { Check } from '../check';
import { type AnyVerifier, DEFAULT_VERIFIER_TIMEOUT_MS, type VerifierContext } from '../define-verifier';
import { deriveStatus } from '../derive-status';
import { isVerifierError, VerifierError } from '../errors';
import type { Grants } from '../grants';
import { findJsonIssue } from '../json';
import { type Logger, silentLogger } from '../logger';
import type { Observation, Postcondition, Proposal, VerifierPhase } from '../records';
import { runVerifiers, toChecks } from '../run-verifiers';
import { createVerifierRegistry, validateOptions, validateVerifier } from '../verifier-registry';
import { exampleObservation, exampleProposal, fixedNow, toPostcondition } from './fixtures';

/** `describe` as vitest, jest and mocha spell it. */
export type DescribeFn = (title: string, body: () => void) => unknown;
/** `it` as vitest, jest and mocha spell it. */
export type ItFn = (title: string, body: () => Promise<void>) => unknown;

/** One scenario: options and records in, an expected verdict out. */
export interface VerifierTestCase {
  /** Test title; defaults to the bucket and index. */
  name?: string;
  options?: unknown;
  /** Defaults to the verifier's first exact `handles` name. */
  postcondition?: Postcondition | string;
  /** Top-level keys replace those of `exampleProposal()`. */
  proposal?: Partial<Proposal>;
  /** Top-level keys replace those of `exampleObservation()` (ignored in the `pre` phase). */
  observation?: Partial<Observation>;
  phase?: VerifierPhase;
  /** Grants for this case (else the tester's). */
  grants?: Grants;
  timeoutMs?: number;
  /** Some check must carry this reason (e.g. `SOURCE_UNAVAILABLE`, `NOT_INDEPENDENT`). */
  reason?: string;
  /** More assertions on the recorded checks; throw to fail the case. */
  assert?: (checks: Check[]) => void | Promise<void>;
  /**
   * How to take this case's source down, for the "source down is never a verdict" conformance
   * test: keys replace the case's own (e.g. `options` pointing at a closed port). Without it
   * the tester replaces every grant with one that cannot reach its source.
   */
  sourceDown?: Pick<VerifierTestCase, 'options' | 'grants' | 'proposal' | 'observation'>;
}

/** Options the verifier must refuse at registration with `OPTIONS_INVALID`. */
export interface InvalidOptionsCase {
  name?: string;
  options: unknown;
  /** The JSON Pointer the error must name, e.g. `/options/url`. */
  field?: string;
}

/** The cases for one verifier, by the verdict they must produce. */
export interface VerifierTestCases {
  /** Every check passes (derived `passed`). At least one is required. */
  pass: readonly VerifierTestCase[];
  /** Some check fails (derived `failed`). At least one is required. */
  fail: readonly VerifierTestCase[];
  /** No check fails and some check is inconclusive or error (derived `inconclusive`). */
  inconclusive?: readonly VerifierTestCase[];
  invalidOptions?: readonly InvalidOptionsCase[];
}

/** A verifier running where the server runs plugins, and how to stop it. */
export interface IsolatedPlugin {
  verifier: AnyVerifier;
  close(): Promise<void>;
}

/**
 * Loads the plugin under test with a case's options into the server's plugin isolation, e.g.
 * `(options) => loadIsolatedVerifier({ url, exportName, options })` from `@vouch/verifiers`.
 */
export type PluginIsolation = (options: unknown) => Promise<IsolatedPlugin>;

/** How the tester runs cases. */
export interface VerifierTesterConfig {
  /** Test-framework hooks; default to `VerifierTester.describe`/`.it`, then global `describe`/`it`. */
  describe?: DescribeFn;
  it?: ItFn;
  /** Overrides for every case's proposal and observation. */
  proposal?: Partial<Proposal>;
  observation?: Partial<Observation>;
  /** Grants for every case that brings none. */
  grants?: Grants;
  logger?: Logger;
  now?: () => Date;
  /** How long a verifier may take to settle once its signal aborts (default 1000 ms). */
  abortGraceMs?: number;
  /**
   * Run every case and conformance test in the production isolation instead of in this process:
   * the plugin then meets what it meets in the server (no network of its own, no environment,
   * no files outside its folder), so a plugin that calls the global `fetch` fails here as it
   * would there. The verifier given to `run` still supplies the definition (id, handles, options).
   */
  isolate?: PluginIsolation;
}

/** The result of one generated test when run without a test framework. */
export interface TesterOutcome {
  title: string;
  ok: boolean;
  error?: unknown;
}

interface GeneratedTest {
  group: string;
  title: string;
  run: () => Promise<void>;
}

type Bucket = 'pass' | 'fail' | 'inconclusive';
const EXPECTED: Record<Bucket, string> = { pass: 'passed', fail: 'failed', inconclusive: 'inconclusive' };
// Reasons that mean the verifier itself misbehaved: never an acceptable "inconclusive" unless asked for.
const MISBEHAVIOUR: readonly string[] = ['RESULT_INVALID', 'VERIFIER_CRASHED', 'VERIFIER_TIMEOUT'];

/**
 * A test harness for verifier authors, in the spirit of ESLint's RuleTester: give it cases that
 * must pass, fail or be inconclusive, and it runs each through the real verifier host, then adds
 * conformance tests every verifier must meet: it is a valid verifier for this host; it returns
 * plain canonicalizable JSON that names a source; it does not mutate its inputs; it settles
 * promptly once its signal aborts; it refuses bad options.
 *
 * Under a test framework it registers `describe`/`it` blocks; without one, `run()` runs every
 * test and rejects with `CASE_FAILED` / `CONFORMANCE_FAILED` on the first failure.
 *
 * @example
 * import { describe, it } from 'vitest';
 * new VerifierTester({ describe, it }).run('acme/ticket-closed', ticketClosed, {
 *   pass: [{ options: { url }, proposal: { target: { kind: 'ticket', id: 'T-1', env: 'test' } } }],
 *   fail: [{ options: { url }, proposal: { target: { kind: 'ticket', id: 'T-2', env: 'test' } } }],
 * });
 */
export class VerifierTester {
  /** Set these once (e.g. in a setup file) when the framework's functions are not globals. */
  static describe: DescribeFn | undefined;
  static it: ItFn | undefined;

  readonly #config: VerifierTesterConfig;

  constructor(config: VerifierTesterConfig = {}) {
    this.#config = config;
  }

  /** Register (or, without a framework, run) every case and conformance test for `verifier`. */
  run(title: string, verifier: AnyVerifier, cases: VerifierTestCases): Promise<void> {
    const tests = this.#tests(verifier, cases);
    const describe = this.#config.describe ?? VerifierTester.describe ?? globalFn<DescribeFn>('describe');
    const it = this.#config.it ?? VerifierTester.it ?? globalFn<ItFn>('it');
    if (describe && it) {
      describe(title, () => {
        for (const group of unique(tests.map((t) => t.group))) {
          describe(group, () => {
            for (const test of tests.filter((t) => t.group === group)) it(test.title, test.run);
          });
        }
      });
      return Promise.resolve();
    }
    return this.verify(verifier, cases).then((outcomes) => {
      const failed = outcomes.find((o) => !o.ok);
      if (failed) throw failed.error;
    });
  }

  /** Run every case and conformance test now and report each, without a test framework. */
  async verify(verifier: AnyVerifier, cases: VerifierTestCases): Promise<TesterOutcome[]> {
    const outcomes: TesterOutcome[] = [];
    for (const test of this.#tests(verifier, cases)) {
      const title = `${test.group} > ${test.title}`;
      try {
        await test.run();
        outcomes.push({ title, ok: true });
      } catch (error) {
        outcomes.push({ title, ok: false, error });
      }
    }
    return outcomes;
  }

  /** Run one case through the real host and return the recorded checks (no expectation applied). */
  async runCase(verifier: AnyVerifier, testCase: VerifierTestCase): Promise<Check[]> {
    const plugin = await this.#load(verifier, testCase);
    try {
      return await this.#runCase(plugin.verifier, testCase);
    } finally {
      await plugin.close();
    }
  }

  /** The verifier to run a case against: itself, or the plugin loaded into the isolation with the case's options. */
  async #load(verifier: AnyVerifier, testCase: VerifierTestCase): Promise<IsolatedPlugin> {
    if (this.#config.isolate === undefined) return { verifier, close: async () => {} };
    return this.#config.isolate(testCase.options);
  }

  async #runCase(verifier: AnyVerifier, testCase: VerifierTestCase): Promise<Check[]> {
    const input = this.#input(verifier, testCase);
    const registry = createVerifierRegistry([
      {
        verifier,
        options: testCase.options,
        grants: input.grants,
        ...(testCase.timeoutMs === undefined ? {} : { timeoutMs: testCase.timeoutMs }),
      },
    ]);
    const outcome = await runVerifiers({
      registry,
      phase: input.phase,
      postconditions: [input.postcondition],
      proposal: input.proposal,
      observation: input.observation,
      logger: this.#config.logger ?? silentLogger,
      now: this.#config.now ?? fixedNow,
    });
    return outcome.checks;
  }

  #tests(verifier: AnyVerifier, cases: VerifierTestCases): GeneratedTest[] {
    const tests: GeneratedTest[] = [];
    const buckets: [Bucket, readonly VerifierTestCase[]][] = [
      ['pass', cases.pass ?? []],
      ['fail', cases.fail ?? []],
      ['inconclusive', cases.inconclusive ?? []],
    ];
    const all = buckets.flatMap(([bucket, list]) =>
      list.map((c, i) => ({ bucket, c, label: c.name ?? `${bucket} #${i + 1}` })),
    );
    for (const { bucket, c, label } of all) {
      tests.push({ group: bucket, title: label, run: () => this.#expect(verifier, c, bucket, label) });
    }
    (cases.invalidOptions ?? []).forEach((c, i) => {
      tests.push({
        group: 'invalid options',
        title: c.name ?? `invalid options #${i + 1}`,
        run: async () => expectOptionsRefused(verifier, c.options, c.field),
      });
    });
    const conformance = (title: string, run: () => Promise<void> | void) =>
      tests.push({ group: 'conformance', title, run: async () => run() });
    conformance('is a valid verifier for this host', () => {
      validateVerifier(verifier);
    });
    conformance('has cases that pass and cases that fail', () => {
      if ((cases.pass ?? []).length === 0 || (cases.fail ?? []).length === 0) {
        throw new VerifierError(
          'CONFORMANCE_FAILED',
          `${verifier.id}: give at least one pass case and one fail case`,
          {
            verifier: verifier.id,
          },
        );
      }
    });
    conformance('returns plain canonicalizable JSON that names its source', async () => {
      for (const { c, label } of all) {
        const returned = await (await this.#direct(verifier, c, new AbortController().signal)).result;
        if (returned === THREW) continue;
        const issue = findJsonIssue(returned);
        const checks = toChecks(returned, { name: 'conformance' }, null);
        const invalid = checks.find((check) => check.reason === 'RESULT_INVALID');
        const sourceless = checks.find((check) => check.source === null);
        if (issue || invalid || sourceless) {
          throw conformanceError(verifier, `case "${label}" returned a result the ledger cannot record`, {
            ...(issue ? { issue: { code: issue.code, path: issue.path } } : {}),
            ...(invalid ? { invalid: invalid.evidence } : {}),
            ...(sourceless ? { missing: 'source' } : {}),
          });
        }
      }
    });
    conformance('does not mutate its inputs', async () => {
      for (const { c, label } of all) {
        const run = await this.#direct(verifier, c, new AbortController().signal);
        await run.result;
        const changed = (['proposal', 'observation', 'postcondition', 'options'] as const).find(
          (key) => !isDeepStrictEqual(run.inputs[key], run.originals[key]),
        );
        if (changed)
          throw conformanceError(verifier, `case "${label}" mutated its ${changed}`, { input: changed });
      }
    });
    conformance('settles promptly once its signal aborts', async () => {
      const grace = this.#config.abortGraceMs ?? 1_000;
      for (const { c, label } of all) {
        const before = new AbortController();
        before.abort(new VerifierError('VERIFIER_ABORTED', 'aborted before the check started'));
        const during = new AbortController();
        const runs = [
          { when: 'before it started', run: await this.#direct(verifier, c, before.signal) },
          { when: 'while it ran', run: await this.#direct(verifier, c, during.signal) },
        ];
        setImmediate(() =>
          during.abort(new VerifierError('VERIFIER_ABORTED', 'aborted while the check ran')),
        );
        for (const { when, run } of runs) {
          if (!(await settlesWithin(run.raw, grace))) {
            throw conformanceError(
              verifier,
              `case "${label}" did not settle within ${grace} ms of an abort ${when}`,
              {
                graceMs: grace,
              },
            );
          }
        }
      }
    });
    conformance('refuses options that are not options', () => {
      expectOptionsRefused(verifier, 42, undefined);
    });
    // Registered only when there is a way to take the source down: host grants the tester can
    // replace, or a case's own `sourceDown`. A verifier that reads neither (the `file` verifier
    // reads the local disk) gives the tester nothing to break. Cases may use getters that only
    // work once the suite's hooks ran, so nothing of a case is read before the test runs.
    const canTakeDown =
      (verifier.requires ?? []).length > 0 ||
      this.#config.grants?.fetch !== undefined ||
      this.#config.grants?.sql !== undefined ||
      all.some(({ c }) => 'sourceDown' in c || 'grants' in c);
    if (canTakeDown) {
      conformance('reports a source that is down as inconclusive, never pass or fail', async () => {
        for (const { c, label } of all) {
          for (const { fault, down } of this.#sourceDownVariants(c)) {
            const checks = await this.runCase(verifier, down);
            const verdict = checks.find((check) => check.status === 'pass' || check.status === 'fail');
            if (verdict) {
              throw conformanceError(
                verifier,
                `case "${label}" returned "${verdict.status}" while its source was ${fault.what}; ` +
                  'throw sourceUnavailable() instead: could not read is not a verdict on the postcondition',
                { fault: fault.name, check: verdict as unknown as Record<string, unknown> },
              );
            }
          }
        }
      });
    }
    return tests;
  }

  async #expect(
    verifier: AnyVerifier,
    testCase: VerifierTestCase,
    bucket: Bucket,
    label: string,
  ): Promise<void> {
    const checks = await this.runCase(verifier, testCase);
    const status = deriveStatus(checks);
    const misbehaved = checks.find(
      (c) => c.reason !== null && MISBEHAVIOUR.includes(c.reason) && c.reason !== testCase.reason,
    );
    const reasonMissing = testCase.reason !== undefined && !checks.some((c) => c.reason === testCase.reason);
    if (status !== EXPECTED[bucket] || misbehaved || reasonMissing) {
      const wanted = `${EXPECTED[bucket]}${testCase.reason ? ` with reason ${testCase.reason}` : ''}`;
      const reasons = checks.map((c) => c.reason).filter((r): r is string => r !== null);
      const got = `${status}${reasons.length > 0 ? ` with reason ${unique(reasons).join(', ')}` : ' with no reason'}`;
      const why =
        status !== EXPECTED[bucket]
          ? `the status differs`
          : misbehaved
            ? `the status matches, but ${misbehaved.reason} means the verifier misbehaved (${misbehaved.message})`
            : `the status matches, but no check carries reason ${testCase.reason}`;
      throw new VerifierError(
        'CASE_FAILED',
        `${verifier.id}: case "${label}" should be ${wanted}, got ${got}: ${why}:\n${JSON.stringify(checks, null, 2)}`,
        {
          verifier: verifier.id,
          evidence: { expected: EXPECTED[bucket], actual: status, checks },
        },
      );
    }
    await testCase.assert?.(checks);
  }

  /** The case with its source down: as its `sourceDown` says, else with each fault in its grants. */
  #sourceDownVariants(c: VerifierTestCase): { fault: SourceFault; down: VerifierTestCase }[] {
    if (c.sourceDown !== undefined) return [{ fault: GIVEN_FAULT, down: { ...c, ...c.sourceDown } }];
    const grants = c.grants ?? this.#config.grants ?? {};
    if (grants.fetch === undefined && grants.sql === undefined) return [];
    return SOURCE_FAULTS.map((fault) => ({ fault, down: { ...c, grants: fault.grants(grants) } }));
  }

  #input(verifier: AnyVerifier, testCase: VerifierTestCase) {
    const phase = testCase.phase ?? 'post';
    const postcondition = toPostcondition(testCase.postcondition ?? defaultPostcondition(verifier));
    const proposal = exampleProposal({
      ...this.#config.proposal,
      ...testCase.proposal,
      ...(phase === 'post' ? { postconditions: [postcondition] } : { preconditions: [postcondition] }),
    });
    const observation =
      phase === 'post' ? exampleObservation({ ...this.#config.observation, ...testCase.observation }) : null;
    const grants = testCase.grants ?? this.#config.grants ?? {};
    return { phase, postcondition, proposal, observation, grants };
  }

  /**
   * Call `check()` directly, as the host would but with plain (unfrozen) copies, so that
   * conformance tests can see mutations and time the reaction to an abort. With `isolate`, the
   * plugin is loaded first (its start-up is not the check's) and stopped once the check settles.
   */
  async #direct(definition: AnyVerifier, testCase: VerifierTestCase, cancel: AbortSignal) {
    const plugin = await this.#load(definition, testCase);
    const verifier = plugin.verifier;
    const input = this.#input(verifier, testCase);
    const timeoutMs = testCase.timeoutMs ?? verifier.timeoutMs ?? DEFAULT_VERIFIER_TIMEOUT_MS;
    // Like the host: the signal also fires at the deadline.
    const signal = AbortSignal.any([cancel, AbortSignal.timeout(timeoutMs)]);
    const options = structuredClone(validateOptions(verifier, testCase.options));
    const originals = structuredClone({
      proposal: input.proposal,
      observation: input.observation,
      postcondition: input.postcondition,
      options,
    });
    const inputs = structuredClone(originals);
    const missingGrant = (verifier.requires ?? []).some((grant) => input.grants[grant] === undefined);
    const context: VerifierContext<unknown> = {
      verifier: { id: verifier.id, version: verifier.version, name: verifier.id },
      phase: input.phase,
      proposal: inputs.proposal,
      observation: inputs.observation,
      postcondition: inputs.postcondition,
      options: inputs.options,
      signal,
      timeoutMs,
      ...(input.grants.fetch ? { fetch: input.grants.fetch } : {}),
      ...(input.grants.sql ? { sql: input.grants.sql } : {}),
      ...(input.grants.redis ? { redis: input.grants.redis } : {}),
      logger: this.#config.logger ?? silentLogger,
      now: this.#config.now ?? fixedNow,
    };
    const raw: Promise<unknown> = missingGrant
      ? Promise.resolve(THREW)
      : Promise.resolve()
          .then(() => verifier.check(context))
          .catch(() => THREW);
    // A verifier that ignores its deadline would hang these checks; the host would have cut it
    // off, so give up on it the same way (the abort conformance test reports it on `raw`).
    const grace = this.#config.abortGraceMs ?? 1_000;
    const result = Promise.race([raw, delay(timeoutMs + grace).then(() => THREW)]);
    void result.then(() => plugin.close());
    return { raw, result, inputs, originals };
  }
}

const THREW = Symbol('threw');

interface SourceFault {
  name: string;
  what: string;
  grants: (grants: Grants) => Grants;
}

function refusedConnection(): Error {
  return new TypeError('fetch failed', {
    cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }),
  });
}

const GIVEN_FAULT: SourceFault = {
  name: 'sourceDown',
  what: "down (the case's sourceDown)",
  grants: (g) => g,
};

// The two ways a source goes down: nobody answers, or it answers that it cannot serve.
const SOURCE_FAULTS: readonly SourceFault[] = [
  {
    name: 'unreachable',
    what: 'unreachable (connection refused)',
    grants: (grants) => ({
      ...(grants.fetch ? { fetch: () => Promise.reject(refusedConnection()) } : {}),
      ...(grants.sql
        ? {
            sql: {
              name: grants.sql.name,
              query: () =>
                Promise.reject(
                  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
                ),
            },
          }
        : {}),
    }),
  },
  {
    name: 'failing',
    what: 'failing (HTTP 503, database shutting down)',
    grants: (grants) => ({
      ...(grants.fetch
        ? {
            fetch: async () =>
              new Response(JSON.stringify({ error: 'service unavailable' }), {
                status: 503,
                headers: { 'content-type': 'application/json' },
              }),
          }
        : {}),
      ...(grants.sql
        ? {
            sql: {
              name: grants.sql.name,
              query: () =>
                Promise.reject(
                  Object.assign(new Error('terminating connection due to administrator command'), {
                    code: '57P01',
                  }),
                ),
            },
          }
        : {}),
    }),
  },
];

function defaultPostcondition(verifier: AnyVerifier): string {
  const exact = verifier.handles.find((h): h is string => typeof h === 'string' && !h.includes('*'));
  if (exact === undefined) {
    throw new VerifierError(
      'CASE_FAILED',
      `${verifier.id}: handles only patterns; give each case a postcondition`,
      {
        verifier: verifier.id,
      },
    );
  }
  return exact;
}

function expectOptionsRefused(verifier: AnyVerifier, options: unknown, field: string | undefined): void {
  try {
    validateOptions(verifier, options);
  } catch (error) {
    if (isVerifierError(error) && error.code === 'OPTIONS_INVALID') {
      if (field === undefined || error.field === field) return;
      throw conformanceError(verifier, `options were refused at ${error.field}, expected ${field}`, {
        field: error.field ?? null,
      });
    }
    throw error;
  }
  throw conformanceError(verifier, `options ${safeJson(options)} were accepted but must be refused`, {});
}

function conformanceError(
  verifier: AnyVerifier,
  message: string,
  evidence: Record<string, unknown>,
): VerifierError {
  return new VerifierError('CONFORMANCE_FAILED', `${verifier.id}: ${message}`, {
    verifier: verifier.id,
    evidence,
  });
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

function globalFn<T>(name: string): T | undefined {
  const value = (globalThis as Record<string, unknown>)[name];
  return typeof value === 'function' ? (value as T) : undefined;
}

function unique<T>(values: T[]): T[] {
  return [...new Set(values)];
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
