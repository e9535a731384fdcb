import { describe, expect, it } from 'vitest';
import type { CheckResult } from './check';
import { defineVerifier, VERIFIER_API_VERSION, type VerifierDefinition } from './define-verifier';
import { sourceForbidden, sourceUnavailable, VerifierError } from './errors';
import type { SqlGrant } from './grants';
import type { JsonValue } from './json';
import type { Logger } from './logger';
import { MAX_CHECK_RESULT_BYTES, runVerifiers } from './run-verifiers';
import { exampleObservation, exampleProposal } from './testing/fixtures';
import { createVerifierRegistry, type VerifierRegistration } from './verifier-registry';

function verifier(id: string, check: VerifierDefinition['check'], more: Partial<VerifierDefinition> = {}) {
  return defineVerifier({
    id,
    version: '1.2.3',
    apiVersion: VERIFIER_API_VERSION,
    handles: ['refund.recorded'],
    check,
    ...more,
  });
}

const pass = (source = 'ledger-api'): CheckResult => ({ name: 'refund.recorded', status: 'pass', source });

function run(registrations: VerifierRegistration[], more: Partial<Parameters<typeof runVerifiers>[0]> = {}) {
  return runVerifiers({
    registry: createVerifierRegistry(registrations),
    proposal: exampleProposal({
      postconditions: [{ name: 'refund.recorded', params: { refund_id: 're_1' } }],
    }),
    observation: exampleObservation({ server_id: 'payments-mcp' }),
    ...more,
  });
}

const never = () => new Promise<never>(() => {});

