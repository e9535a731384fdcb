import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineVerifier, VERIFIER_API_VERSION } from './define-verifier';
import { isVerifierError } from './errors';
import { createVerifierRegistry } from './verifier-registry';

const rowCount = defineVerifier({
  id: 'row-count',
  version: '1.0.0',
  apiVersion: VERIFIER_API_VERSION,
  handles: ['rows.*'],
  options: z.object({ table: z.string(), min: z.number().int().default(1) }),
  check: ({ postcondition, options }) => ({
    name: postcondition.name,
    status: 'pass',
    source: options.table,
  }),
});

function refusal(run: () => unknown) {
  try {
    run();
  } catch (error) {
    if (isVerifierError(error)) return { code: error.code, verifier: error.verifier, field: error.field };
    throw error;
  }
  throw new Error('expected a VerifierError');
}

describe('createVerifierRegistry', () => {
  describe('when the options are valid', () => {
    it('stores them validated, with defaults applied and frozen', () => {
      const registry = createVerifierRegistry([{ verifier: rowCount, options: { table: 'refunds' } }]);
      const entry = registry.get('row-count')!;
      expect(entry.options).toEqual({ table: 'refunds', min: 1 });
      expect(Object.isFrozen(entry.options)).toBe(true);
      expect(entry.timeoutMs).toBe(5000);
      expect(entry.phases).toEqual(['post']);
    });
  });

  describe('when an option is wrong', () => {
    it('throws OPTIONS_INVALID naming the verifier and the field', () => {
      expect(
        refusal(() =>
          createVerifierRegistry([
            { verifier: rowCount, name: 'refunds', options: { table: 'r', min: 'x' } },
          ]),
        ),
      ).toEqual({ code: 'OPTIONS_INVALID', verifier: 'refunds', field: '/options/min' });
    });
  });

  describe('when options are missing a required field', () => {
    it('names that field, also when the options are omitted altogether', () => {
      expect(refusal(() => createVerifierRegistry([{ verifier: rowCount }]))).toMatchObject({
        code: 'OPTIONS_INVALID',
        field: '/options/table',
      });
      expect(refusal(() => createVerifierRegistry([{ verifier: rowCount, options: {} }]))).toMatchObject({
        field: '/options/table',
      });
    });
  });

  describe('when the options are not an object', () => {
    it('throws OPTIONS_INVALID at /options', () => {
      expect(refusal(() => createVerifierRegistry([{ verifier: rowCount, options: 42 }]))).toMatchObject({
        code: 'OPTIONS_INVALID',
        field: '/options',
      });
    });
  });

  describe('when a verifier without a schema is given options', () => {
    it('throws OPTIONS_INVALID', () => {
      const bare = defineVerifier({ ...rowCount, id: 'bare', options: undefined, check: () => [] });
      expect(refusal(() => createVerifierRegistry([{ verifier: bare, options: { x: 1 } }]))).toMatchObject({
        code: 'OPTIONS_INVALID',
        verifier: 'bare',
      });
      expect(createVerifierRegistry([{ verifier: bare }]).get('bare')?.options).toEqual({});
    });
  });

  describe('when validated options are not plain JSON', () => {
    it('throws OPTIONS_INVALID at the offending field', () => {
      const dated = defineVerifier({
        ...rowCount,
        id: 'dated',
        options: z.object({ at: z.coerce.date() }),
        check: () => [],
      });
      expect(
        refusal(() => createVerifierRegistry([{ verifier: dated, options: { at: '2025-01-01' } }])),
      ).toMatchObject({
        code: 'OPTIONS_INVALID',
        field: '/options/at',
      });
    });
  });

  describe('when the schema is asynchronous', () => {
    it('throws OPTIONS_INVALID at registration', () => {
      const slow = defineVerifier({
        ...rowCount,
        id: 'slow-schema',
        options: z.object({ a: z.string() }).refine(async () => true),
        check: () => [],
      });
      expect(refusal(() => createVerifierRegistry([{ verifier: slow, options: { a: 'x' } }]))).toMatchObject({
        code: 'OPTIONS_INVALID',
      });
    });
  });

  describe('when the verifier was written for another SDK contract', () => {
    it('throws VERIFIER_API_UNSUPPORTED at /verifier/apiVersion', () => {
      const future = { ...rowCount, apiVersion: 2 };
      expect(refusal(() => createVerifierRegistry([{ verifier: future, options: { table: 't' } }]))).toEqual({
        code: 'VERIFIER_API_UNSUPPORTED',
        verifier: 'row-count',
        field: '/verifier/apiVersion',
      });
    });
  });

  describe('when the definition is malformed', () => {
    it.each([
      ['an id that is not kebab-case', { id: 'RowCount' }, '/verifier/id'],
      ['a vendor id with two slashes', { id: 'a/b/c' }, '/verifier/id'],
      ['a version that is not semver', { version: 'v1' }, '/verifier/version'],
      ['no handles', { handles: [] }, '/verifier/handles'],
      ['an unknown phase', { phase: 'during' }, '/verifier/phase'],
      ['a timeout of zero', { timeoutMs: 0 }, '/verifier/timeoutMs'],
      ['an unknown grant', { requires: ['shell'] }, '/verifier/requires'],
      ['an options value that is not a schema', { options: { table: 'string' } }, '/verifier/options'],
      ['no check function', { check: 'yes' }, '/verifier/check'],
    ])('throws VERIFIER_INVALID for %s', (_label, change, field) => {
      expect(
        refusal(() =>
          createVerifierRegistry([{ verifier: { ...rowCount, ...change }, options: { table: 't' } }]),
        ),
      ).toMatchObject({ code: 'VERIFIER_INVALID', field });
    });

    it('throws VERIFIER_INVALID for something that is not an object', () => {
      expect(refusal(() => createVerifierRegistry([{ verifier: undefined as never }]))).toMatchObject({
        code: 'VERIFIER_INVALID',
        verifier: '#0',
      });
    });
  });

  describe('when the registration is malformed', () => {
    it.each([
      ['an empty name', { name: ' ' }, '/name'],
      ['empty handles', { handles: [] }, '/handles'],
      ['a timeout above the maximum', { timeoutMs: 10_000_000 }, '/timeoutMs'],
    ])('throws VERIFIER_INVALID for %s', (_label, change, field) => {
      expect(
        refusal(() => createVerifierRegistry([{ verifier: rowCount, options: { table: 't' }, ...change }])),
      ).toMatchObject({
        code: 'VERIFIER_INVALID',
        field,
      });
    });
  });

  describe('when one verifier is registered twice', () => {
    it('throws VERIFIER_DUPLICATE without distinct names', () => {
      const twice = [
        { verifier: rowCount, options: { table: 'a' } },
        { verifier: rowCount, options: { table: 'b' } },
      ];
      expect(refusal(() => createVerifierRegistry(twice))).toMatchObject({
        code: 'VERIFIER_DUPLICATE',
        field: '/name',
      });
    });

    it('accepts it under distinct names and handles', () => {
      const registry = createVerifierRegistry([
        {
          verifier: rowCount,
          name: 'refund-rows',
          handles: ['refund.recorded'],
          options: { table: 'refunds' },
        },
        {
          verifier: rowCount,
          name: 'order-rows',
          handles: [/^order\./],
          options: { table: 'orders' },
          timeoutMs: 50,
        },
      ]);
      expect(registry.forPostcondition('refund.recorded', 'post').map((e) => e.name)).toEqual([
        'refund-rows',
      ]);
      expect(registry.forPostcondition('order.shipped', 'post').map((e) => e.name)).toEqual(['order-rows']);
      expect(registry.forPostcondition('rows.any', 'post')).toEqual([]);
      expect(registry.get('order-rows')?.timeoutMs).toBe(50);
    });
  });

  describe('when asked for a postcondition in another phase', () => {
    it('returns only verifiers of that phase', () => {
      const pre = defineVerifier({ ...rowCount, id: 'pre-rows', phase: ['pre'] });
      const registry = createVerifierRegistry([
        { verifier: rowCount, options: { table: 'a' } },
        { verifier: pre, options: { table: 'b' } },
      ]);
      expect(registry.forPostcondition('rows.x', 'pre').map((e) => e.name)).toEqual(['pre-rows']);
      expect(registry.forPostcondition('rows.x', 'post').map((e) => e.name)).toEqual(['row-count']);
    });
  });
});
