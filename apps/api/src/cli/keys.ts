import { adoptLegacyKeys, createLedger, migrationStatus } from '@vouch/ledger';
import { createKeyStore, type StoredApiKey } from '../auth/key-store';
import { isRole, ROLES, type Role } from '../auth/roles';
import { databaseTarget, describeTarget } from '../config';
import { openTarget } from '../open-target';
import { keyView } from '../routes/keys';
import { CreateKeyBodySchema } from '../schemas/keys';
import { defineCommand, defineGroup } from './command';
import { CliError, type CliIo, EXIT } from './io';
import { keysLogNewCommand, keysLogPublicCommand } from './keys-log';

/**
 * Who the CLI acts as: whoever can open the database as the tables' owner is the operator
 * (in the `system` log the database refuses this actor from any other role).
 */
export const CLI_ACTOR = 'system:cli';

type Store = Awaited<ReturnType<typeof openStore>>;

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
  const end = key.revokedAt
    ? `  REVOKED ${key.revokedAt}`
    : key.expiresAt
      ? `  EXPIRES ${key.expiresAt}`
      : '';
  return `${key.id}  ${key.identity}  roles ${key.roles.join(', ')}  (${limits})${end}`;
}

const UNIT_SECONDS = { s: 1, m: 60, h: 3_600, d: 86_400 } as const;
/** The longest grace a rotation may give the old key. */
const MAX_GRACE_SECONDS = 30 * 86_400;

/** `15m`, `24h`, `90s`, `7d` in seconds; a CliError naming `--grace` for anything else. */
export function parseGrace(text: string): number {
  const match = /^(\d{1,7})([smhd])$/.exec(text.trim());
  const seconds = match ? Number(match[1]) * UNIT_SECONDS[match[2] as keyof typeof UNIT_SECONDS] : Number.NaN;
  if (!(seconds > 0) || seconds > MAX_GRACE_SECONDS) {
    throw new CliError(
      `--grace ${text}: a duration from 1s to 30d, as a number and a unit (s, m, h, d), e.g. 15m or 24h`,
    );
  }
  return seconds;
}

const STORAGE = `Keys are stored directly in the database (DATABASE_URL or VOUCH_DATA_DIR); only the
SHA-256 of a key is stored. While \`vouch serve\` runs on PGlite, use POST /v1/keys with an
admin key instead. On Postgres, connect as the owner role (as for \`vouch migrate\`): the
database refuses the operator's key events (system:cli) from any other role.`;

/** `vouch keys create`: the new key once on stdout. */
const createCommand = defineCommand({
  name: 'vouch keys create',
  summary: 'issue an API key (printed once)',
  description: 'Issue an API key. The key is printed once on stdout; only its SHA-256 is stored.',
  options: {
    identity: { type: 'string', value: 'ID', required: true, help: 'agent:…, service:… or user:…' },
    role: {
      type: 'string',
      value: 'ROLE',
      multiple: true,
      required: true,
      help: `${ROLES.join(', ')} (repeat for several)`,
    },
    scope: {
      type: 'string',
      value: 'S',
      multiple: true,
      help: 'a scope a tool may require, e.g. billing:write (repeatable)',
    },
    env: {
      type: 'string',
      value: 'ENV',
      multiple: true,
      help: 'limit the key to an environment (repeatable); default: any',
    },
    log: {
      type: 'string',
      value: 'LOG',
      multiple: true,
      help: 'limit the key to a log (repeatable); default: any',
    },
    json: { type: 'boolean', help: 'print the key record and the secret as JSON' },
    'allow-role-combination': {
      type: 'boolean',
      help: 'issue a key holding roles that must stay apart\n(gateway + approver, admin + approver, gateway + redactor)',
    },
  },
  footer: STORAGE,
  async action({ values }, io) {
    const roles = values.role ?? [];
    const unknown = roles.filter((r) => !isRole(r));
    if (unknown.length > 0) throw new CliError(`unknown role ${unknown.join(', ')}: use ${ROLES.join(', ')}`);
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
      throw new CliError(`${flag}: ${issue.message} (see vouch keys create --help)`);
    }
    return withStore(io, async ({ keys }) => {
      const { key, secret } = await keys.create({
        identity: checked.data.identity,
        roles: checked.data.roles as Role[],
        scopes: checked.data.scopes ?? [],
        environments: checked.data.environments ?? null,
        logs: checked.data.logs ?? null,
        createdBy: CLI_ACTOR,
        allowRoleCombination: values['allow-role-combination'] === true,
      });
      if (values.json) {
        io.out(`${JSON.stringify({ key: keyView(key), secret }, null, 2)}\n`);
      } else {
        io.err(`Issued ${describeKey(key)}.\nThe key is shown this once and only its SHA-256 is stored:\n`);
        io.out(`${secret}\n`);
      }
      return EXIT.OK;
    });
  },
});

