import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runVouchWithEnv } from './helpers/server';

// What an operator outside the project hit following apps/api/README.md's "Postgres: two
// database roles" (issue 12), replayed with the real `vouch` binary against a real Postgres:
// an owner role made the way the README says, without CREATEROLE first.
const serverUrl = process.env.DATABASE_URL;

describe.runIf(serverUrl)('vouch migrate and serve with two database roles on postgres', () => {
  const tag = randomBytes(4).toString('hex');
  const owner = `vouch_owner_${tag}`;
  const app = `vouch_app_${tag}`;
  const replicator = `vouch_repl_${tag}`;
  const databaseName = `vouch_ops_${tag}`;
  const password = `pw-${randomBytes(12).toString('hex')}`;
  let admin: postgres.Sql;
  let dir: string;
  const urlAs = (role: string) => {
    const url = new URL(serverUrl!);
    url.username = role;
    url.password = '';
    url.pathname = `/${databaseName}`;
    return url.toString();
  };
  const vouch = (args: string[], role: string, env: NodeJS.ProcessEnv = {}) =>
    runVouchWithEnv(args, { DATABASE_URL: urlAs(role), ...env }, dir);
  const ledgerTables = async () => {
    const inDb = postgres(urlAs('postgres'), { max: 1, onnotice: () => {} });
    try {
      const [row] = await inDb<
        [{ n: number }]
      >`select count(*)::int as n from pg_tables where schemaname = 'public'`;
      return row!.n;
    } finally {
      await inDb.end({ timeout: 5 });
    }
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vouch-ops-'));
    admin = postgres(serverUrl!, { max: 1, onnotice: () => {} });
    // The owner as an operator first makes it: a plain login role that owns the database.
    await admin.unsafe(`create role ${owner} login`);
    await admin.unsafe(`create database ${databaseName} owner ${owner}`);
  });
  afterAll(async () => {
    await admin.unsafe(`drop database if exists ${databaseName} with (force)`).catch(() => {});
    for (const role of [app, replicator, owner])
      await admin.unsafe(`drop role if exists ${role}`).catch(() => {});
    await admin.end({ timeout: 5 });
    rmSync(dir, { recursive: true, force: true });
  });

  describe('when the owner role has no CREATEROLE', () => {
    it('refuses to create the runtime role before applying any migration, saying what to grant', async () => {
      const run = await vouch(
        ['migrate', '--runtime-role', app, '--runtime-password-env', 'VOUCH_APP_PASSWORD'],
        owner,
        { VOUCH_APP_PASSWORD: password },
      );
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('DATABASE_PERMISSION_DENIED');
      expect(run.stderr).toContain('CREATEROLE');
      expect(run.stderr).not.toContain('Failed query');
      expect(run.stderr + run.stdout).not.toContain(password);
      expect(await ledgerTables()).toBe(0);
    });

    it('refuses an unset password variable before applying any migration', async () => {
      const run = await vouch(
        ['migrate', '--runtime-role', app, '--runtime-password-env', 'VOUCH_APP_PASSWORD'],
        owner,
      );
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('VOUCH_APP_PASSWORD is not set');
      expect(await ledgerTables()).toBe(0);
    });

    it('grants a runtime role a superuser created, without a password, needing no CREATEROLE', async () => {
      await admin.unsafe(`create role ${app} login password '${password}'`);
      const run = await vouch(['migrate', '--runtime-role', app], owner);
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`runtime role ${app} granted SELECT and INSERT only`);
      expect(await ledgerTables()).toBeGreaterThan(0);
    });
  });

  describe('when serve --migrate runs as the runtime role', () => {
    it('says the role lacks the privilege, not that the database is unreachable', async () => {
      const run = await vouch(['serve', '--migrate', '--port', '0'], app);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('SQLSTATE 42501');
      expect(run.stderr).toContain('owner role');
      expect(run.stderr).not.toContain('Check DATABASE_URL');
      expect(run.stderr).not.toContain('Failed query');
    });
  });

  describe('when the statement that sets the password fails', () => {
    it('prints the Postgres reason and never the password', async () => {
      await admin.unsafe(`alter role ${owner} createrole`);
      // Only a superuser may alter a REPLICATION role: CREATEROLE passes the check before
      // migrating, and then the ALTER ROLE … PASSWORD statement itself is refused.
      await admin.unsafe(`create role ${replicator} login replication`);
      const run = await vouch(
        ['migrate', '--runtime-role', replicator, '--runtime-password-env', 'VOUCH_APP_PASSWORD'],
        owner,
        { VOUCH_APP_PASSWORD: password },
      );
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('SQLSTATE 42501');
      expect(run.stderr).toContain('superuser');
      expect(run.stderr + run.stdout).not.toContain(password);
      expect(run.stderr).not.toMatch(/Failed query|params:|alter role/i);
    });
  });
});
