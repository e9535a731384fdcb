import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assessIndependence, deriveDeclaredStatus, deriveStatus } from './derive-status';

const check = (status: string, source: string | null = 'ledger-api') => ({ name: 'x', status, source });

describe('deriveStatus', () => {
  describe('when there are no checks', () => {
    it('is inconclusive', () => {
      expect(deriveStatus([])).toBe('inconclusive');
    });
  });

  describe('when every check passed', () => {
    it('is passed', () => {
      expect(deriveStatus([check('pass'), check('pass', 'bank-api')])).toBe('passed');
    });
  });

  describe('when any check failed', () => {
    it('is failed even beside inconclusive and error checks', () => {
      expect(deriveStatus([check('error', null), check('inconclusive'), check('fail'), check('pass')])).toBe(
        'failed',
      );
    });
  });

  describe('when a check is inconclusive or error and none failed', () => {
    it.each(['inconclusive', 'error'])('is inconclusive for %s', (status) => {
      expect(deriveStatus([check('pass'), check(status)])).toBe('inconclusive');
    });
  });

  describe('when a status is not one of the four', () => {
    it('does not count as a pass', () => {
      expect(deriveStatus([check('PASS'), check('pass')])).toBe('inconclusive');
    });
  });

  describe('when the tool reported success but the independent ledger has no refund', () => {
    it('is failed', () => {
      const observation = { outcome: 'succeeded', result: { status: 200 }, server_id: 'payments-mcp' };
      const checks = [{ name: 'refund.recorded', status: 'fail', source: 'ledger-api' }];
      expect(deriveStatus(checks, { writer: observation.server_id })).toBe('failed');
    });
  });

  describe('when a check comes from the writer itself', () => {
    it('counts a pass as inconclusive', () => {
      expect(deriveStatus([check('pass', 'payments-mcp')], { writer: 'payments-mcp' })).toBe('inconclusive');
    });

    it('counts a fail as inconclusive too', () => {
      expect(deriveStatus([check('fail', 'Payments-MCP ')], { writer: ['payments-mcp'] })).toBe(
        'inconclusive',
      );
    });
  });

  describe('when a check names no source', () => {
    it.each([null, '', '   '])('counts it as inconclusive (source %j)', (source) => {
      expect(deriveStatus([{ name: 'x', status: 'pass', source }])).toBe('inconclusive');
    });
  });

  describe('for any list of checks', () => {
    const anyCheck = fc.record({
      name: fc.string(),
      status: fc.constantFrom('pass', 'fail', 'inconclusive', 'error'),
      source: fc.constantFrom('ledger-api', 'bank', 'writer', null),
    });

    it('is failed exactly when some independent check failed', () => {
      fc.assert(
        fc.property(fc.array(anyCheck), (checks) => {
          const independentFail = checks.some(
            (c) => c.status === 'fail' && c.source !== null && c.source !== 'writer',
          );
          expect(deriveStatus(checks, { writer: 'writer' }) === 'failed').toBe(independentFail);
        }),
      );
    });

    it('is passed exactly when the list is non-empty and every check is an independent pass', () => {
      fc.assert(
        fc.property(fc.array(anyCheck), (checks) => {
          const allPass =
            checks.length > 0 &&
            checks.every((c) => c.status === 'pass' && c.source !== null && c.source !== 'writer');
          expect(deriveStatus(checks, { writer: 'writer' }) === 'passed').toBe(allPass);
        }),
      );
    });

    it('gives the same status after the checks were assessed', () => {
      fc.assert(
        fc.property(fc.array(anyCheck), (checks) => {
          const assessed = checks.map((c) => assessIndependence(c, { writer: 'writer' }));
          expect(deriveStatus(assessed)).toBe(deriveStatus(checks, { writer: 'writer' }));
        }),
      );
    });
  });
});

