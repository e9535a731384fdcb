import { validateOptions } from '@vouch/verifier-sdk';
import { describe, expect, it } from 'vitest';
import { toJsonRow } from './postgres-sql-grant';
import { sqlVerifier } from './sql-verifier';

function refusedAt(options: unknown): string | undefined {
  try {
    validateOptions(sqlVerifier, options);
  } catch (error) {
    return (error as { code: string; field?: string }).code === 'OPTIONS_INVALID'
      ? (error as { field?: string }).field
      : 'other';
  }
  return undefined;
}

describe('sql options', () => {
  describe('when valid', () => {
    it('applies defaults', () => {
      expect(validateOptions(sqlVerifier, { query: 'select 1', expect: { op: 'exists' } })).toEqual({
        query: 'select 1',
        params: [],
        expect: { op: 'exists' },
        maxRows: 100,
      });
    });
  });

  describe('when a read only looks like a write', () => {
    it.each([
      'select \'delete\' as word, "update" from t -- insert into x',
      "select $1::text where 'a;b' = $$;drop table x$$ /* ; grant */",
      'with recent as (select * from refunds) select count(*) from recent',
      'select updated_at, deleted from refunds',
    ])('accepts %s', (query) => {
      const params = query.includes('$1') ? [{ value: 'x' }] : [];
      expect(refusedAt({ query, params, expect: { op: 'exists' } })).toBeUndefined();
    });
  });

  describe('when invalid', () => {
    it.each([
      [{ query: 'select $1', expect: { op: 'exists' } }, '/options/params'],
      [
        { query: 'select $1', params: [{ from: 'env.HOME' }], expect: { op: 'exists' } },
        '/options/params/0/from',
      ],
      [{ query: 'select 1', expect: { op: 'rowCount', equals: 1, min: 0 } }, '/options/expect'],
      [{ query: 'select 1', expect: { op: 'columnEquals', column: 'a' } }, '/options/expect/value'],
      [{ query: '', expect: { op: 'exists' } }, '/options/query'],
      [{ query: 'delete from refunds', expect: { op: 'exists' } }, '/options/query'],
      [{ query: 'select * into copy from refunds', expect: { op: 'exists' } }, '/options/query'],
      [{ query: 'select * from refunds for update', expect: { op: 'exists' } }, '/options/query'],
      [{ query: 'select "pg_read_file"(\'x\')', expect: { op: 'exists' } }, '/options/query'],
      [{ query: "select 'unterminated", expect: { op: 'exists' } }, '/options/query'],
      [{ query: 'select 1' }, '/options/expect'],
      [{ query: 'select 1', successCondition: 'rowCount ==' }, '/options/successCondition'],
    ])('refuses %j at %s', (options, field) => {
      expect(refusedAt(options)).toBe(field);
    });
  });
});

describe('toJsonRow', () => {
  describe('when a row holds driver types', () => {
    it('turns them into plain JSON', () => {
      expect(
        toJsonRow({
          at: new Date('2025-01-02T03:04:05.000Z'),
          big: 12345678901234567890n,
          bytes: Buffer.from([0xde, 0xad]),
          nested: { list: [new Date(0), null, undefined] },
          n: Number.NaN,
        }),
      ).toEqual({
        at: '2025-01-02T03:04:05.000Z',
        big: '12345678901234567890',
        bytes: '\\xdead',
        nested: { list: ['1970-01-01T00:00:00.000Z', null, null] },
        n: 'NaN',
      });
    });
  });
});