describe('runVerifiers', () => {
  describe('when a verifier passes', () => {
    it('records the check with the verifier id, version and apiVersion, and derives passed', async () => {
      const outcome = await run([
        { verifier: verifier('ledger-refund', () => ({ ...pass(), observed: { rows: 1 } })) },
      ]);
      expect(outcome.status).toBe('passed');
      expect(outcome.checks).toEqual([
        {
          name: 'refund.recorded',
          postcondition: 'refund.recorded',
          params: { refund_id: 're_1' },
          status: 'pass',
          source: 'ledger-api',
          observed: { rows: 1 },
          expected: null,
          evidence: {},
          message: '',
          reason: null,
          verifier: { id: 'ledger-refund', version: '1.2.3', apiVersion: 1, name: 'ledger-refund' },
          durationMs: expect.any(Number),
        },
      ]);
    });
  });

  describe('when the tool said 200 but the independent ledger has no refund', () => {
    it('derives failed', async () => {
      const outcome = await run([
        {
          verifier: verifier('ledger-refund', () => ({
            name: 'refund.recorded',
            status: 'fail',
            source: 'ledger-api',
          })),
        },
      ]);
      expect(outcome.status).toBe('failed');
    });
  });

  describe('when no verifier handles a postcondition', () => {
    it('records an inconclusive NO_VERIFIER check', async () => {
      const outcome = await run([
        { verifier: verifier('other', () => pass(), { handles: ['other.thing'] }) },
      ]);
      expect(outcome.status).toBe('inconclusive');
      expect(outcome.checks).toMatchObject([
        { status: 'inconclusive', reason: 'NO_VERIFIER', verifier: null, source: null },
      ]);
    });
  });

  describe('when there are no postconditions', () => {
    it('derives inconclusive', async () => {
      const outcome = await run([{ verifier: verifier('a', () => pass()) }], { postconditions: [] });
      expect(outcome).toMatchObject({ status: 'inconclusive', checks: [] });
    });
  });

  describe('when the check comes from the system that performed the write', () => {
    it('counts it as inconclusive with NOT_INDEPENDENT', async () => {
      const outcome = await run([{ verifier: verifier('self-report', () => pass('payments-mcp')) }]);
      expect(outcome.status).toBe('inconclusive');
      expect(outcome.checks[0]).toMatchObject({
        status: 'inconclusive',
        reason: 'NOT_INDEPENDENT',
        reported: 'pass',
      });
    });
  });

  describe('when the system that performed the write reports a failure', () => {
    it('records the fail and derives failed: a failure needs no independence', async () => {
      const outcome = await run([
        { verifier: verifier('self-report', () => ({ ...pass('payments-mcp'), status: 'fail' })) },
      ]);
      expect(outcome.status).toBe('failed');
      expect(outcome.checks[0]).toMatchObject({ status: 'fail', reason: null });
      expect(outcome.checks[0]).not.toHaveProperty('reported');
    });
  });

  describe("when the observation's result_source names the verifier's source", () => {
    it('does not make the check non-independent: the gateway does not decide independence', async () => {
      const outcome = await run(
        [
          { verifier: verifier('ledger', () => ({ ...pass('Billing-Ledger'), status: 'fail' })) },
          { verifier: verifier('ledger-2', () => pass('billing-ledger')) },
        ],
        { observation: exampleObservation({ server_id: 'payments-mcp', result_source: 'Billing-Ledger ' }) },
      );
      expect(outcome.writers).toContain('payments-mcp');
      expect(outcome.writers).not.toContain('Billing-Ledger ');
      expect(outcome.checks.map((c) => c.status)).toEqual(['fail', 'pass']);
      expect(outcome.status).toBe('failed');
    });
  });

  describe('when a pass names a look-alike of the tool server', () => {
    it.each([
      ['zero-width space', 'payments\u200b-mcp'],
      ['full-width letters', 'ｐａｙｍｅｎｔｓ-mcp'],
      ['upper case', 'PAYMENTS-MCP'],
    ])('counts it NOT_INDEPENDENT (%s)', async (_, source) => {
      const outcome = await run([{ verifier: verifier('sly', () => pass(JSON.parse(`"${source}"`))) }]);
      expect(outcome.checks[0]).toMatchObject({ status: 'inconclusive', reason: 'NOT_INDEPENDENT' });
    });

    it("compares with the host's canonical form when given one", async () => {
      const skeleton = (name: string) => name.toLowerCase().replaceAll('а', 'a'); // Cyrillic а
      const cyrillic = 'pаyments-mcp';
      expect((await run([{ verifier: verifier('sly', () => pass(cyrillic)) }])).checks[0]?.status).toBe(
        'pass',
      );
      const outcome = await run([{ verifier: verifier('sly', () => pass(cyrillic)) }], {
        canonical: skeleton,
      });
      expect(outcome.checks[0]).toMatchObject({ status: 'inconclusive', reason: 'NOT_INDEPENDENT' });
    });
  });

  describe('when two postconditions share a name with different params', () => {
    it('records which one each check answers by its params', async () => {
      const outcome = await run(
        [
          {
            verifier: verifier('by-id', (ctx) => ({ ...pass(), observed: ctx.postcondition.params ?? null })),
          },
        ],
        {
          proposal: exampleProposal({
            postconditions: [
              { name: 'refund.recorded', params: { refund_id: 're_1' } },
              { name: 'refund.recorded', params: { refund_id: 're_2' } },
            ],
          }),
        },
      );
      expect(outcome.checks.map((c) => [c.params, c.observed])).toEqual([
        [{ refund_id: 're_1' }, { refund_id: 're_1' }],
        [{ refund_id: 're_2' }, { refund_id: 're_2' }],
      ]);
    });
  });

  describe('when one check result is over MAX_CHECK_RESULT_BYTES', () => {
    it('records it as one RESULT_INVALID check with its size, and keeps the others', async () => {
      const verbose = { ...pass(), evidence: { dump: 'x'.repeat(MAX_CHECK_RESULT_BYTES) } };
      const outcome = await run([
        { verifier: verifier('verbose', () => [verbose, { ...pass(), name: 'other' }]) },
        { verifier: verifier('failing', () => ({ ...pass(), status: 'fail' })) },
      ]);
      expect(outcome.checks).toMatchObject([
        {
          status: 'error',
          reason: 'RESULT_INVALID',
          reported: 'pass',
          evidence: { bytes: expect.any(Number), limit: MAX_CHECK_RESULT_BYTES },
        },
        { name: 'other', status: 'pass' },
        { status: 'fail' },
      ]);
      expect(outcome.checks[0]!.evidence.bytes).toBeGreaterThan(MAX_CHECK_RESULT_BYTES);
      expect(outcome.status).toBe('failed');
    });

    it('still counts its fail', async () => {
      const verbose = { ...pass(), status: 'fail' as const, observed: 'x'.repeat(MAX_CHECK_RESULT_BYTES) };
      const outcome = await run([{ verifier: verifier('verbose', () => verbose) }]);
      expect(outcome.checks[0]).toMatchObject({
        status: 'error',
        reason: 'RESULT_INVALID',
        reported: 'fail',
      });
      expect(outcome.status).toBe('failed');
    });
  });

  describe('when a verifier hangs past its deadline', () => {
    it('records VERIFIER_TIMEOUT without delaying the other verifiers', async () => {
      let hungSignal: AbortSignal | undefined;
      let hungAbortedWhenQuickAnswered: boolean | undefined;
      const started = performance.now();
      const outcome = await run([
        {
          verifier: verifier('hung', (ctx) => {
            hungSignal = ctx.signal;
            return never();
          }),
          timeoutMs: 40,
        },
        {
          verifier: verifier('quick', () => {
            hungAbortedWhenQuickAnswered = hungSignal?.aborted;
            return pass();
          }),
        },
        { verifier: verifier('slower', () => never(), { timeoutMs: 60_000 }), timeoutMs: 80 },
      ]);
      expect(performance.now() - started).toBeLessThan(2_000);
      expect(outcome.checks.map((c) => [c.verifier?.id, c.status, c.reason])).toEqual([
        ['hung', 'error', 'VERIFIER_TIMEOUT'],
        ['quick', 'pass', null],
        ['slower', 'error', 'VERIFIER_TIMEOUT'],
      ]);
      // The quick verifier answered while the hung one was still running: nobody waited for it.
      expect(hungAbortedWhenQuickAnswered).toBe(false);
      expect(hungSignal?.aborted).toBe(true);
      expect(outcome.status).toBe('inconclusive');
    });
  });

  describe('when the caller cancels the run', () => {
    it('records VERIFIER_ABORTED for verifiers in flight', async () => {
      const controller = new AbortController();
      const pending = run([{ verifier: verifier('waits', () => never()) }], { signal: controller.signal });
      controller.abort();
      const outcome = await pending;
      expect(outcome.checks).toMatchObject([{ status: 'error', reason: 'VERIFIER_ABORTED' }]);
    });

    it('does not start verifiers when already cancelled', async () => {
      let called = false;
      const outcome = await run(
        [
          {
            verifier: verifier('eager', () => {
              called = true;
              return pass();
            }),
          },
        ],
        { signal: AbortSignal.abort() },
      );
      expect(called).toBe(false);
      expect(outcome.checks).toMatchObject([{ reason: 'VERIFIER_ABORTED' }]);
    });
  });

  describe('when a verifier throws', () => {
    it.each([
      [
        'sourceUnavailable()',
        () => sourceUnavailable('connection refused', { evidence: { errno: 'ECONNREFUSED' } }),
        'SOURCE_UNAVAILABLE',
      ],
      ['sourceForbidden()', () => sourceForbidden('address is private'), 'SOURCE_FORBIDDEN'],
      ['a TypeError', () => new TypeError('x is undefined'), 'VERIFIER_CRASHED'],
      [
        'a VerifierError with a host-only code',
        () => new VerifierError('VERIFIER_TIMEOUT', 'pretend'),
        'VERIFIER_CRASHED',
      ],
      ['a string', () => 'oops', 'VERIFIER_CRASHED'],
    ])('turns %s into an error check with its code, never a fail', async (_label, make, reason) => {
      const outcome = await run([
        {
          verifier: verifier('thrower', () => {
            throw make();
          }),
        },
      ]);
      expect(outcome.status).toBe('inconclusive');
      expect(outcome.checks).toMatchObject([{ status: 'error', reason }]);
    });

    it('keeps the evidence a source error carries', async () => {
      const outcome = await run([
        {
          verifier: verifier('down', async () => {
            throw sourceUnavailable('down', { evidence: { errno: 'ECONNREFUSED' } });
          }),
        },
      ]);
      expect(outcome.checks[0]?.evidence).toEqual({ errno: 'ECONNREFUSED' });
    });

    it('drops evidence that is not JSON', async () => {
      const outcome = await run([
        {
          verifier: verifier('down', async () => {
            throw sourceUnavailable('down', { evidence: { at: new Date() } });
          }),
        },
      ]);
      expect(outcome.checks[0]?.evidence).toEqual({});
    });
  });

  describe('when a verifier returns something that is not a clean result', () => {
    it.each([
      ['a Date in evidence', { ...pass(), evidence: { at: new Date() } }],
      ['undefined in observed', { ...pass(), observed: { x: undefined } }],
      ['NaN', { ...pass(), observed: Number.NaN }],
      ['a misspelt key', { ...pass(), evidance: {} }],
      ['a status the host owns', { ...pass(), status: 'error' }],
      ['a status that is not a verdict', { ...pass(), status: 'passed' }],
      ['no name', { status: 'pass', source: 's' }],
      ['a source that is not a string', { ...pass(), source: 7 }],
      ['evidence that is an array', { ...pass(), evidence: [] }],
      ['a message that is not a string', { ...pass(), message: 1 }],
      ['a reason that is not a code', { ...pass(), status: 'inconclusive', reason: 'not sure' }],
      ['an evidence_ref that is not a string', { ...pass(), evidence_ref: 42 }],
      ['an empty evidence_ref', { ...pass(), evidence_ref: '' }],
      ['an evidence_ref with a control character', { ...pass(), evidence_ref: 'refund:\nrf_1' }],
      ['an evidence_ref with surrounding spaces', { ...pass(), evidence_ref: ' refund:rf_1' }],
      ['an evidence_ref over 256 characters', { ...pass(), evidence_ref: 'r'.repeat(257) }],
      ['an empty list', []],
      ['null', null],
    ])('records RESULT_INVALID for %s', async (_label, returned) => {
      const outcome = await run([{ verifier: verifier('sloppy', () => returned as never) }]);
      expect(outcome.checks).toMatchObject([{ status: 'error', reason: 'RESULT_INVALID' }]);
    });
  });

  describe('when a verifier names what it found (evidence_ref)', () => {
    it('records the reference with the check', async () => {
      const outcome = await run([
        { verifier: verifier('ledger-refund', () => ({ ...pass(), evidence_ref: 'refund:rf_123' })) },
      ]);
      expect(outcome.checks).toMatchObject([{ status: 'pass', evidence_ref: 'refund:rf_123' }]);
    });

    it('records no reference when the verifier names none', async () => {
      const outcome = await run([{ verifier: verifier('ledger-refund', () => pass()) }]);
      expect(outcome.checks[0]).not.toHaveProperty('evidence_ref');
    });
  });

  describe('when a verifier returns several checks', () => {
    it('records each, in order', async () => {
      const outcome = await run([
        {
          verifier: verifier('two', () => [
            pass(),
            { name: 'refund.amount', status: 'inconclusive', source: 'ledger-api', reason: 'AMOUNT_PENDING' },
          ]),
        },
      ]);
      expect(outcome.checks.map((c) => [c.name, c.status, c.reason])).toEqual([
        ['refund.recorded', 'pass', null],
        ['refund.amount', 'inconclusive', 'AMOUNT_PENDING'],
      ]);
    });
  });

  describe('when a verifier tries to change its inputs', () => {
    it('crashes on frozen copies and the next verifier sees the original', async () => {
      const outcome = await run([
        {
          verifier: verifier('vandal', (ctx) => {
            (ctx.proposal.arguments as Record<string, unknown>).amount = 0;
            return pass();
          }),
        },
        {
          verifier: verifier('reader', (ctx) => ({
            ...pass(),
            observed: ctx.proposal.arguments.amount ?? null,
          })),
        },
      ]);
      expect(outcome.checks.map((c) => [c.reason, c.observed])).toEqual([
        ['VERIFIER_CRASHED', null],
        [null, 1250],
      ]);
    });
  });

  describe('when a verifier requires a grant', () => {
    const sql: SqlGrant = { name: 'ledger-db', query: async () => [{ n: 1 }] };
    const needsSql = verifier(
      'needs-sql',
      async (ctx) => ({
        ...pass(ctx.sql!.name),
        observed: ((await ctx.sql!.query('select 1', [], ctx))[0] ?? null) as JsonValue,
      }),
      {
        requires: ['sql'],
      },
    );

    it('records GRANT_MISSING when the host grants none', async () => {
      const outcome = await run([{ verifier: needsSql }]);
      expect(outcome.checks).toMatchObject([
        { status: 'error', reason: 'GRANT_MISSING', evidence: { missing: ['sql'] } },
      ]);
    });

    it('hands over the run grant, and a registration grant over it', async () => {
      const other: SqlGrant = { name: 'orders-db', query: async () => [{ n: 2 }] };
      expect((await run([{ verifier: needsSql }], { grants: { sql } })).checks[0]).toMatchObject({
        source: 'ledger-db',
        observed: { n: 1 },
      });
      expect(
        (await run([{ verifier: needsSql, grants: { sql: other } }], { grants: { sql } })).checks[0],
      ).toMatchObject({
        source: 'orders-db',
        observed: { n: 2 },
      });
    });
  });

  describe('in the pre phase', () => {
    it('answers the preconditions, with no observation', async () => {
      let seen: unknown = 'unset';
      const outcome = await runVerifiers({
        registry: createVerifierRegistry([
          {
            verifier: verifier(
              'balance',
              (ctx) => {
                seen = ctx.observation;
                return { name: ctx.postcondition.name, status: 'pass', source: 'bank' };
              },
              { handles: ['balance.sufficient'], phase: 'pre' },
            ),
          },
        ]),
        phase: 'pre',
        proposal: exampleProposal({ preconditions: [{ name: 'balance.sufficient' }] }),
      });
      expect(seen).toBeNull();
      expect(outcome).toMatchObject({ status: 'passed', checks: [{ postcondition: 'balance.sufficient' }] });
    });
  });

  describe('in the post phase without an observation', () => {
    it('throws INPUT_INVALID', async () => {
      await expect(run([], { observation: null })).rejects.toMatchObject({
        name: 'VerifierError',
        code: 'INPUT_INVALID',
      });
    });
  });

  describe('when verifiers log', () => {
    it('tags each line with the verifier and postcondition', async () => {
      const lines: unknown[] = [];
      const logger: Logger = {
        debug: () => {},
        info: (message, fields) => lines.push([message, fields]),
        warn: () => {},
        error: () => {},
      };
      await run(
        [
          {
            verifier: verifier('chatty', (ctx) => {
              ctx.logger.info('reading', { table: 'refunds' });
              return pass();
            }),
          },
        ],
        { logger },
      );
      expect(lines).toEqual([
        ['reading', { verifier: 'chatty', postcondition: 'refund.recorded', table: 'refunds' }],
      ]);
    });
  });

  describe('when given a clock', () => {
    it('hands it to the verifier', async () => {
      const at = new Date('2030-01-01T00:00:00Z');
      const outcome = await run(
        [{ verifier: verifier('clock', (ctx) => ({ ...pass(), observed: ctx.now().toISOString() })) }],
        {
          now: () => at,
        },
      );
      expect(outcome.checks[0]?.observed).toBe('2030-01-01T00:00:00.000Z');
    });
  });
});