describe('assessIndependence', () => {
  describe('when the source is a system the tool writes to', () => {
    const options = { writer: ['payments-mcp', 'gateway-cache'], writes: ['payments-db', 'stripe'] };
    it('counts the check and marks it readsWrittenSystem, in any letter case', () => {
      expect(assessIndependence(check('fail', 'Stripe'), options)).toEqual({
        ...check('fail', 'Stripe'),
        readsWrittenSystem: true,
      });
    });
    it('is idempotent', () => {
      const once = assessIndependence(check('pass', 'payments-db'), options);
      expect(assessIndependence(once, options)).toBe(once);
    });
    it('still counts a source that is also the writer as NOT_INDEPENDENT', () => {
      expect(
        assessIndependence(check('pass', 'payments-mcp'), { ...options, writes: ['payments-mcp'] }),
      ).toMatchObject({
        status: 'inconclusive',
        reason: 'NOT_INDEPENDENT',
      });
    });
    it('treats the response channel like the tool', () => {
      expect(assessIndependence(check('pass', 'gateway-cache'), options)).toMatchObject({
        status: 'inconclusive',
        reason: 'NOT_INDEPENDENT',
      });
    });
  });

  describe('when the source is the writer', () => {
    it('downgrades to inconclusive with NOT_INDEPENDENT and keeps the reported verdict', () => {
      expect(assessIndependence(check('pass', 'payments-mcp'), { writer: 'payments-mcp' })).toEqual({
        name: 'x',
        status: 'inconclusive',
        source: 'payments-mcp',
        reason: 'NOT_INDEPENDENT',
        reported: 'pass',
      });
    });
  });

  describe('when the source is independent', () => {
    it('returns the same check', () => {
      const c = check('fail', 'ledger-api');
      expect(assessIndependence(c, { writer: 'payments-mcp' })).toBe(c);
    });
  });

  describe('when the check is already an error', () => {
    it('leaves it alone', () => {
      const c = { name: 'x', status: 'error', source: null, reason: 'VERIFIER_TIMEOUT' };
      expect(assessIndependence(c, { writer: 'payments-mcp' })).toBe(c);
    });
  });

  describe('when the check names no source', () => {
    it('downgrades with SOURCE_MISSING', () => {
      expect(assessIndependence(check('pass', null))).toMatchObject({
        status: 'inconclusive',
        reason: 'SOURCE_MISSING',
      });
    });
  });
});

describe('deriveDeclaredStatus', () => {
  const named = (name: string, status: string, extra: Record<string, string> = {}) => ({
    name,
    status,
    source: 'ledger-api',
    ...extra,
  });

  describe('when a check names something nobody declared', () => {
    it('reports it as undeclared and leaves the declared postcondition unproven', () => {
      expect(deriveDeclaredStatus([named('unrelated.thing', 'pass')], ['refund.recorded'])).toEqual({
        status: 'inconclusive',
        postconditions: [{ name: 'refund.recorded', status: 'inconclusive' }],
        undeclared: ['unrelated.thing'],
      });
    });

    it('does not let an undeclared failure fail the declared ones', () => {
      const checks = [named('refund.recorded', 'pass'), named('unrelated.thing', 'fail')];
      expect(deriveDeclaredStatus(checks, ['refund.recorded']).status).toBe('passed');
    });
  });

  describe('when only some declared postconditions have a passing check', () => {
    it('is inconclusive', () => {
      const checks = [named('refund.recorded', 'pass')];
      expect(deriveDeclaredStatus(checks, ['refund.recorded', 'email.sent']).status).toBe('inconclusive');
    });
  });

  describe('when a check names the postcondition it answers', () => {
    it('counts it for that postcondition, whatever its own name', () => {
      const checks = [named('rows.match', 'fail', { postcondition: 'refund.recorded' })];
      expect(deriveDeclaredStatus(checks, ['refund.recorded'])).toMatchObject({
        status: 'failed',
        undeclared: [],
      });
    });
  });

  describe('when nothing was declared', () => {
    it('is inconclusive even when every check passed', () => {
      expect(deriveDeclaredStatus([named('refund.recorded', 'pass')], []).status).toBe('inconclusive');
    });
  });

  describe('when the checks are arbitrary', () => {
    it('is passed only when every declared name has only passing checks', () => {
      const status = fc.constantFrom('pass', 'fail', 'inconclusive', 'error');
      const names = fc.constantFrom<string>('a', 'b', 'c');
      fc.assert(
        fc.property(
          fc.array(fc.tuple(names, status)),
          fc.uniqueArray(names, { minLength: 1 }),
          (raw, declared) => {
            const checks = raw.map(([n, s]) => named(n, s));
            const counted = checks.filter((c) => declared.includes(c.name));
            const expected = counted.some((c) => c.status === 'fail')
              ? 'failed'
              : declared.every((d) => counted.some((c) => c.name === d)) &&
                  counted.every((c) => c.status === 'pass')
                ? 'passed'
                : 'inconclusive';
            expect(deriveDeclaredStatus(checks, declared).status).toBe(expected);
          },
        ),
      );
    });
  });
});
