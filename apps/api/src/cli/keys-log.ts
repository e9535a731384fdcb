import { parseArgs } from 'node:util';
import { generateNoteKeys, isValidKeyName } from '@vouch/audit';
import { logOrigin } from '@vouch/ledger';
import { databaseTarget } from '../config';
import { transparencyConfig } from '../transparency/config';
import { DEFAULT_ORIGIN_PREFIX, loadLogKeys } from '../transparency/log-keys';
import { explainFailure } from './errors';
import { CliError, type CliIo, EXIT } from './io';

export const KEYS_LOG_PUBLIC_USAGE = `vouch keys log-public [--json]

Print the public verifier key(s) of the log signing key, one per line: what auditors pass
to \`vouch verify --public-key\` to check this server's checkpoints. Publish them where
auditors can get them without asking this server.

The signing key comes from VOUCH_LOG_SIGNING_KEY (several keys while rotating: each is
printed), or on PGlite from the data directory (VOUCH_DATA_DIR), where it is generated on
first use. On Postgres VOUCH_LOG_SIGNING_KEY is required.`;

/** `vouch keys log-public`: exit 0 with the verifier keys on stdout, 2 when there is no key. */
export async function runKeysLogPublic(args: string[], io: CliIo): Promise<number> {
  let values: { json?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      args,
      options: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    }));
  } catch (error) {
    io.err(`vouch keys log-public: ${(error as Error).message}\n\n${KEYS_LOG_PUBLIC_USAGE}\n`);
    return EXIT.USAGE;
  }
  if (values.help) {
    io.out(`${KEYS_LOG_PUBLIC_USAGE}\n`);
    return EXIT.OK;
  }
  const target = databaseTarget(io.env, io.cwd);
  try {
    const keys = loadLogKeys(transparencyConfig(io.env), target);
    if (keys === null) {
      throw new CliError(
        'no log signing key: on Postgres set VOUCH_LOG_SIGNING_KEY (make one with `vouch keys log-new`)',
      );
    }
    const source = keys.source.kind === 'env' ? 'VOUCH_LOG_SIGNING_KEY' : keys.source.path;
    if (values.json) {
      io.out(
        `${JSON.stringify({ origin_prefix: keys.originPrefix, verifier_keys: keys.verifierKeys, source }, null, 2)}\n`,
      );
    } else {
      if (keys.source.kind === 'file' && keys.source.created)
        io.err(`Generated a new log signing key in ${source}.\n`);
      io.err(
        `Checkpoints of log L have origin ${logOrigin(keys.originPrefix, 'L')}; signed with the key from ${source}:\n`,
      );
      for (const key of keys.verifierKeys) io.out(`${key}\n`);
    }
    return EXIT.OK;
  } catch (error) {
    io.err(`vouch keys log-public: ${explainFailure(error, target)}\n`);
    return EXIT.USAGE;
  }
}

export const KEYS_LOG_NEW_USAGE = `vouch keys log-new [--origin PREFIX]

Make a new log signing key, for VOUCH_LOG_SIGNING_KEY (Postgres deployments, or a key
rotation: list the new key after the old one, publish the new verifier key, and drop the
old key once auditors trust the new one). Nothing is stored: the signer key is printed on
stdout, its public verifier key on stderr.

  --origin PREFIX   the key name and checkpoint origin prefix (default VOUCH_LOG_ORIGIN,
                    else ${DEFAULT_ORIGIN_PREFIX}); checkpoints of log L get origin PREFIX/L`;

/** Route \`vouch keys log-public|log-new\`. */
export function runLogKeyCommand(sub: 'log-public' | 'log-new', args: string[], io: CliIo): Promise<number> {
  return sub === 'log-public' ? runKeysLogPublic(args, io) : runKeysLogNew(args, io);
}

/** \`vouch keys log-new\`: exit 0 with a new signer key on stdout. */
export async function runKeysLogNew(args: string[], io: CliIo): Promise<number> {
  let values: { origin?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args,
      options: { origin: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    }));
  } catch (error) {
    io.err(`vouch keys log-new: ${(error as Error).message}\n\n${KEYS_LOG_NEW_USAGE}\n`);
    return EXIT.USAGE;
  }
  if (values.help) {
    io.out(`${KEYS_LOG_NEW_USAGE}\n`);
    return EXIT.OK;
  }
  const prefix = (values.origin ?? io.env.VOUCH_LOG_ORIGIN?.trim() ?? DEFAULT_ORIGIN_PREFIX).replace(
    /\/+$/,
    '',
  );
  if (!isValidKeyName(prefix)) {
    io.err(`vouch keys log-new: --origin ${prefix} cannot name a key: no spaces or +\n`);
    return EXIT.USAGE;
  }
  const { signerKey, verifierKey } = generateNoteKeys(prefix);
  io.err(
    `New log signing key. Keep it secret (set it as VOUCH_LOG_SIGNING_KEY); publish its verifier key:\n  ${verifierKey}\n`,
  );
  io.out(`${signerKey}\n`);
  return EXIT.OK;
}
