import { assertMigrationsCurrent, type Database, migrate, roleStatus } from '@vouch/ledger';
import { ConfigError, type ServeConfig } from '../config';
import type { Logger } from '../logger';

/**
 * Get the database ready to serve. PGlite is embedded and single-user: migrate, as always.
 * Postgres: the service should run as the runtime role, which may read and insert but owns
 * nothing, so it cannot switch the append-only triggers off. So it does not migrate (unless
 * told to, which needs the owner role), refuses a schema that is not current, and refuses a
 * superuser or table owner unless the operator accepts that explicitly, which it logs.
 */
export async function prepareDatabase(
  database: Database,
  config: Pick<ServeConfig, 'allowOwnerRole' | 'allowOwnerRoleBy' | 'migrate'>,
  logger: Logger,
): Promise<void> {
  if (database.kind === 'pglite') {
    await migrate(database);
    return;
  }
  if (config.migrate) await migrate(database);
  await assertMigrationsCurrent(database);
  const status = await roleStatus(database);
  if (!status.superuser && status.ownedTables.length === 0 && status.ownedSchemas.length === 0) return;
  const what = status.superuser
    ? 'is a superuser'
    : status.ownedTables.length > 0
      ? `owns ${status.ownedTables.join(', ')}`
      : `owns schema ${status.ownedSchemas.join(', ')} (the owner of the database owns public), so it can drop the ledger's tables and create them again without their triggers`;
  if (!config.allowOwnerRole) {
    throw new ConfigError(
      `database role ${status.role} ${what}: it could disable the triggers that keep the ledger append-only. Connect as the runtime role (\`vouch migrate --runtime-role vouch_app\` creates it), or accept this with --allow-owner-role / VOUCH_ALLOW_OWNER_ROLE=1`,
    );
  }
  logger.warn('serving as an owner role: the append-only triggers can be disabled by this role', {
    role: status.role,
    superuser: status.superuser,
    owned_tables: status.ownedTables.length,
    owned_schemas: status.ownedSchemas,
    accepted_by: config.allowOwnerRoleBy ?? 'VOUCH_ALLOW_OWNER_ROLE',
  });
}
