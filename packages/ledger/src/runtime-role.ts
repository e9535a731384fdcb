import { type SQL, sql } from 'drizzle-orm';
import type { Database } from './database';
import { LedgerError } from './errors';
import { migrationStatus } from './migrate';

/** A role name Vouch will put into DDL: plain lower-case identifiers only, nothing to quote. */
const ROLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Who the database session runs as, and what that role could do to the ledger's guards. */
export interface RoleStatus {
  role: string;
  superuser: boolean;
  /** Ledger tables this role owns (or owns through membership): it could disable their triggers. */
  ownedTables: string[];
  /**
   * The ledger's schemas (`public`, `drizzle`) this role owns, directly or through membership:
   * the owner of a schema may drop its tables and create them again without triggers. A
   * database's owner owns `public` this way on Postgres 15 (through `pg_database_owner`).
   */
  ownedSchemas: string[];
}

/** The schemas whose owner could drop and recreate the ledger's tables or its migration journal. */
const LEDGER_SCHEMAS = ['public', 'drizzle'];

/**
 * The current role, whether it is a superuser, and which tables of the `public` schema it
 * owns directly or through a role it is a member of. Either is enough to switch the
 * append-only triggers off (`ALTER TABLE … DISABLE TRIGGER`) and then rewrite history.
 */
export async function roleStatus(database: Database): Promise<RoleStatus> {
  const [who] = await database.rows<{ role: string; superuser: boolean }>(
    sql`select current_user as role, rolsuper as superuser from pg_roles where rolname = current_user`,
  );
  const owned = await database.rows<{ name: string }>(sql`
    select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind in ('r', 'p')
      and pg_has_role(current_user, c.relowner, 'MEMBER')
    order by 1`);
  const schemas = await database.rows<{ name: string }>(sql`
    select nspname as name from pg_namespace
    where nspname = any(${sql.param(LEDGER_SCHEMAS)}::text[]) and pg_has_role(current_user, nspowner, 'MEMBER')
    order by 1`);
  return {
    role: who?.role ?? 'unknown',
    superuser: who?.superuser ?? false,
    ownedTables: owned.map((row) => row.name),
    ownedSchemas: schemas.map((row) => row.name),
  };
}

/** Refuse (`MIGRATIONS_PENDING`) a database whose schema is not the one this code ships. */
export async function assertMigrationsCurrent(database: Database): Promise<void> {
  const { applied, expected } = await migrationStatus(database);
  if (applied !== expected) {
    throw new LedgerError(
      'MIGRATIONS_PENDING',
      `${database.location} has ${applied} of ${expected} migrations: run \`vouch migrate\` as the owner role first`,
      { details: { applied, expected } },
    );
  }
}

/** What {@link grantRuntimeRole} is asked to do. */
export interface RuntimeRoleOptions {
  /** The role `vouch serve` connects as: lower-case letters, digits and `_`. */
  role: string;
  /** Set as the role's password: when it is created, or (given again) to change it. */
  password?: string;
}

/**
 * Check, without changing anything, that {@link grantRuntimeRole} can do its work as the
 * current role: the name is usable, it is not the current role, an existing role of that name
 * is no superuser and owns no table, and creating the role or setting its password has the
 * CREATEROLE it needs. `vouch migrate` runs it before it applies migrations, so a setup that
 * cannot finish fails before it has changed the schema.
 *
 * Throws `VALIDATION_FAILED` for a name or role that cannot be the runtime role, and
 * `DATABASE_PERMISSION_DENIED` when the current role may not create roles or set passwords.
 */
export async function checkRuntimeRole(
  database: Database,
  options: RuntimeRoleOptions,
): Promise<{ exists: boolean }> {
  const { role, password } = options;
  if (database.kind !== 'postgres') {
    throw new LedgerError(
      'VALIDATION_FAILED',
      'a runtime role is for Postgres: PGlite is embedded and single-user',
    );
  }
  if (!ROLE_NAME.test(role)) {
    throw new LedgerError(
      'VALIDATION_FAILED',
      `runtime role ${role}: use a lower-case name of letters, digits and _`,
    );
  }
  if (password?.includes('\u0000')) throw new LedgerError('VALIDATION_FAILED', 'a password cannot hold NUL');
  const [me] = await database.rows<{ role: string; superuser: boolean; createrole: boolean }>(sql`
    select current_user as role, rolsuper as superuser, rolcreaterole as createrole
    from pg_roles where rolname = current_user`);
  if (me?.role === role) {
    throw new LedgerError(
      'VALIDATION_FAILED',
      `the runtime role must not be the owner role ${role} that migrates`,
    );
  }
  const [target] = await database.rows<{ superuser: boolean; owns: boolean }>(sql`
    select r.rolsuper as superuser,
           exists (select 1 from pg_class c join pg_namespace n on n.oid = c.relnamespace
                   where n.nspname = 'public' and pg_has_role(r.oid, c.relowner, 'MEMBER'))
           or exists (select 1 from pg_namespace n
                   where n.nspname = any(${sql.param(LEDGER_SCHEMAS)}::text[])
                     and pg_has_role(r.oid, n.nspowner, 'MEMBER')) as owns
    from pg_roles r where r.rolname = ${role}`);
  if (target?.superuser || target?.owns) {
    throw new LedgerError(
      'VALIDATION_FAILED',
      `role ${role} is a superuser or owns ledger tables or their schema (the owner of the database owns schema public): it cannot be the runtime role`,
    );
  }
  const exists = target !== undefined;
  const needs = !exists
    ? `creating role ${role}`
    : password !== undefined
      ? `setting the password of ${role}`
      : undefined;
  if (needs && !me?.superuser && !me?.createrole) {
    throw new LedgerError(
      'DATABASE_PERMISSION_DENIED',
      `${needs} needs CREATEROLE, which role ${me?.role ?? 'unknown'} lacks. Either grant it (as a superuser: ALTER ROLE ${me?.role ?? 'owner'} CREATEROLE), or have a superuser create the role (CREATE ROLE ${role} LOGIN PASSWORD '…') and run again without --runtime-password-env`,
      { details: { role, sqlstate: '42501' } },
    );
  }
  return { exists };
}

