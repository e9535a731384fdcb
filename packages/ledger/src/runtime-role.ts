import { sql } from 'drizzle-orm';
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
}

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
  return {
    role: who?.role ?? 'unknown',
    superuser: who?.superuser ?? false,
    ownedTables: owned.map((row) => row.name),
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

/**
 * Create (if missing) and grant the runtime role the service connects as: it may read and
 * insert into every ledger table and read the migration journal, nothing else. No UPDATE,
 * DELETE or TRUNCATE, and it owns no table, so it cannot disable or drop the triggers that
 * keep the tables append-only. Idempotent: run after every migration (`vouch migrate
 * --runtime-role` does), so tables added later are granted too.
 *
 * Run as the owner role, on Postgres only (PGlite is embedded and has one user).
 */
export async function grantRuntimeRole(
  database: Database,
  options: { role: string; password?: string },
): Promise<{ created: boolean }> {
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
  const status = await roleStatus(database);
  if (status.role === role) {
    throw new LedgerError(
      'VALIDATION_FAILED',
      `the runtime role must not be the owner role ${role} that migrates`,
    );
  }
  const name = sql.identifier(role);
  const [exists] = await database.rows<{ present: boolean }>(
    sql`select exists (select 1 from pg_roles where rolname = ${role}) as present`,
  );
  const created = !exists?.present;
  if (created)
    await database.rows(sql`create role ${name} login nosuperuser nocreatedb nocreaterole noinherit`);
  const [existing] = await database.rows<{ superuser: boolean; owns: boolean }>(sql`
    select r.rolsuper as superuser,
           exists (select 1 from pg_class c join pg_namespace n on n.oid = c.relnamespace
                   where n.nspname = 'public' and pg_has_role(r.oid, c.relowner, 'MEMBER')) as owns
    from pg_roles r where r.rolname = ${role}`);
  if (existing?.superuser || existing?.owns) {
    throw new LedgerError(
      'VALIDATION_FAILED',
      `role ${role} is a superuser or owns ledger tables: it cannot be the runtime role`,
    );
  }
  // Role options and passwords are utility statements: no bind parameters, so the literal
  // is quoted here (standard_conforming_strings: only ' needs doubling).
  if (password !== undefined) {
    await database.rows(sql`alter role ${name} with login password ${sql.raw(quoteLiteral(password))}`);
  }
  const [db] = await database.rows<{ name: string }>(sql`select current_database() as name`);
  await database.rows(sql`grant connect on database ${sql.identifier(db!.name)} to ${name}`);
  await database.rows(sql`grant usage on schema public to ${name}`);
  await database.rows(sql`revoke all on all tables in schema public from ${name}`);
  await database.rows(sql`grant select, insert on all tables in schema public to ${name}`);
  // `vouch serve` checks the schema is current before it serves.
  await database.rows(sql`grant usage on schema drizzle to ${name}`);
  await database.rows(sql`revoke all on all tables in schema drizzle from ${name}`);
  await database.rows(sql`grant select on drizzle.__drizzle_migrations to ${name}`);
  return { created };
}

function quoteLiteral(value: string): string {
  if (value.includes('\u0000')) throw new LedgerError('VALIDATION_FAILED', 'a password cannot hold NUL');
  return `'${value.replaceAll("'", "''")}'`;
}
