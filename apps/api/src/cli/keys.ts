import { parseArgs } from 'node:util';
import { createLedger, migrationStatus } from '@vouch/ledger';
import { createKeyStore, type StoredApiKey } from '../auth/key-store';
import { isRole, ROLES, type Role } from '../auth/roles';
import { databaseTarget, describeTarget } from '../config';
import { openTarget } from '../open-target';
import { keyView } from '../routes/keys';
import { CreateKeyBodySchema } from '../schemas/keys';
import { explainFailure } from './errors';
import { CliError, type CliIo, EXIT } from './io';
import { runLogKeyCommand } from './keys-log';

export const KEYS_USAGE = `vouch keys create --identity ID --role ROLE [--role ROLE…] [--scope S…] [--env ENV…] [--log LOG…] [--json]
vouch keys list [--json]
vouch keys revoke KEY_ID
vouch keys log-public [--json]     the log's public checkpoint key, for auditors
vouch keys log-new [--origin P]    a new log signing key (for VOUCH_LOG_SIGNING_KEY)

Issue, list and revoke API keys directly in the database (DATABASE_URL or VOUCH_DATA_DIR).
A new key is printed once on stdout; only its SHA-256 is stored.

  --identity ID   agent:…, service:… or user:…
  --role ROLE     ${ROLES.join(', ')} (repeat for several)
  --scope S       a scope a tool may require, e.g. billing:write (repeatable)
  --env ENV       limit the key to an environment (repeatable); default: any
  --log LOG       limit the key to a log (repeatable); default: any

While \`vouch serve\` runs on PGlite, use POST /v1/keys with an admin key instead.`;

/** Who the CLI acts as: whoever can open the database is the operator. */
const CLI_ACTOR = 'system:cli';

async function openStore(io: CliIo) {
  const target = databaseTarget(io.env, io.cwd);
  const database = await openTarget(target);
  try {
    const { applied } = await migrationStatus(database);
    if (applied === 0) {
      throw new CliError(`${describeTarget(target)} has no Vouch schema: run \`vouch migrate\` first`);
    }
  } catch (error) {
    await database.close().catch(() => {});
    throw error;
  }
  const ledger = createLedger(database);
  return { database, ledger, keys: createKeyStore(ledger), target };
}

function describeKey(key: StoredApiKey): string {
  const limits = [
    key.scopes.length > 0 ? `scopes ${key.scopes.join(', ')}` : 'no scopes',
    key.environments ? `environments ${key.environments.join(', ')}` : 'any environment',
    key.logs ? `logs ${key.logs.join(', ')}` : 'any log',
  ].join('; ');
  return `${key.id}  ${key.identity}  roles ${key.roles.join(', ')}  (${limits})${key.revokedAt ? `  REVOKED ${key.revokedAt}` : ''}`;
}

function parseKeysArgs(args: string[]) {
  return parseArgs({
    args,
    options: {
      identity: { type: 'string' },
      role: { type: 'string', multiple: true },
      scope: { type: 'string', multiple: true },
      env: { type: 'string', multiple: true },
      log: { type: 'string', multiple: true },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: true,
  });
}

/** `vouch keys create|list|revoke`. */
export async function runKeys(args: string[], io: CliIo): Promise<number> {
  const [first, ...others] = args;
  // `vouch keys --help` asks for the usage, like `vouch keys help`.
  const [sub, rest] = first === '--help' || first === '-h' ? ['help', others] : [first, others];
  if (sub === 'log-public' || sub === 'log-new') return runLogKeyCommand(sub, rest, io);
  let parsed: ReturnType<typeof parseKeysArgs>;
  try {
    parsed = parseKeysArgs(rest);
  } catch (error) {
    io.err(`vouch keys: ${(error as Error).message}\n\n${KEYS_USAGE}\n`);
    return EXIT.USAGE;
  }
  const { values, positionals } = parsed;
  if (values.help || sub === undefined || sub === 'help') {
    (sub === undefined ? io.err : io.out)(`${KEYS_USAGE}\n`);
    return sub === undefined ? EXIT.USAGE : EXIT.OK;
  }
  if (!['create', 'list', 'revoke'].includes(sub)) {
    io.err(`vouch keys: unknown command ${sub}\n\n${KEYS_USAGE}\n`);
    return EXIT.USAGE;
  }

  let opened: Awaited<ReturnType<typeof openStore>> | undefined;
  try {
    if (sub === 'create') {
      const roles = values.role ?? [];
      const unknown = roles.filter((r) => !isRole(r));
      if (unknown.length > 0)
        throw new CliError(`unknown role ${unknown.join(', ')}: use ${ROLES.join(', ')}`);
      // The same schema POST /v1/keys validates with, so the CLI cannot issue what the API refuses.
      const checked = CreateKeyBodySchema.safeParse({
        identity: values.identity,
        roles,
        ...(values.scope ? { scopes: values.scope } : {}),
        ...(values.env ? { environments: values.env } : {}),
        ...(values.log ? { logs: values.log } : {}),
      });
      if (!checked.success) {
        const issue = checked.error.issues[0]!;
        const field = String(issue.path[0] ?? '');
        const flag =
          { identity: '--identity', roles: '--role', environments: '--env', logs: '--log' }[field] ?? field;
        throw new CliError(`${flag}: ${issue.message} (see vouch keys --help)`);
      }
      opened = await openStore(io);
      const { key, secret } = await opened.keys.create({
        identity: checked.data.identity,
        roles: checked.data.roles as Role[],
        scopes: checked.data.scopes ?? [],
        environments: checked.data.environments ?? null,
        logs: checked.data.logs ?? null,
        createdBy: CLI_ACTOR,
      });
      if (values.json) {
        io.out(`${JSON.stringify({ key: keyView(key), secret }, null, 2)}\n`);
      } else {
        io.err(`Issued ${describeKey(key)}.\nThe key is shown this once and only its SHA-256 is stored:\n`);
        io.out(`${secret}\n`);
      }
      return EXIT.OK;
    }
    if (sub === 'list') {
      opened = await openStore(io);
      const keys = await opened.keys.list();
      if (values.json) io.out(`${JSON.stringify({ keys: keys.map(keyView) }, null, 2)}\n`);
      else for (const key of keys) io.out(`${describeKey(key)}\n`);
      return EXIT.OK;
    }
    const id = positionals[0];
    if (!id || positionals.length > 1) throw new CliError('vouch keys revoke takes exactly one KEY_ID');
    opened = await openStore(io);
    const key = await opened.keys.revoke(id, CLI_ACTOR);
    io.out(`revoked ${describeKey(key)}\n`);
    return EXIT.OK;
  } catch (error) {
    io.err(`vouch keys ${sub}: ${explainFailure(error, opened?.target ?? databaseTarget(io.env, io.cwd))}\n`);
    return EXIT.USAGE;
  } finally {
    if (opened) {
      await opened.ledger.close().catch(() => {});
      await opened.database.close().catch(() => {});
    }
  }
}
