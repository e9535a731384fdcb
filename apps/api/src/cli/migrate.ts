import {
  checkRuntimeRole,
  type Database,
  grantRuntimeRole,
  migrate,
  migrationStatus,
  type RuntimeRoleOptions,
  unprovenKeyIds,
} from '@vouch/ledger';
import { databaseTarget, describeTarget } from '../config';
import { openTarget } from '../open-target';
import { defineCommand } from './command';
import { CliError, EXIT } from './io';

/** `vouch migrate`: exit 0 when the schema is current, 2 otherwise. */
export const migrateCommand = defineCommand({
  name: 'vouch migrate',
  synopsis: 'vouch migrate [--runtime-role NAME [--runtime-password-env VAR]]',
  description: `Apply every pending migration to DATABASE_URL (Postgres) or the PGlite data directory
VOUCH_DATA_DIR (default ./.vouch/data). Safe to run while other instances start.

On Postgres, run it as the owner role (the one that owns the tables), and let \`vouch serve\`
connect as a runtime role that may only read and insert:`,
  options: {
    'runtime-role': {
      type: 'string',
      value: 'NAME',
      help: 'create the role if missing (LOGIN, no superuser) and grant it\nSELECT and INSERT on every ledger table, nothing else; run\nagain after every upgrade, so new tables are granted too',
    },
    'runtime-password-env': {
      type: 'string',
      value: 'VAR',
      help: "set the role's password from environment variable VAR",
    },
  },
  footer: `Creating the role or setting its password needs CREATEROLE on the owner role; granting an
existing role (the re-run after an upgrade, without --runtime-password-env) does not. Every
check runs before any migration is applied.`,
  async action({ values }, io) {
    const target = databaseTarget(io.env, io.cwd);
    const runtime = runtimeRoleOptions(values, io.env);
    if (runtime && target.kind !== 'postgres')
      throw new CliError('--runtime-role is for Postgres (DATABASE_URL): PGlite is embedded and single-user');
    let database: Database | undefined;
    try {
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
        io.out(
          `runtime role ${runtime.role} ${created ? 'created and ' : ''}granted SELECT and INSERT only\n`,
        );
      }
      const unproven = await unprovenKeyIds(database);
      if (unproven.length > 0) {
        // The next step of an upgrade from before migration 0005 (docs/operations.md, Upgrading).
        io.err(
          `${unproven.length} API key(s) were issued before events committed to the key hash: \`vouch verify\` reports each KEY_UNPROVEN until you run \`vouch keys adopt\`\n`,
        );
      }
      return EXIT.OK;
    } finally {
      await database?.close().catch(() => {});
    }
  },
});

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
