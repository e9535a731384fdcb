import { LedgerError } from '@vouch/ledger';
import { DrizzleQueryError } from 'drizzle-orm/errors';
import { describe, expect, it } from 'vitest';
import { explainFailure } from './errors';

const postgresTarget = { kind: 'postgres', url: 'postgres://vouch@127.0.0.1:5432/vouch' } as const;

/** A server error as postgres.js raises it: a SQLSTATE and the server's own reason. */
const serverError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('explainFailure', () => {
  describe('when a statement carrying a password fails', () => {
    const secret = 'hunter2-not-for-logs';
    const failed = new DrizzleQueryError(
      `alter role "vouch_app" with login password '${secret}'`,
      [`param-${secret}`],
      serverError('XX000', 'something went wrong'),
    );

    it('prints the server reason and SQLSTATE, never the statement or its parameters', () => {
      const text = explainFailure(failed, postgresTarget);
      expect(text).toContain('SQLSTATE XX000');
      expect(text).toContain('something went wrong');
      expect(text).not.toContain(secret);
      expect(text).not.toMatch(/Failed query|params|alter role/i);
    });

    it('prints nothing of it when it is the cause of a lost database either', () => {
      const text = explainFailure(
        new LedgerError('DATABASE_UNAVAILABLE', 'the database went away', { cause: failed }),
        postgresTarget,
      );
      expect(text).not.toContain(secret);
      expect(text).not.toMatch(/Failed query|params/);
    });

    it('says nothing of a failed query that carries no server reason but that it failed', () => {
      const text = explainFailure(new DrizzleQueryError(`select '${secret}'`, [secret]), postgresTarget);
      expect(text).not.toContain(secret);
      expect(text).toMatch(/^unexpected error: /);
    });
  });

  describe('when the database refuses a privilege (SQLSTATE 42501)', () => {
    it('names the role as the problem, not the connection', () => {
      const refused = new LedgerError('DATABASE_UNAVAILABLE', 'applying migrations failed', {
        cause: new DrizzleQueryError(
          'CREATE SCHEMA IF NOT EXISTS "drizzle"',
          [],
          serverError('42501', 'permission denied for database vouch'),
        ),
      });
      const text = explainFailure(refused, postgresTarget);
      expect(text).toContain('SQLSTATE 42501');
      expect(text).toContain('owner role');
      expect(text).not.toContain('Check DATABASE_URL');
      expect(text).not.toContain('CREATE SCHEMA');
    });
  });

  describe('when Postgres answers with another error', () => {
    it('does not blame the connection', () => {
      const refused = new LedgerError('DATABASE_UNAVAILABLE', 'applying migrations failed', {
        cause: new DrizzleQueryError(
          'CREATE TABLE "x" ()',
          [],
          serverError('42P07', 'relation "x" already exists'),
        ),
      });
      const text = explainFailure(refused, postgresTarget);
      expect(text).toContain('SQLSTATE 42P07');
      expect(text).not.toContain('Check DATABASE_URL');
    });
  });

  describe('when the database cannot be reached', () => {
    it('still points at DATABASE_URL', () => {
      const unreachable = new LedgerError('DATABASE_UNAVAILABLE', 'cannot connect', {
        cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      });
      expect(explainFailure(unreachable, postgresTarget)).toContain('Check DATABASE_URL');
    });
  });
});
