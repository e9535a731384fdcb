import { parseArgs } from 'node:util';
import { type Database, grantRuntimeRole, migrate, migrationStatus } from '@vouch/ledger';
import { databaseTarget, describeTarget } from '../config';
import { openTarget } from '../open-target';
import { explainFailure } from './errors';
import { CliError, type CliIo, EXIT } from './io';

export const MIGRATE_USAGE = `vouch migrate [--runtime-role NAME [--runtime-password-env VAR]]

Apply every pending migration to DATABASE_URL (Postgres) or the PGlite data directory
VOUCH_DATA_DIR (default ./.vouch/data). Safe to run while other instances start.

On Postgres, run it as the owner role (the one that owns the tables), and let \`vouch serve\`
connect as a runtime role that may only read and insert:

  --runtime-role NAME          create the role if missing (LOGIN, no superuser) and grant it
                               SELECT and INSERT on every ledger table, nothing else; run
                               again after every upgrade, so new tables are granted too
  --runtime-password-env VAR   set the role's password from environment variable VAR`;

/** `vouch migrate`: exit 0 when the schema is current, 2 otherwise. */
export async function runMigrate(args: string[], io: CliIo): Promise<number> {
  let values: { help?: boolean; 'runtime-role'?: string; 'runtime-password-env'?: string };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        help: { type: 'boolean', short: 'h' },
        'runtime-role': { type: 'string' },
        'runtime-password-env': { type: 'string' },
      },
      strict: true,
    }));
    if (values.help) {
      io.out(`${MIGRATE_USAGE}\n`);
      return EXIT.OK;
    }
  } catch (error) {
    io.err(`vouch migrate: ${(error as Error).message}\n\n${MIGRATE_USAGE}\n`);
    return EXIT.USAGE;
  }
  const target = databaseTarget(io.env, io.cwd);
  let database: Database | undefined;
  try {
    database = await openTarget(target);
    const before = await migrationStatus(database);
    await migrate(database);
    const after = await migrationStatus(database);
    io.out(
      `${describeTarget(target)}: ${after.applied - before.applied} migration(s) applied, ${after.applied} of ${after.expected} in place\n`,
    );
    const role = values['runtime-role'];
    if (role !== undefined) {
      const passwordEnv = values['runtime-password-env'];
      const password = passwordEnv === undefined ? undefined : io.env[passwordEnv];
      if (passwordEnv !== undefined && !password)
        throw new CliError(`--runtime-password-env: ${passwordEnv} is not set`);
      const { created } = await grantRuntimeRole(database, { role, ...(password ? { password } : {}) });
      io.out(`runtime role ${role} ${created ? 'created and ' : ''}granted SELECT and INSERT only\n`);
    } else if (values['runtime-password-env'] !== undefined) {
      throw new CliError('--runtime-password-env needs --runtime-role');
    }
    return EXIT.OK;
  } catch (error) {
    io.err(`vouch migrate: ${explainFailure(error, target)}\n`);
    return EXIT.USAGE;
  } finally {
    await database?.close().catch(() => {});
  }
}