/** `vouch keys list`. */
const listCommand = defineCommand({
  name: 'vouch keys list',
  summary: 'every API key, revoked ones included',
  options: { json: { type: 'boolean', help: 'print the key records as JSON' } },
  footer: STORAGE,
  action: ({ values }, io) =>
    withStore(io, async ({ keys }) => {
      const all = await keys.list();
      if (values.json) io.out(`${JSON.stringify({ keys: all.map(keyView) }, null, 2)}\n`);
      else for (const key of all) io.out(`${describeKey(key)}\n`);
      return EXIT.OK;
    }),
});

/** `vouch keys revoke KEY_ID`. */
const revokeCommand = defineCommand({
  name: 'vouch keys revoke',
  summary: 'revoke an API key',
  options: {},
  positionals: [{ name: 'KEY_ID' }],
  footer: STORAGE,
  action: ({ positionals }, io) =>
    withStore(io, async ({ keys }) => {
      const key = await keys.revoke(positionals[0]!, CLI_ACTOR);
      io.out(`revoked ${describeKey(key)}\n`);
      return EXIT.OK;
    }),
});

/** `vouch keys rotate KEY_ID`: a new key with the old one's identity, roles and limits; the old one revoked. */
const rotateCommand = defineCommand({
  name: 'vouch keys rotate',
  summary: 'issue a replacement key and revoke the old one',
  description: `Issue a new key with the same identity, roles, scopes, environments and logs as KEY_ID,
print it once on stdout, then revoke KEY_ID. With --grace the old key keeps working for that
long while clients switch over, then is refused with KEY_EXPIRED; the deadline is recorded in
the system log (an api_key.expires event), so \`vouch verify\` proves it. With --keep-old the
old key stays valid until you revoke it with \`vouch keys revoke\` (keys past
server.keys.maxAgeDays are refused with KEY_EXPIRED in any case).`,
  options: {
    grace: {
      type: 'string',
      value: 'DURATION',
      help: 'the old key keeps working this long (e.g. 15m, 24h; at most 30d), then expires',
    },
    'keep-old': { type: 'boolean', help: 'leave the old key valid (revoke it yourself later)' },
    json: { type: 'boolean', help: 'print the new key record and the secret as JSON' },
  },
  positionals: [{ name: 'KEY_ID' }],
  footer: STORAGE,
  action: ({ values, positionals }, io) =>
    withStore(io, async ({ keys }) => {
      const id = positionals[0]!;
      if (values.grace !== undefined && values['keep-old']) {
        throw new CliError('--grace and --keep-old contradict each other: choose one');
      }
      const graceSeconds = values.grace === undefined ? undefined : parseGrace(values.grace);
      const old = (await keys.list()).find((key) => key.id === id);
      if (!old) throw new CliError(`no API key with id ${id} (see vouch keys list)`);
      if (old.revokedAt)
        throw new CliError(`${id} is revoked already: issue a new key with vouch keys create`);
      const { key, secret } = await keys.create({
        identity: old.identity,
        roles: old.roles,
        scopes: old.scopes,
        environments: old.environments,
        logs: old.logs,
        createdBy: CLI_ACTOR,
        // The same roles the old key was issued with: rotating is not the place to refuse them.
        allowRoleCombination: true,
      });
      const expiring = graceSeconds === undefined ? null : await keys.expire(old.id, graceSeconds, CLI_ACTOR);
      const revoked = values['keep-old'] || expiring !== null ? null : await keys.revoke(old.id, CLI_ACTOR);
      if (values.json) {
        io.out(
          `${JSON.stringify(
            {
              key: keyView(key),
              secret,
              replaces: old.id,
              old_revoked: revoked !== null,
              old_expires_at: expiring?.expiresAt ?? null,
            },
            null,
            2,
          )}\n`,
        );
      } else {
        const fate = revoked
          ? ', which is now revoked'
          : expiring
            ? `, which keeps working until ${expiring.expiresAt} and is refused from then on`
            : ' (still valid: revoke it once clients switched)';
        io.err(
          `Issued ${describeKey(key)} to replace ${old.id}${fate}.\nThe key is shown this once and only its SHA-256 is stored:\n`,
        );
        io.out(`${secret}\n`);
      }
      return EXIT.OK;
    }),
});

