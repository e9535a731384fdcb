import { parseArgs } from 'node:util';
import {
  checkRuntimeRole,
  type Database,
  grantRuntimeRole,
  migrate,
  migrationStatus,
  type RuntimeRoleOptions,
} from '@vouch/ledger';
import { type DatabaseTarget, databaseTarget, describeTarget } from '../config';
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
  --runtime-password-env VAR   set the role's password from environment variable VAR

Creating the role or setting its password needs CREATEROLE on the owner role; granting an
existing role (the re-run after an upgrade, without --runtime-password-env) does not. Every
check runs before any migration is applied.`;

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
  let target: DatabaseTarget | undefined;
  let database: Database | undefined;
  try {
    target = databaseTarget(io.env, io.cwd);
    const runtime = runtimeRoleOptions(values, io.env);
    if (runtime && target.kind !== 'postgres')
      throw new CliError('--runtime-role is for Postgres (DATABASE_URL): PGlite is embedded and single-user');
    database = await openTarget(target);
    // Everything that can be checked is checked before the schema changes: a run that cannot
    // set the role up leaves the database as it found it.
    if (runtime) await checkRuntimeRole(database, runtime);
    const before = await migrationStatus(database);
    await migrate(database);
    const after = await migrationStatus(database);
    io.out(
      `${describeTarget(target)}: ${after.applied - before.applied} migration(s) applied, ${after.applied} of ${after.expected} in place\n`,
    );
    if (runtime) {
      const { created } = await grantRuntimeRole(database, runtime);
      io.out(`runtime role ${runtime.role} ${created ? 'created and ' : ''}granted SELECT and INSERT only\n`);
    }
    return EXIT.OK;
  } catch (error) {
    io.err(`vouch migrate: ${explainFailure(error, target)}\n`);
    return EXIT.USAGE;
  } finally {
    await database?.close().catch(() => {});
  }
}

/** The runtime role to set up, from the flags: the password's variable must be set when named. */
function runtimeRoleOptions(
  values: { 'runtime-role'?: string; 'runtime-password-env'?: string },
  env: NodeJS.ProcessEnv,
): RuntimeRoleOptions | undefined {
  const role = values['runtime-role'];
  const passwordEnv = values['runtime-password-env'];
  if (role === undefined) {
    if (passwordEnv !== undefined) throw new CliError('--runtime-password-env needs --runtime-role');
    return undefined;
  }
  if (passwordEnv === undefined) return { role };
  const password = env[passwordEnv];
  if (!password) throw new CliError(`--runtime-password-env: ${passwordEnv} is not set`);
  return { role, password };
}
