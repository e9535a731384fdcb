import { createVerifierRegistry, runVerifiers, type VerificationOutcome } from '@vouch/verifier-sdk';
import { exampleObservation, exampleProposal, VerifierTester } from '@vouch/verifier-sdk/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort } from '../test-support/http-server';
import { createTestMysqlDatabase, type TestMysqlDatabase } from '../test-support/mysql-database';
import { createMysqlSqlGrant, type MysqlSqlGrant } from './mysql-sql-grant';
import { sqlVerifier } from './sql-verifier';

// The real MariaDB (or MySQL) in MYSQL_URL, in a database of its own.
let db: TestMysqlDatabase;
let orders: MysqlSqlGrant;
let down: MysqlSqlGrant;
beforeAll(async () => {
  db = await createTestMysqlDatabase();
  await db.sql.query(
    'create table refunds (refund_id varchar(32) primary key, payment_id varchar(32) not null, amount decimal(12,2) not null)',
  );
  await db.sql.query("insert into refunds values ('re_1', 'pay_123', 12.50), ('re_2', 'pay_123', 3.00)");
  orders = createMysqlSqlGrant({ name: 'orders-db', url: db.url });
  down = createMysqlSqlGrant({
    name: 'orders-db',
    url: `mysql://root@127.0.0.1:${await closedPort()}/x`,
    connectTimeoutSeconds: 1,
  });
});
afterAll(async () => {
  await orders?.close();
  await down?.close();
  await db?.drop();
});

const refundRecorded = {
  // Placeholders are written $1, $2 for every database; the grant rewrites them for MySQL.
  query: 'select refund_id, payment_id, amount from refunds where refund_id = $2 and payment_id = $1',
  params: [{ from: 'target.id' }, { from: 'observation.result.refund_id' }],
  expect: { op: 'columnEquals', column: 'amount', from: 'arguments.amount' },
  // The refund id comes from the tool's result: what it names must be this payment's refund.
  bind: [{ column: 'payment_id', from: 'target.id' }],
  evidenceRef: 'refund:{result.0.refund_id}',
};

async function verify(
  options: Record<string, unknown>,
  more: { refundId?: string; grant?: MysqlSqlGrant; timeoutMs?: number } = {},
): Promise<VerificationOutcome> {
  const registry = createVerifierRegistry([
    {
      verifier: sqlVerifier,
      handles: ['refund.recorded'],
      options,
      grants: { sql: more.grant ?? orders },
      ...(more.timeoutMs ? { timeoutMs: more.timeoutMs } : {}),
    },
  ]);
  return runVerifiers({
    registry,
    proposal: exampleProposal({ postconditions: [{ name: 'refund.recorded' }], arguments: { amount: 12.5 } }),
    observation: exampleObservation({
      server_id: 'payments-mcp',
      result: { refund_id: more.refundId ?? 're_1' },
    }),
  });
}

const direct = (text: string, params: (string | number)[] = [], grant: MysqlSqlGrant = orders) =>
  grant.query(text, params, { signal: new AbortController().signal, timeoutMs: 2_000 }).then(
    (rows) => rows,
    (error: unknown) => error,
  );

describe('sql verifier on MySQL / MariaDB', () => {
  describe('when the row is there with the amount the proposal asked for', () => {
    it('passes, with the parameters bound in $n order', async () => {
      const outcome = await verify(refundRecorded);
      expect(outcome.status).toBe('passed');
      expect(outcome.checks[0]).toMatchObject({ source: 'orders-db', observed: { amount: '12.50' } });
    });
  });

  describe('when it is not', () => {
    it('fails', async () => {
      expect((await verify(refundRecorded, { refundId: 're_404' })).status).toBe('failed');
      expect((await verify(refundRecorded, { refundId: 're_2' })).status).toBe('failed');
    });
  });

  describe('when CEL conditions are given', () => {
    it('evaluates them over the rows', async () => {
      const { expect: _noExpect, ...rowQuery } = refundRecorded;
      const options = { ...rowQuery, successCondition: 'rowCount == 1 && double(result[0].amount) == 12.5' };
      expect((await verify(options)).status).toBe('passed');
      expect((await verify(options, { refundId: 're_2' })).status).toBe('failed');
    });
  });

  describe('when the statement is too slow', () => {
    it('is stopped by the server-side statement timeout', async () => {
      const outcome = await verify({
        query: 'select sleep(3) as s',
        expect: { op: 'exists' },
        statementTimeoutMs: 200,
      });
      expect(outcome.status).toBe('inconclusive');
      expect(outcome.checks[0]).toMatchObject({ status: 'error', reason: 'SOURCE_UNAVAILABLE' });
    });
  });

  describe('when rows keep coming', () => {
    it('stops reading at maxRows', async () => {
      const outcome = await verify({
        query: 'select seq from seq_1_to_100000',
        expect: { op: 'rowCount', max: 10 },
        maxRows: 10,
      });
      expect(outcome.checks[0]).toMatchObject({ status: 'fail', evidence: { truncated: true } });
      // The cut connection is dropped, not reused: the next check still works.
      expect((await verify(refundRecorded)).status).toBe('passed');
    });
  });

  describe('when a statement that writes reaches the database anyway', () => {
    it('refuses it in the read-only transaction and changes nothing', async () => {
      expect(await direct("insert into refunds values ('re_x', 'p', 1)")).toMatchObject({
        code: 'SOURCE_FORBIDDEN',
        evidence: { errno: 1792 },
      });
      expect(await direct('delete from refunds')).toMatchObject({ code: 'SOURCE_FORBIDDEN' });
      const [rows] = await db.sql.query('select count(*) as n from refunds');
      expect(rows).toEqual([{ n: 2 }]);
    });

    it('takes one statement only', async () => {
      expect(await direct('select 1; delete from refunds')).toMatchObject({ code: 'SOURCE_UNAVAILABLE' });
      const [rows] = await db.sql.query('select count(*) as n from refunds');
      expect(rows).toEqual([{ n: 2 }]);
    });
  });

  describe('when one check sets session state', () => {
    it('does not carry into the next check on the same connection', async () => {
      const single = createMysqlSqlGrant({ name: 'orders-db', url: db.url, max: 1 });
      try {
        await direct('select @leak := 42 as x', [], single);
        await direct('select 1 from dual where @@session.sql_mode = @@session.sql_mode', [], single);
        expect(await direct('select @leak as leak, connection_id() as id', [], single)).toMatchObject([
          { leak: null },
        ]);
      } finally {
        await single.close();
      }
    });
  });

  describe('when the server is down', () => {
    it('is inconclusive, never failed', async () => {
      const outcome = await verify(refundRecorded, { grant: down });
      expect(outcome.status).toBe('inconclusive');
      expect(outcome.checks[0]).toMatchObject({ status: 'error', reason: 'SOURCE_UNAVAILABLE' });
    });
  });
});

new VerifierTester({
  describe,
  it,
  observation: { result: { refund_id: 're_1' } },
  proposal: { arguments: { amount: 12.5 } },
}).run('sql on MySQL under the VerifierTester', sqlVerifier, {
  pass: [
    {
      options: refundRecorded,
      get grants() {
        return { sql: orders };
      },
    },
  ],
  fail: [
    {
      options: refundRecorded,
      observation: { result: { refund_id: 're_404' } },
      get grants() {
        return { sql: orders };
      },
    },
  ],
  inconclusive: [
    {
      name: 'source down',
      reason: 'SOURCE_UNAVAILABLE',
      options: refundRecorded,
      get grants() {
        return { sql: down };
      },
    },
  ],
});
