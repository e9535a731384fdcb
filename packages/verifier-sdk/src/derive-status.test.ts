import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  assessAllowedVerifier,
  assessIndependence,
  deriveDeclaredStatus,
  deriveStatus,
} from './derive-status';

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

    it('counts a fail as failed: independence is what a pass needs, not a fail', () => {
      expect(deriveStatus([check('fail', 'Payments-MCP ')], { writer: ['payments-mcp'] })).toBe('failed');
    });
  });

  describe('when a fail names no source', () => {
    it('is failed', () => {
      expect(deriveStatus([check('fail', null)])).toBe('failed');
    });
  });

  describe('when a stored check holds a fail downgraded under the earlier rule', () => {
    it.each(['NOT_INDEPENDENT', 'SOURCE_MISSING', 'RESULT_INVALID'])(
      'counts it as failed (reason %s)',
      (reason) => {
        const stored = {
          name: 'x',
          status: 'inconclusive',
          source: 'payments-mcp',
          reason,
          reported: 'fail',
        };
        expect(deriveStatus([stored, check('pass')])).toBe('failed');
      },
    );

    it('does not count a measured series that ended undecided as failed', () => {
      const undecided = { ...check('inconclusive'), reason: 'MEASUREMENT_UNDECIDED', reported: 'fail' };
      expect(deriveStatus([undecided])).toBe('inconclusive');
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

    it('is failed exactly when some check failed, from whatever source', () => {
      fc.assert(
        fc.property(fc.array(anyCheck), (checks) => {
          const failed = checks.some((c) => c.status === 'fail');
          expect(deriveStatus(checks, { writer: 'writer' }) === 'failed').toBe(failed);
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

  describe('when the source is a look-alike of the writer', () => {
    it.each([
      ['case and spaces', ' PAYMENTS-MCP '],
      ['zero-width joiner', 'payments\u200d-mcp'],
      ['compatibility form', 'ｐａｙｍｅｎｔｓ-ｍｃｐ'],
    ])('counts a pass NOT_INDEPENDENT (%s)', (_, source) => {
      expect(assessIndependence(check('pass', source), { writer: 'payments-mcp' })).toMatchObject({
        status: 'inconclusive',
        reason: 'NOT_INDEPENDENT',
      });
    });

    it("uses the host's canonical form for confusables (a Cyrillic а)", () => {
      const skeleton = (name: string) => name.replaceAll('а', 'a');
      const c = check('pass', 'pаyments-mcp');
      expect(assessIndependence(c, { writer: 'payments-mcp' })).toBe(c);
      expect(assessIndependence(c, { writer: 'payments-mcp', canonical: skeleton })).toMatchObject({
        reason: 'NOT_INDEPENDENT',
      });
    });
  });

  describe('when a fail is read from the writer or names no source', () => {
    it.each(['payments-mcp', null])('keeps it a fail (source %j)', (source) => {
      const c = check('fail', source);
      expect(assessIndependence(c, { writer: 'payments-mcp' })).toBe(c);
    });
  });

  describe('when a stored check was downgraded under the earlier rule', () => {
    it('leaves it as stored (idempotent)', () => {
      const stored = {
        ...check('inconclusive', 'payments-mcp'),
        reason: 'NOT_INDEPENDENT',
        reported: 'fail',
      };
      expect(assessIndependence(stored, { writer: 'payments-mcp' })).toBe(stored);
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

describe('deriveDeclaredStatus with params', () => {
  const declared = [
    { name: 'refund.recorded', params: { refund_id: 're_1' } },
    { name: 'refund.recorded', params: { refund_id: 're_2' } },
  ];
  const answering = (status: string, params?: unknown) => ({
    name: 'refund.recorded',
    status,
    source: 'ledger-api',
    ...(params === undefined ? {} : { params }),
  });

  describe('when one check answers one of two postconditions of the same name', () => {
    it('proves only the one whose params it names', () => {
      expect(deriveDeclaredStatus([answering('pass', { refund_id: 're_1' })], declared)).toEqual({
        status: 'inconclusive',
        postconditions: [
          { name: 'refund.recorded', params: { refund_id: 're_1' }, status: 'passed' },
          { name: 'refund.recorded', params: { refund_id: 're_2' }, status: 'inconclusive' },
        ],
        undeclared: [],
      });
    });

    it('compares params as canonical JSON, and absent params as {}', () => {
      const nested = [{ name: 'a', params: { x: { b: 1, a: 2 } } }, { name: 'b' }];
      const checks = [
        { name: 'a', status: 'pass', source: 's', params: { x: { a: 2, b: 1 } } },
        { name: 'b', status: 'pass', source: 's', params: {} },
      ];
      expect(deriveDeclaredStatus(checks, nested).status).toBe('passed');
    });
  });

  describe('when each is answered by its own check', () => {
    it('is passed', () => {
      const checks = [answering('pass', { refund_id: 're_2' }), answering('pass', { refund_id: 're_1' })];
      expect(deriveDeclaredStatus(checks, declared).status).toBe('passed');
    });
  });

  describe('when a check names params nobody declared', () => {
    it('is undeclared', () => {
      const result = deriveDeclaredStatus([answering('fail', { refund_id: 're_9' })], declared);
      expect(result).toMatchObject({ status: 'inconclusive', undeclared: ['refund.recorded'] });
    });
  });

  describe('when a check gives no params', () => {
    it('answers the only postcondition of its name, as records before params did', () => {
      expect(deriveDeclaredStatus([answering('pass')], [declared[0]!]).status).toBe('passed');
    });

    it('proves none of several of its name', () => {
      expect(deriveDeclaredStatus([answering('pass'), answering('pass')], declared).status).toBe(
        'inconclusive',
      );
    });

    it('fails every one of its name', () => {
      const result = deriveDeclaredStatus([answering('fail')], declared);
      expect(result.postconditions.map((p) => p.status)).toEqual(['failed', 'failed']);
    });
  });
});

describe('deriveDeclaredStatus with verifiers', () => {
  const declared = [{ name: 'refund.recorded', verifiers: ['ledger-reader', 'service:auditor'] }];
  const by = (status: string, verifier?: string) => ({
    name: 'refund.recorded',
    status,
    source: 'ledger-api',
    ...(verifier === undefined ? {} : { verifier: { id: 'v', version: '1', apiVersion: 1, name: verifier } }),
  });

  describe('when a server-run check comes from an allowed verifier', () => {
    it('proves it', () => {
      expect(deriveDeclaredStatus([by('pass', 'Ledger-Reader')], declared).status).toBe('passed');
    });
  });

  describe('when a pass comes from a verifier not in the list', () => {
    it('proves nothing', () => {
      expect(deriveDeclaredStatus([by('pass', 'other-reader')], declared).status).toBe('inconclusive');
    });

    it('judges an external check by the identity that recorded it', () => {
      expect(deriveDeclaredStatus([by('pass')], declared, { recordedBy: 'service:auditor' }).status).toBe(
        'passed',
      );
      expect(deriveDeclaredStatus([by('pass')], declared, { recordedBy: 'service:other' }).status).toBe(
        'inconclusive',
      );
      expect(deriveDeclaredStatus([by('pass')], declared).status).toBe('inconclusive');
    });
  });

  describe('when a fail comes from a verifier not in the list', () => {
    it('still fails it', () => {
      expect(deriveDeclaredStatus([by('fail', 'other-reader')], declared).status).toBe('failed');
    });
  });
});

describe('assessAllowedVerifier', () => {
  const condition = { name: 'refund.recorded', verifiers: ['ledger-reader'] };
  describe('when the verifier may not prove the condition', () => {
    it('records the pass as inconclusive VERIFIER_NOT_ALLOWED', () => {
      const c = { name: 'refund.recorded', status: 'pass', source: 'bank', verifier: { name: 'other' } };
      expect(assessAllowedVerifier(c, [condition])).toEqual({
        ...c,
        status: 'inconclusive',
        reason: 'VERIFIER_NOT_ALLOWED',
        reported: 'pass',
      });
    });

    it('leaves a fail alone', () => {
      const c = { name: 'refund.recorded', status: 'fail', source: 'bank', verifier: { name: 'other' } };
      expect(assessAllowedVerifier(c, [condition])).toBe(c);
    });
  });
});