/** `vouch keys adopt`: bind every key issued before migration 0005 to its key hash. */
const adoptCommand = defineCommand({
  name: 'vouch keys adopt',
  summary: 'bind keys issued before the key commitment (KEY_UNPROVEN) to their hash',
  description: `After an upgrade from a release before migration 0005, every key it issued is reported
KEY_UNPROVEN: its api_key.created event holds everything but a commitment to the key hash.
This records, for each such key (revoked ones included), an api_key.adopted event in the
system log by the operator (system:cli) that commits to the hash its row holds now; from then
on the key is proven, and a swapped hash fails its proof. It vouches for the hashes as they
are now, not before: if you doubt one, rotate that key instead. Keys whose row differs from
their event, or whose issuer could not issue them, are left as they are (exit 1). Running it
again adopts nothing.`,
  options: { json: { type: 'boolean', help: 'print the adopted and refused key ids as JSON' } },
  footer: `Exit 0: every such key is adopted (or none was left). Exit 1: some could not be: see
\`vouch verify --log system\`.

${STORAGE}`,
  action: ({ values }, io) =>
    withStore(io, async ({ ledger, keys }) => {
      const { adopted, refused } = await adoptLegacyKeys(ledger);
      if (values.json) {
        io.out(`${JSON.stringify({ adopted, refused }, null, 2)}\n`);
      } else {
        const all = new Map((await keys.list()).map((key) => [key.id, key]));
        const line = (id: string) => (all.has(id) ? describeKey(all.get(id)!) : id);
        io.out(`adopted ${adopted.length} key(s) issued before the key commitment\n`);
        for (const id of adopted) io.out(`  ${line(id)}\n`);
        for (const id of refused) {
          io.err(
            `not adopted: ${line(id)} (its row or its issuer fails verification: vouch verify --log system)\n`,
          );
        }
      }
      return refused.length === 0 ? EXIT.OK : EXIT.BROKEN;
    }),
});

/** `vouch keys …`: API keys, and the log signing key. */
export const keysCommand = defineGroup({
  name: 'vouch keys',
  description: 'Issue, list, revoke and rotate API keys; make and publish the log signing key.',
  commands: [
    createCommand,
    listCommand,
    revokeCommand,
    rotateCommand,
    adoptCommand,
    keysLogPublicCommand,
    keysLogNewCommand,
  ],
});

/** Run `use` on the database the environment names (migrated), and close it. */
export async function withDatabase(
  io: CliIo,
  use: (database: Store['database']) => Promise<number>,
): Promise<number> {
  return withStore(io, (store) => use(store.database));
}

/** Open the database (refused without a schema), run `use`, close. */
export async function withStore(io: CliIo, use: (store: Store) => Promise<number>): Promise<number> {
  const store = await openStore(io);
  try {
    return await use(store);
  } finally {
    await store.ledger.close().catch(() => {});
    await store.database.close().catch(() => {});
  }
}
