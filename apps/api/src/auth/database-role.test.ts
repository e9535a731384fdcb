import { randomBytes } from 'node:crypto';
import {
  appendWithFields,
  createLedger,
  createWebhookStore,
  type Database,
  grantRuntimeRole,
  migrate,
  openDatabase,
  redactFields,
  roleStatus,
} from '@vouch/ledger';
import { createTestDatabase } from '@vouch/ledger/testing';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateCommand } from '../cli/migrate';
import { serveCommand } from '../cli/serve';
import { createMemoryLogger } from '../logger';
import { createHarness, type Harness } from '../testing/app-harness';
import { recordingIo, runVouch } from '../testing/cli-io';
import { prepareDatabase } from './database-role';

// The runtime role only exists on a real Postgres: PGlite is embedded and has one user.
const serverUrl = process.env.DATABASE_URL;

describe.runIf(serverUrl)('the runtime role on postgres', () => {
  const role = `vouch_app_${randomBytes(4).toString('hex')}`;
  const password = randomBytes(18).toString('base64url');
  let drop: () => Promise<void>;
  let owner: Database;
  let ownerUrl: string;
  let runtimeUrl: string;
  let runtime: postgres.Sql;
  let tables: string[];

  beforeAll(async () => {
    const created = await createTestDatabase(serverUrl!);
    drop = created.drop;
    ownerUrl = created.url;
    owner = await openDatabase({ url: created.url });
    await migrate(owner);
    await grantRuntimeRole(owner, { role, password });
    // Twice: granting is idempotent.
    expect(await grantRuntimeRole(owner, { role, password })).toEqual({ created: false });
    const url = new URL(created.url);
    url.username = role;
    url.password = password;
    runtimeUrl = url.toString();
    runtime = postgres(runtimeUrl, { max: 1, onnotice: () => {} });
    // Every table of the schema, from the database itself: a table a later migration adds is covered.
    tables = (
      await owner.rows<{ name: string }>(sql`
        select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and c.relkind in ('r', 'p') order by 1`)
    ).map((row) => row.name);
  });
  afterAll(async () => {
    await runtime?.end({ timeout: 5 });
    await owner?.close();
    await drop?.();
    const admin = postgres(serverUrl!, { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop role if exists ${role}`).catch(() => {});
    await admin.end({ timeout: 5 });
  });

  /** The SQLSTATE a statement run as the runtime role fails with ('ok' when it runs). */
  const asRuntime = async (...statements: string[]) => {
    try {
      await runtime.begin(async (tx) => {
        for (const statement of statements) await tx.unsafe(statement);
        // Never keep what a statement that was let through did.
        throw Object.assign(new Error('rolled back'), { code: 'ok' });
      });
    } catch (error) {
      return (error as { code?: string }).code ?? 'unknown';
    }
    return 'unreachable';
  };

  it('knows every ledger table, and the runtime role owns none and is no superuser', async () => {
    expect(tables).toEqual(
      expect.arrayContaining(['audit_events', 'api_keys', 'api_key_revocations', 'proposals']),
    );
    const asApp = await openDatabase({ url: runtimeUrl });
    try {
      expect(await roleStatus(asApp)).toEqual({ role, superuser: false, ownedTables: [], ownedSchemas: [] });
    } finally {
      await asApp.close();
    }
    expect((await roleStatus(owner)).ownedTables).toEqual(tables);
  });

  it('is refused UPDATE, DELETE, TRUNCATE, DISABLE TRIGGER and DROP TRIGGER on every ledger table', async () => {
    for (const table of tables) {
      const triggers = await owner.rows<{ name: string }>(
        sql`select tgname as name from pg_trigger where tgrelid = ${table}::regclass and not tgisinternal`,
      );
      // Each table is append-only in the database itself, so there is a trigger to switch off.
      expect(triggers.length, table).toBeGreaterThan(0);
      const attempts = [
        `update "${table}" set "${await firstColumn(table)}" = "${await firstColumn(table)}"`,
        `delete from "${table}"`,
        `truncate "${table}"`,
        `alter table "${table}" disable trigger all`,
        `alter table "${table}" disable trigger "${triggers[0]!.name}"`,
        `drop trigger "${triggers[0]!.name}" on "${table}"`,
        `drop table "${table}"`,
      ];
      for (const attempt of attempts) {
        // The one DELETE granted: erased field content, which the trigger guards (next test).
        if (table === 'event_fields' && attempt.startsWith('delete')) continue;
        // 42501 insufficient_privilege: refused by the grants, before any trigger runs.
        expect(await asRuntime(attempt), attempt).toBe('42501');
      }
      expect(await asRuntime(`select 1 from "${table}" limit 1`), `select on ${table}`).toBe('ok');
    }
  });

  it('may DELETE field content only under a redaction event naming it', async () => {
    const asApp = await openDatabase({ url: runtimeUrl });
    const ledger = createLedger(asApp);
    try {
      const log = 'runtime-redaction';
      const event = await appendWithFields(ledger, {
        log,
        kind: 'customer.contacted',
        entity: 'cust_1',
        actor: 'gateway:mcp',
        payload: { email: 'ana@example.com', channel: 'email' },
      });
      // Straight DELETEs, as a compromised service would send them: the trigger refuses.
      expect(await asRuntime(`delete from event_fields where log_id = '${log}'`)).toBe('VC001');
      // The email's row, as the service can read it before the erasure.
      const [saved] = await owner.rows<{ salt: string; value: string }>(
        sql`select salt, value from event_fields where log_id = ${log} and name = 'email'`,
      );
      const putBack = `insert into event_fields (log_id, seq, name, salt, value) values ('${log}', ${event.seq}, 'email', '${saved!.salt}', '${saved!.value.replaceAll("'", "''")}')`;
      // The service holds a snapshot from before the erasure (repeatable read) and puts the
      // row back from it once the erasure committed: refused outright.
      await expect(
        runtime.begin('isolation level repeatable read', async (tx) => {
          await tx.unsafe(`select 1 from event_fields where log_id = '${log}'`);
          await redactFields(ledger, {
            log,
            seq: event.seq,
            fields: ['email'],
            reason: 'ticket 1',
            actor: 'user:dpo',
          });
          await tx.unsafe(putBack);
        }),
      ).rejects.toMatchObject({ code: 'VC001' });
      const left = await owner.rows<{ name: string }>(
        sql`select name from event_fields where log_id = ${log} order by name`,
      );
      expect(left.map((row) => row.name)).toEqual(['channel']);
      // The redaction names email only: channel still cannot go.
      expect(await asRuntime(`delete from event_fields where log_id = '${log}'`)).toBe('VC001');
      // Nor at read committed: an erased field stays erased.
      expect(await asRuntime(putBack)).toBe('VC001');
      // The role can append a redaction event in anyone's name, and the trigger then lets the
      // row go; verification lists the erasure and names it for what it is: no redactor key
      // stood behind it (a key is an event of the system log, and issuing one shows there).
      const report = await ledger.verifyChain({ log });
      expect(report).toMatchObject({ ok: false, redactions: [{ seq: event.seq, fields: ['email'] }] });
      expect(report.failures).toMatchObject([
        { code: 'RECORD_RULE_VIOLATION', rule: 'ROLE_FORBIDDEN', table: 'event_fields', target: event.seq },
      ]);
    } finally {
      await ledger.close();
      await asApp.close();
    }
  });

  it("erases nothing under a redaction in the operator CLI's name (system:cli): only the owner role may", async () => {
    const asApp = await openDatabase({ url: runtimeUrl });
    const ledger = createLedger(asApp);
    const log = 'runtime-operator-redaction';
    try {
      const event = await appendWithFields(ledger, {
        log,
        kind: 'customer.contacted',
        entity: 'cust_1',
        actor: 'gateway:mcp',
        payload: { email: 'ana@example.com', channel: 'email' },
      });
      const asOperator = { log, seq: event.seq, fields: ['email'], reason: 'ticket 3', actor: 'system:cli' };
      // In one transaction with its delete, which the trigger refuses: nothing is written.
      const refused = await redactFields(ledger, asOperator).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(Error);
      // Appended on its own, the event is kept, and the row still cannot go.
      await ledger.append({
        log,
        kind: 'event.redacted',
        entity: `event/${event.seq}`,
        actor: 'system:cli',
        payload: { target: { seq: event.seq, hash: event.hash }, fields: ['email'], reason: 'ticket 3' },
      });
      expect(await asRuntime(`delete from event_fields where log_id = '${log}' and name = 'email'`)).toBe(
        'VC001',
      );
      const ownerLedger = createLedger(owner);
      try {
        await redactFields(ownerLedger, { ...asOperator, fields: ['channel'] });
      } finally {
        await ownerLedger.close();
      }
      const left = await owner.rows<{ name: string }>(
        sql`select name from event_fields where log_id = ${log} order by name`,
      );
      expect(left.map((row) => row.name)).toEqual(['email']);
    } finally {
      await ledger.close();
      await asApp.close();
    }
  });

  it('cannot grant itself more, nor set the session to skip triggers', async () => {
    // A GRANT by a non-owner grants nothing (Postgres only warns): the UPDATE after it is still refused.
    expect(
      await asRuntime(`grant update on audit_events to ${role}`, 'update audit_events set kind = kind'),
    ).toBe('42501');
    expect(await asRuntime('set session_replication_role = replica')).toBe('42501');
  });

  it('runs ANALYZE harmlessly (it skips what it does not own)', async () => {
    expect(await asRuntime('analyze')).toBe('ok');
  });

  describe('when the service runs as the runtime role', () => {
    let h: Harness;
    let admin: string;
    beforeAll(async () => {
      const logger = createMemoryLogger();
      h = await createHarness({ open: () => openDatabase({ url: runtimeUrl }), logger });
      await prepareDatabase(h.database, {}, logger);
      expect(logger.lines.filter((line) => line.level !== 'info')).toEqual([]);
      const issued = await h.keys.bootstrapAdmin();
      admin = issued!.secret;
    });
    afterAll(async () => {
      await h?.close();
    });
    const call = async (method: string, path: string, key: string, body?: unknown) => {
      const response = await h.call(method, path, { key, ...(body === undefined ? {} : { body }) });
      return { status: response.status, body: (await response.json()) as Record<string, never> };
    };
    const issue = async (identity: string, roles: string[]) => {
      const { status, body } = await call('POST', '/v1/keys', admin, { identity, roles });
      expect(status).toBe(201);
      return (body as unknown as { secret: string }).secret;
    };

    it('proposes, decides, approves, observes, verifies and verifies the chain', async () => {
      const gateway = await issue('agent:gw', ['gateway']);
      const approver = await issue('user:alice', ['approver']);
      const auditor = await issue('user:audrey', ['auditor']);
      expect(
        (
          await call('POST', '/v1/tools', admin, {
            server_id: 'pay',
            tool_name: 'refund',
            side_effect: 'compensatable',
            approval_required: true,
          })
        ).status,
      ).toBe(201);
      const proposed = await call('POST', '/v1/proposals', gateway, {
        idempotency_key: 'k-1',
        action: 'pay.refund',
        server_id: 'pay',
        tool_name: 'refund',
        target: { kind: 'account', id: 'acct-1', env: 'production' },
        arguments: { amount: 5 },
        side_effect: 'compensatable',
        postconditions: [{ name: 'refund.recorded' }],
      });
      expect(proposed.status).toBe(201);
      const body = proposed.body as unknown as {
        proposal: { id: string };
        decision: { verdict: string };
        approval: { id: string };
      };
      expect(body.decision.verdict).toBe('require_approval');
      expect((await call('POST', `/v1/approvals/${body.approval.id}/approve`, approver)).status).toBe(200);
      // As the runtime role: authorize reads the approver's keys (a revoked one voids the approval).
      expect((await call('POST', `/v1/proposals/${body.proposal.id}/authorize`, gateway)).status).toBe(200);
      const observed = await call('POST', '/v1/observations', gateway, {
        proposal_id: body.proposal.id,
        outcome: 'succeeded',
        result: { refunded: 5 },
      });
      expect(observed.status).toBe(201);
      const observationId = (observed.body as unknown as { observation: { id: string } }).observation.id;
      const verified = await call('POST', `/v1/observations/${observationId}/verify`, gateway);
      expect(verified.status).toBeLessThan(300);
      for (const log of ['default', 'system']) {
        const chain = await call('GET', `/v1/logs/${log}/verify`, auditor);
        expect(chain, log).toMatchObject({ status: 200, body: { ok: true } });
      }
      const revoked = await call('POST', `/v1/keys/${await keyIdOf('user:audrey')}/revoke`, admin);
      expect(revoked.status).toBe(200);
      expect((await h.call('GET', '/v1/logs/system/verify', { key: auditor })).status).toBe(401);
      // Every key event so far is the bootstrap's or the admin's over HTTP: all accepted.
      const ownerLedger = createLedger(owner);
      try {
        expect((await ownerLedger.verifyChain({ log: 'system' })).failures).toEqual([]);
      } finally {
        await ownerLedger.close();
      }
    });

    it('vouch keys (the operator, system:cli) writes the system log as the owner role only', async () => {
      const keys = (url: string, ...argv: string[]) =>
        runVouch(['keys', ...argv], { env: { DATABASE_URL: url }, cwd: process.cwd() });
      const refused = await keys(runtimeUrl, 'create', '--identity', 'user:ops', '--role', 'admin');
      expect(refused.code, refused.err).not.toBe(0);
      expect(refused.err).toContain('system:cli');
      expect(refused.out).toBe('');
      const created = await keys(ownerUrl, 'create', '--identity', 'user:ops', '--role', 'admin', '--json');
      expect(created.code, created.err).toBe(0);
      const { key } = JSON.parse(created.out) as { key: { id: string } };
      expect((await keys(runtimeUrl, 'revoke', key.id)).code).not.toBe(0);
      expect((await keys(ownerUrl, 'rotate', key.id, '--grace', '15m')).code).toBe(0);
      const ownerLedger = createLedger(owner);
      try {
        expect((await ownerLedger.verifyChain({ log: 'system' })).failures).toEqual([]);
      } finally {
        await ownerLedger.close();
      }
    });

    it('runs the webhook dispatcher’s store with SELECT and INSERT alone (its tables are append-only too)', async () => {
      const store = createWebhookStore(h.database);
      const now = new Date().toISOString();
      await store.start(now);
      // The first start reads every existing log from its head: nothing to notify yet.
      expect(await store.readAfterCursors({ kinds: ['approval_request'], limit: 10 })).toEqual([]);
      await store.advance({
        log: 'default',
        throughSeq: 1,
        now,
        deliveries: [
          {
            id: 'whd_role',
            target: 'ops',
            event: 'approval.requested',
            log: 'default',
            seq: 1,
            subject: 's',
            body: '{}',
            dueAt: now,
          },
        ],
      });
      const [claimed] = await store.claimDue({
        now,
        leaseUntil: now,
        longestLease: now,
        latestRetry: now,
        limit: 10,
      });
      expect(claimed).toMatchObject({ id: 'whd_role', attempt: 1 });
      await store.finish('whd_role', 1, {
        outcome: 'delivered',
        statusCode: 204,
        errorCode: null,
        durationMs: 1,
        finishedAt: now,
        nextAttemptAt: null,
      });
      expect((await store.listDeliveries({ logs: null, limit: 10 })).deliveries[0]?.status).toBe('delivered');
    });

    const keyIdOf = async (identity: string) => {
      const { body } = await call('GET', '/v1/keys', admin);
      return (body as unknown as { keys: Array<{ id: string; identity: string }> }).keys.find(
        (k) => k.identity === identity,
      )!.id;
    };
  });

  describe('when vouch serve would run as the owner role', () => {
    it('refuses unless the operator accepts it, and then logs that it runs as an owner', async () => {
      const logger = createMemoryLogger();
      await expect(prepareDatabase(owner, {}, logger)).rejects.toMatchObject({ name: 'ConfigError' });
      await prepareDatabase(owner, { allowOwnerRole: true }, logger);
      expect(logger.lines).toContainEqual(
        expect.objectContaining({ level: 'warn', role: expect.any(String) }),
      );
    });

    it('refuses a role that owns no table but owns the database, and so schema public', async () => {
      // The helper's setup gone wrong: the database made with the service's role as its owner.
      // On Postgres 15 that role owns public (through pg_database_owner), and a schema's owner
      // may drop the ledger's tables and create them again without their triggers.
      const dbOwner = `vouch_dbo_${randomBytes(4).toString('hex')}`;
      const name = `vouch_dbo_${randomBytes(4).toString('hex')}`;
      const rolePassword = randomBytes(18).toString('base64url');
      const admin = postgres(serverUrl!, { max: 1, onnotice: () => {} });
      await admin.unsafe(`create role ${dbOwner} login password '${rolePassword}'`);
      await admin.unsafe(`create database ${name} owner ${dbOwner}`);
      const url = new URL(serverUrl!);
      url.pathname = `/${name}`;
      const migrator = await openDatabase({ url: url.toString() });
      url.username = dbOwner;
      url.password = rolePassword;
      let asApp: Database | undefined;
      try {
        await migrate(migrator);
        await expect(grantRuntimeRole(migrator, { role: dbOwner })).rejects.toMatchObject({
          code: 'VALIDATION_FAILED',
          message: expect.stringContaining('schema'),
        });
        // Granted by hand what the runtime role holds, as a setup that skipped the check would.
        for (const grant of [
          `grant usage on schema drizzle to ${dbOwner}`,
          `grant select on drizzle.__drizzle_migrations to ${dbOwner}`,
          `grant select, insert on all tables in schema public to ${dbOwner}`,
        ]) {
          await migrator.rows(sql.raw(grant));
        }
        asApp = await openDatabase({ url: url.toString() });
        expect(await roleStatus(asApp)).toEqual({
          role: dbOwner,
          superuser: false,
          ownedTables: [],
          ownedSchemas: ['public'],
        });
        await expect(prepareDatabase(asApp, {}, createMemoryLogger())).rejects.toMatchObject({
          name: 'ConfigError',
          message: expect.stringContaining('owns schema public'),
        });
      } finally {
        await asApp?.close();
        await migrator.close();
        await admin.unsafe(`drop database if exists ${name} with (force)`);
        await admin.unsafe(`drop role if exists ${dbOwner}`);
        await admin.end({ timeout: 5 });
      }
    });

    it('refuses a schema that is not current, naming vouch migrate', async () => {
      const created = await createTestDatabase(serverUrl!);
      const empty = await openDatabase({ url: created.url });
      try {
        await expect(
          prepareDatabase(empty, { allowOwnerRole: true }, createMemoryLogger()),
        ).rejects.toMatchObject({
          code: 'MIGRATIONS_PENDING',
          message: expect.stringContaining('vouch migrate'),
        });
      } finally {
        await empty.close();
        await created.drop();
      }
    });
  });

  describe('when the operator sets it up with the CLI', () => {
    const cli = (env: NodeJS.ProcessEnv) =>
      recordingIo({ env, cwd: process.cwd(), stop: Promise.resolve('SIGTERM') });
    const cliRole = `${role}_cli`;
    let url: string;
    let dropCli: () => Promise<void>;
    beforeAll(async () => {
      const created = await createTestDatabase(serverUrl!);
      url = created.url;
      dropCli = created.drop;
    });
    afterAll(async () => {
      await dropCli?.();
      const admin = postgres(serverUrl!, { max: 1, onnotice: () => {} });
      await admin.unsafe(`drop role if exists ${cliRole}`).catch(() => {});
      await admin.end({ timeout: 5 });
    });

    it('vouch serve refuses a database that was never migrated, naming vouch migrate', async () => {
      const run = cli({ DATABASE_URL: url, PORT: '0' });
      expect(await serveCommand.run([], run.io)).toBe(2);
      expect(run.err()).toMatch(/MIGRATIONS_PENDING.*vouch migrate/);
    });

    it('vouch migrate --runtime-role creates and grants the role, idempotently; serve then refuses the owner', async () => {
      for (const pass of [1, 2]) {
        const run = cli({ DATABASE_URL: url, VOUCH_APP_PASSWORD: password });
        expect(
          await migrateCommand.run(
            ['--runtime-role', cliRole, '--runtime-password-env', 'VOUCH_APP_PASSWORD'],
            run.io,
          ),
        ).toBe(0);
        expect(run.out()).toMatch(
          pass === 1 ? /created and granted/ : new RegExp(`runtime role ${cliRole} granted`),
        );
        expect(run.out() + run.err()).not.toContain(password);
      }
      const asApp = new URL(url);
      asApp.username = cliRole;
      asApp.password = password;
      const app = await openDatabase({ url: asApp.toString() });
      try {
        expect(await roleStatus(app)).toMatchObject({
          role: cliRole,
          superuser: false,
          ownedTables: [],
          ownedSchemas: [],
        });
      } finally {
        await app.close();
      }
      const owned = cli({ DATABASE_URL: url, PORT: '0' });
      expect(await serveCommand.run([], owned.io)).toBe(2);
      expect(owned.err()).toMatch(/is a superuser|owns/);
      expect(owned.err()).toContain('--allow-owner-role');
    });

    it('serve --allow-owner-role logs that the flag accepted the owner role', async () => {
      for (const [args, env, by] of [
        [['--allow-owner-role'], {}, '--allow-owner-role'],
        [[], { VOUCH_ALLOW_OWNER_ROLE: '1' }, 'VOUCH_ALLOW_OWNER_ROLE'],
      ] as const) {
        const run = cli({ DATABASE_URL: url, PORT: '0', VOUCH_ADMIN_KEY: `vch_${'k'.repeat(40)}`, ...env });
        expect(await serveCommand.run([...args], run.io), run.err()).toBe(0);
        const warning = run
          .out()
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as Record<string, unknown>)
          .find((line) => line.level === 'warn' && 'accepted_by' in line);
        expect(warning?.accepted_by).toBe(by);
      }
    });
  });

  describe('when a role statement is refused', () => {
    const replicator = `${role}_repl`;
    beforeAll(async () => {
      const admin = postgres(serverUrl!, { max: 1, onnotice: () => {} });
      // Only a superuser may alter a REPLICATION role: the ALTER ROLE … PASSWORD statement fails.
      await admin.unsafe(`create role ${replicator} login replication`);
      await admin.end({ timeout: 5 });
    });
    afterAll(async () => {
      const admin = postgres(serverUrl!, { max: 1, onnotice: () => {} });
      await admin.unsafe(`drop role if exists ${replicator}`).catch(() => {});
      await admin.end({ timeout: 5 });
    });

    it('throws the SQLSTATE and reason, with neither the statement nor the password in it or its cause', async () => {
      const restricted = `${role}_own`;
      const admin = postgres(serverUrl!, { max: 1, onnotice: () => {} });
      await admin.unsafe(`create role ${restricted} createrole`);
      try {
        const error = await owner.db
          .transaction(async (tx) => {
            await owner.rows(sql`set local role ${sql.identifier(restricted)}`, tx);
            // grantRuntimeRole runs on the pool: pin it to this transaction's connection.
            await grantRuntimeRole(
              { ...owner, rows: (query) => owner.rows(query, tx) },
              { role: replicator, password },
            );
          })
          .then(
            () => undefined,
            (caught: unknown) => caught,
          );
        expect(error).toMatchObject({
          name: 'LedgerError',
          code: 'DATABASE_PERMISSION_DENIED',
          details: { sqlstate: '42501' },
        });
        const everything = JSON.stringify(error, Object.getOwnPropertyNames(error as object));
        expect(everything).not.toContain(password);
        expect(everything).not.toMatch(/alter role|Failed query/i);
        expect((error as Error).cause).toBeUndefined();
      } finally {
        await admin.unsafe(`drop role if exists ${restricted}`).catch(() => {});
        await admin.end({ timeout: 5 });
      }
    });
  });

  async function firstColumn(table: string): Promise<string> {
    const [row] = await owner.rows<{ name: string }>(sql`
      select column_name as name from information_schema.columns
      where table_schema = 'public' and table_name = ${table} and is_generated = 'NEVER'
      order by ordinal_position limit 1`);
    return row!.name;
  }
});
