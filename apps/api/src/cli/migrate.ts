import { parseArgs } from 'node:util';
import { type Database, migrate, migrationStatus } from '@vouch/ledger';
import { databaseTarget, describeTarget } from '../config';
import { openTarget } from '../open-target';
import { explainFailure } from './errors';
import { type CliIo, EXIT } from './io';

export const MIGRATE_USAGE = `vouch migrate

Apply every pending migration to DATABASE_URL (Postgres) or the PGlite data directory
VOUCH_DATA_DIR (default ./.vouch/data). Safe to run while other instances start.`;

/** `vouch migrate`: exit 0 when the schema is current, 2 otherwise. */
export async function runMigrate(args: string[], io: CliIo): Promise<number> {
  try {
    const { values } = parseArgs({ args, options: { help: { type: 'boolean', short: 'h' } }, strict: true });
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
    return EXIT.OK;
  } catch (error) {
    io.err(`vouch migrate: ${explainFailure(error, target)}\n`);
    return EXIT.USAGE;
  } finally {
    await database?.close().catch(() => {});
  }
}