/**
 * Create (if missing) and grant the runtime role the service connects as: it may read and
 * insert into every ledger table and read the migration journal, nothing else. No UPDATE,
 * DELETE (but erased field content, under its redaction event) or TRUNCATE, and it owns no table, so it cannot disable or drop the triggers that
 * keep the tables append-only. Idempotent: run after every migration (`vouch migrate
 * --runtime-role` does), so tables added later are granted too. Granting an existing role
 * without a password needs no CREATEROLE.
 *
 * Run as the owner role, on Postgres only (PGlite is embedded and has one user). A statement
 * that fails becomes a `LedgerError` with the Postgres reason and SQLSTATE, never the
 * statement itself: one of them carries the password.
 */
export async function grantRuntimeRole(
  database: Database,
  options: RuntimeRoleOptions,
): Promise<{ created: boolean }> {
  const { role, password } = options;
  const { exists } = await checkRuntimeRole(database, options);
  const name = sql.identifier(role);
  // Role options and passwords are utility statements: no bind parameters, so the literal
  // is quoted here (standard_conforming_strings: only ' needs doubling).
  const withPassword = password === undefined ? sql`` : sql` password ${sql.raw(quoteLiteral(password))}`;
  if (!exists) {
    await run(
      database,
      sql`create role ${name} login nosuperuser nocreatedb nocreaterole noinherit${withPassword}`,
      {
        doing: `creating role ${role}`,
        deniedHint: ROLE_HINT,
        ...(password === undefined ? {} : { secret: password }),
      },
    );
  } else if (password !== undefined) {
    await run(database, sql`alter role ${name} with login${withPassword}`, {
      doing: `setting the password of ${role}`,
      deniedHint: ROLE_HINT,
      secret: password,
    });
  }
  const [db] = await database.rows<{ name: string }>(sql`select current_database() as name`);
  const grants = [
    sql`grant connect on database ${sql.identifier(db!.name)} to ${name}`,
    sql`grant usage on schema public to ${name}`,
    sql`revoke all on all tables in schema public from ${name}`,
    sql`grant select, insert on all tables in schema public to ${name}`,
    // The one DELETE it holds: erasing a field's content, which the table's trigger allows
    // only under an `event.redacted` event naming that field (migration 0011).
    sql`grant delete on event_fields to ${name}`,
    // `vouch serve` checks the schema is current before it serves.
    sql`grant usage on schema drizzle to ${name}`,
    sql`revoke all on all tables in schema drizzle from ${name}`,
    sql`grant select on drizzle.__drizzle_migrations to ${name}`,
  ];
  for (const grant of grants) {
    await run(database, grant, {
      doing: `granting ${role}`,
      deniedHint: 'Run `vouch migrate` as the role that owns the database and the ledger tables',
    });
  }
  return { created: !exists };
}

const ROLE_HINT =
  'Have a superuser create the role or set its password (CREATE ROLE … LOGIN PASSWORD …), then run again without --runtime-password-env: granting an existing role needs no CREATEROLE';

/**
 * Run one role statement; on failure throw the Postgres reason and SQLSTATE without the
 * statement or the driver's error as cause (drizzle's message quotes the statement, and a
 * password is part of the statement text, not a parameter).
 */
async function run(
  database: Database,
  statement: SQL,
  step: { doing: string; deniedHint: string; secret?: string },
): Promise<void> {
  const { doing, deniedHint, secret } = step;
  try {
    await database.rows(statement);
  } catch (error) {
    const reason = postgresReason(error);
    const message = secret === undefined ? reason.message : reason.message.replaceAll(secret, '[redacted]');
    const denied = reason.sqlstate === '42501';
    throw new LedgerError(
      denied ? 'DATABASE_PERMISSION_DENIED' : 'DATABASE_UNAVAILABLE',
      `${doing} failed: ${message}${reason.sqlstate ? ` (SQLSTATE ${reason.sqlstate})` : ''}${
        denied ? `. ${deniedHint}` : ''
      }`,
      { details: { ...(reason.sqlstate ? { sqlstate: reason.sqlstate } : {}) } },
    );
  }
}

/**
 * The server's own reason in an error's cause chain: the first error with a SQLSTATE. With
 * none (a lost connection), a fixed sentence: the wrapper's message quotes the statement.
 */
export function postgresReason(error: unknown): { sqlstate?: string; message: string } {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) {
      // Data exceptions (class 22) quote the offending value.
      return { sqlstate: code, message: code.startsWith('22') ? 'data exception' : e.message };
    }
  }
  return { message: 'the statement did not complete (no reason from the server)' };
}

function quoteLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}
