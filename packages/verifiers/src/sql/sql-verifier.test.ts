import { createVerifierRegistry, runVerifiers, type VerificationOutcome } from '@vouch/verifier-sdk';
import { exampleObservation, exampleProposal, VerifierTester } from '@vouch/verifier-sdk/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort } from '../test-support/http-server';
import { createTestDatabase, hasPostgres, type TestDatabase } from '../test-support/postgres-database';
import { createPostgresSqlGrant, type PostgresSqlGrant } from './postgres-sql-grant';
import { sqlVerifier } from './sql-verifier';

// Runs against the real Postgres in DATABASE_URL, in a database of its own.
describe.skipIf(!hasPostgres)('sql verifier on Postgres', () => {
  let db: TestDatabase;
  let ledger: PostgresSqlGrant;
  let down: PostgresSqlGrant;

  beforeAll(async () => {
    db = await createTestDatabase();
    // The independent ledger the refund story reads: written by the bank, not by the tool server.
    await db.sql`create table refunds (refund_id text primary key, payment_id text not null, amount numeric(12,2) not null, booked_at timestamptz not null default now())`;
    await db.sql`insert into refunds (refund_id, payment_id, amount) values ('re_1', 'pay_123', 12.50), ('re_2', 'pay_123', 3.00)`;
    ledger = createPostgresSqlGrant({ name: 'ledger-db', url: db.url });
    down = createPostgresSqlGrant({
      name: 'ledger-db',
      url: `postgres://postgres@127.0.0.1:${await closedPort()}/x`,
      connectTimeoutSeconds: 2,
    });
  });
  afterAll(async () => {
    await ledger?.close();
    await down?.close();
    await db?.drop();
  });

  const refundRecorded = {
    query: 'select refund_id, payment_id, amount from refunds where payment_id = $1 and refund_id = $2',
    params: [{ from: 'target.id' }, { from: 'observation.result.refund_id' }],
    expect: { op: 'exists' },
    // The refund id comes from the tool's result: what it names must be this payment's refund.
    bind: [{ column: 'payment_id', from: 'target.id' }],
    evidenceRef: 'refund:{result.0.refund_id}',
  };

  async function verify(
    options: Record<string, unknown>,
    more: {
      refundId?: string;
      grant?: PostgresSqlGrant;
      timeoutMs?: number;
      args?: Record<string, unknown>;
    } = {},
  ): Promise<VerificationOutcome> {
    const registry = createVerifierRegistry([
      {
        verifier: sqlVerifier,
        name: 'refund-row',
        handles: ['refund.recorded'],
        options,
        grants: { sql: more.grant ?? ledger },
        ...(more.timeoutMs ? { timeoutMs: more.timeoutMs } : {}),
      },
    ]);
    return runVerifiers({
      registry,
      proposal: exampleProposal({
        postconditions: [{ name: 'refund.recorded' }],
        arguments: { amount: 12.5, ...more.args },
      }),
      // The tool server says it refunded: status 200 and a refund id. That is a claim, not a verification.
      observation: exampleObservation({
        server_id: 'payments-mcp',
        outcome: 'succeeded',
        result: { status: 200, refund_id: more.refundId ?? 're_1' },
      }),
    });
  }

  describe('the refund story', () => {
    it('is failed when the tool reported success but the independent ledger has no refund row', async () => {
      const outcome = await verify(refundRecorded, { refundId: 're_404' });
      expect(outcome.status).toBe('failed');
      expect(outcome.checks[0]).toMatchObject({
        status: 'fail',
        source: 'ledger-db',
        observed: { rows: 0 },
        evidence: { connection: 'ledger-db', params: ['pay_123', 're_404'] },
        verifier: { id: 'sql', name: 'refund-row' },
      });
    });

    it('is passed when the row is there', async () => {
      const outcome = await verify(refundRecorded);
      expect(outcome.status).toBe('passed');
    });

    it('is inconclusive, never failed, when the source is down', async () => {
      const outcome = await verify(refundRecorded, { grant: down });
      expect(outcome.status).toBe('inconclusive');
      expect(outcome.checks[0]).toMatchObject({ status: 'error', reason: 'SOURCE_UNAVAILABLE' });
    });
  });

  describe('when asserting on a column', () => {
    it('compares a numeric column with the proposal amount', async () => {
      const options = {
        ...refundRecorded,
        expect: { op: 'columnEquals', column: 'amount', from: 'arguments.amount' },
      };
      expect((await verify(options)).status).toBe('passed');
      expect((await verify(options, { args: { amount: 99 } })).checks[0]).toMatchObject({
        status: 'fail',
        observed: { amount: '12.50' },
        expected: { amount: 99 },
      });
    });

    it('is inconclusive when the column is not returned', async () => {
      const options = { ...refundRecorded, expect: { op: 'columnEquals', column: 'currency', value: 'EUR' } };
      expect((await verify(options)).checks[0]).toMatchObject({
        status: 'inconclusive',
        reason: 'COLUMN_MISSING',
      });
    });
  });

  describe('when counting rows', () => {
    const byPayment = {
      query: 'select refund_id from refunds where payment_id = $1',
      params: [{ from: 'target.id' }],
    };
    it.each([
      [{ op: 'rowCount', equals: 2 }, 'pass'],
      [{ op: 'rowCount', equals: 1 }, 'fail'],
      [{ op: 'rowCount', min: 1, max: 5 }, 'pass'],
      [{ op: 'absent' }, 'fail'],
    ])('%j gives %s', async (expectation, status) => {
      expect((await verify({ ...byPayment, expect: expectation })).checks[0]?.status).toBe(status);
    });

    it('stops reading at maxRows', async () => {
      const outcome = await verify({
        query: 'select generate_series(1, 100000) as n',
        expect: { op: 'rowCount', max: 10 },
        maxRows: 10,
      });
      expect(outcome.checks[0]).toMatchObject({
        status: 'fail',
        observed: { rows: '> 10' },
        evidence: { truncated: true },
      });
    });
  });

  describe('when the statement is too slow', () => {
    it('is inconclusive via the statement timeout', async () => {
      const outcome = await verify({
        query: 'select pg_sleep(5)',
        expect: { op: 'exists' },
        statementTimeoutMs: 100,
      });
      expect(outcome.status).toBe('inconclusive');
      expect(outcome.checks[0]).toMatchObject({
        status: 'error',
        reason: 'SOURCE_UNAVAILABLE',
        evidence: { sqlstate: '57014' },
      });
    });

    it('is cancelled on the server at the host deadline', async () => {
      const started = performance.now();
      const outcome = await verify(
        { query: 'select pg_sleep(5)', expect: { op: 'exists' } },
        { timeoutMs: 300 },
      );
      expect(outcome.checks[0]?.status).toBe('error');
      expect(performance.now() - started).toBeLessThan(2_000);
      const running =
        await db.sql`select count(*)::int as n from pg_stat_activity where query = 'select pg_sleep(5)' and state = 'active'`;
      expect(running[0]?.n).toBe(0);
    });
  });

  describe('when the query is not a plain read', () => {
    it.each([
      ['an insert', "insert into refunds (refund_id, payment_id, amount) values ('re_x', $1, 1)"],
      ['a data-modifying CTE', 'with d as (delete from refunds returning 1) select * from d'],
      ['a second statement', 'select 1; delete from refunds'],
      ['a session setting', "select set_config('search_path', 'x', false)"],
      ['a superuser function', "select pg_read_file('/etc/passwd')"],
    ])('refuses %s when the configuration loads', (_label, query) => {
      const params = query.includes('$1') ? [{ from: 'target.id' }] : [];
      expect(() =>
        createVerifierRegistry([
          { verifier: sqlVerifier, options: { query, params, expect: { op: 'exists' } } },
        ]),
      ).toThrow(expect.objectContaining({ code: 'OPTIONS_INVALID', field: '/options/query' }));
    });
  });

  // The load-time check is the first guard; these go straight to the grant to show the second.
  describe('when a statement that writes reaches the database anyway', () => {
    const run = (text: string, grant: PostgresSqlGrant = ledger) =>
      grant.query(text, [], { signal: new AbortController().signal, timeoutMs: 2_000 }).then(
        () => null,
        (error: unknown) => error,
      );

    it.each([
      [
        'an insert',
        "insert into refunds (refund_id, payment_id, amount) values ('re_x', 'p', 1) returning refund_id",
      ],
      ['a delete', 'delete from refunds returning refund_id'],
      ['a data-modifying CTE', 'with d as (delete from refunds returning 1) select * from d'],
      ['a function with side effects', "select nextval('s')"],
    ])('refuses %s and changes nothing', async (_label, text) => {
      await db.sql`create sequence if not exists s`;
      expect(await run(text)).toMatchObject({ code: 'SOURCE_FORBIDDEN', evidence: { sqlstate: '25006' } });
      expect((await db.sql`select count(*)::int as n from refunds`)[0]?.n).toBe(2);
    });

    it('cannot escape the transaction with a second statement', async () => {
      // The extended protocol takes one statement: Postgres refuses the text before running any of it.
      expect(await run('commit; delete from refunds')).toMatchObject({
        code: 'SOURCE_UNAVAILABLE',
        evidence: { sqlstate: '42601' },
      });
      expect((await db.sql`select count(*)::int as n from refunds`)[0]?.n).toBe(2);
    });

    it('rolls back, so a session setting made by one check does not carry into the next', async () => {
      const single = createPostgresSqlGrant({ name: 'ledger-db', url: db.url, max: 1 });
      try {
        const signal = new AbortController().signal;
        await single.query("select set_config('search_path', 'leaked', false)", [], {
          signal,
          timeoutMs: 2_000,
        });
        await single.query("select set_config('application_name', 'leaked', false)", [], {
          signal,
          timeoutMs: 2_000,
        });
        const [row] = await single.query(
          "select current_setting('search_path') as search_path, current_setting('application_name') as app, pg_backend_pid() as pid",
          [],
          { signal, timeoutMs: 2_000 },
        );
        expect(row).toMatchObject({ app: 'vouch-verifier' });
        expect(row?.search_path).not.toContain('leaked');
      } finally {
        await single.close();
      }
    });
  });

  describe('when the grant connects as a least-privilege role', () => {
    const role = `vouch_reader_${process.pid}`;
    let reader: PostgresSqlGrant;
    beforeAll(async () => {
      await db.sql.unsafe(`create role ${role} login`);
      await db.sql.unsafe(`grant select on refunds to ${role}`);
      const url = new URL(db.url);
      url.username = role;
      reader = createPostgresSqlGrant({ name: 'ledger-db', url: url.href, max: 1 });
    });
    afterAll(async () => {
      await reader?.close();
      await db.sql.unsafe(`drop owned by ${role}`);
      await db.sql.unsafe(`drop role if exists ${role}`);
    });
    const run = (text: string) =>
      reader.query(text, [], { signal: new AbortController().signal, timeoutMs: 2_000 }).then(
        (rows) => rows,
        (error: unknown) => error,
      );

    it('reads the rows it was granted', async () => {
      expect(await run('select count(*)::int as n from refunds')).toEqual([{ n: 2 }]);
    });

    it.each([
      ['read a server file', "select pg_read_file('/etc/hostname')"],
      [
        'terminate another session',
        "select pg_terminate_backend(pid) from pg_stat_activity where usename = 'postgres'",
      ],
    ])('cannot %s', async (_label, text) => {
      expect(await run(text)).toMatchObject({ code: 'SOURCE_FORBIDDEN', evidence: { sqlstate: '42501' } });
    });
  });

  describe("when the query looks up the refund the tool's result names", () => {
    // No payment in the WHERE clause: only the binding ties the row to the proposal.
    beforeAll(async () => {
      await db.sql`create table refunds_by_id (refund_id text primary key, payment_id text not null, amount numeric(12,2) not null)`;
      await db.sql`insert into refunds_by_id values ('re_1', 'pay_123', 12.50), ('re_other', 'pay_999', 12.50)`;
    });
    const byResult = {
      query: 'select refund_id, payment_id, amount from refunds_by_id where refund_id = $1',
      params: [{ from: 'observation.result.refund_id' }],
      expect: { op: 'columnEquals', column: 'amount', from: 'arguments.amount' },
      bind: [{ column: 'payment_id', from: 'target.id' }],
      evidenceRef: 'refund:{result.0.refund_id}',
    };

    it("passes on the payment's own refund, naming it", async () => {
      const outcome = await verify(byResult);
      expect(outcome.checks[0]).toMatchObject({ status: 'pass', evidence_ref: 'refund:re_1' });
    });

    it("fails on another payment's refund of the same amount", async () => {
      const outcome = await verify(byResult, { refundId: 're_other' });
      expect(outcome.status).toBe('failed');
      expect(outcome.checks[0]).toMatchObject({
        status: 'fail',
        evidence: { bindings: [{ column: 'payment_id', ok: false, expected: 'pay_123' }] },
      });
    });

    it('is refused at registration without bind', () => {
      const { bind: _bind, ...unbound } = byResult;
      expect(() =>
        createVerifierRegistry([{ verifier: sqlVerifier, options: unbound, grants: { sql: ledger } }]),
      ).toThrow(expect.objectContaining({ code: 'OPTIONS_INVALID', field: '/options/params/0/from' }));
    });
  });

  describe('when CEL conditions are given', () => {
    const { expect: _noExpect, ...rowQuery } = refundRecorded;
    it('passes when the successCondition holds over the rows', async () => {
      const outcome = await verify({
        ...rowQuery,
        successCondition: 'rowCount == 1 && double(result[0].amount) == arguments.amount',
      });
      expect(outcome.status).toBe('passed');
      expect(outcome.checks[0]?.evidence).toMatchObject({
        conditions: { successCondition: { value: true } },
      });
    });

    it('fails when it does not, and fails an expect that holds if the condition fails', async () => {
      const condition = { successCondition: 'double(result[0].amount) == 99.0' };
      expect((await verify({ ...rowQuery, ...condition })).status).toBe('failed');
      expect((await verify({ ...refundRecorded, ...condition })).status).toBe('failed');
    });

    it('is inconclusive (CONDITION_ERROR) when the condition cannot be evaluated on the rows', async () => {
      const outcome = await verify(
        { ...rowQuery, successCondition: 'result[0].amount == "12.50"' },
        { refundId: 're_404' },
      );
      expect(outcome.checks[0]).toMatchObject({ status: 'inconclusive', reason: 'CONDITION_ERROR' });
    });
  });

  describe('when a parameter is missing from the proposal', () => {
    it('is inconclusive without querying', async () => {
      const outcome = await verify({
        ...refundRecorded,
        params: [{ from: 'target.id' }, { from: 'params.refund_id' }],
      });
      expect(outcome.checks[0]).toMatchObject({ status: 'inconclusive', reason: 'TEMPLATE_VALUE_MISSING' });
    });
  });

  describe('when values look like SQL', () => {
    it('binds them as values', async () => {
      const outcome = await verify(refundRecorded, { refundId: "re_1' or '1'='1" });
      expect(outcome.checks[0]).toMatchObject({ status: 'fail', observed: { rows: 0 } });
    });
  });

  describe('under the VerifierTester', () => {
    new VerifierTester({ describe, it, observation: { result: { refund_id: 're_1' } } }).run(
      'sql',
      sqlVerifier,
      {
        pass: [
          {
            name: 'a refund row',
            options: refundRecorded,
            get grants() {
              return { sql: ledger };
            },
          },
        ],
        fail: [
          {
            name: 'no refund row',
            options: refundRecorded,
            observation: { result: { refund_id: 're_404' } },
            get grants() {
              return { sql: ledger };
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
          {
            name: 'a slow query',
            reason: 'SOURCE_UNAVAILABLE',
            options: { query: 'select pg_sleep(2)', expect: { op: 'exists' } },
            timeoutMs: 400,
            get grants() {
              return { sql: ledger };
            },
          },
        ],
        invalidOptions: [
          {
            name: 'params that do not match the placeholders',
            options: { query: 'select $1, $2', params: [{ value: 1 }], expect: { op: 'exists' } },
            field: '/options/params',
          },
          {
            name: 'a param that is an object',
            options: { query: 'select $1', params: [{ value: { a: 1 } }], expect: { op: 'exists' } },
            field: '/options/params/0',
          },
          {
            name: 'an unknown expectation',
            options: { query: 'select 1', expect: { op: 'maybe' } },
            field: '/options/expect/op',
          },
          {
            name: 'a row count without bounds',
            options: { query: 'select 1', expect: { op: 'rowCount' } },
            field: '/options/expect',
          },
        ],
      },
    );
  });
});
