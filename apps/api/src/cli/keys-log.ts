import { generateNoteKeys, isValidKeyName } from '@vouch/audit';
import { logOrigin } from '@vouch/ledger';
import { databaseTarget } from '../config';
import { transparencyConfig } from '../transparency/config';
import { DEFAULT_ORIGIN_PREFIX, loadLogKeys } from '../transparency/log-keys';
import { defineCommand } from './command';
import { CliError, EXIT } from './io';

/** `vouch keys log-public`: exit 0 with the verifier keys on stdout, 2 when there is no key. */
export const keysLogPublicCommand = defineCommand({
  name: 'vouch keys log-public',
  summary: "the log's public checkpoint key, for auditors",
  description: `Print the public verifier key(s) of the log signing key, one per line: what auditors pass
to \`vouch verify --public-key\` to check this server's checkpoints. Publish them where
auditors can get them without asking this server.

The signing key comes from VOUCH_LOG_SIGNING_KEY (several keys while rotating: each is
printed), or on PGlite from the data directory (VOUCH_DATA_DIR), where it is generated on
first use. On Postgres VOUCH_LOG_SIGNING_KEY is required.`,
  options: { json: { type: 'boolean', help: 'print the keys, their origin prefix and source as JSON' } },
  async action({ values }, io) {
    const keys = loadLogKeys(transparencyConfig(io.env), databaseTarget(io.env, io.cwd));
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
      return EXIT.OK;
    }
    if (keys.source.kind === 'file' && keys.source.created)
      io.err(`Generated a new log signing key in ${source}.\n`);
    io.err(
      `Checkpoints of log L have origin ${logOrigin(keys.originPrefix, 'L')}; signed with the key from ${source}:\n`,
    );
    for (const key of keys.verifierKeys) io.out(`${key}\n`);
    return EXIT.OK;
  },
});

/** `vouch keys log-new`: exit 0 with a new signer key on stdout. */
export const keysLogNewCommand = defineCommand({
  name: 'vouch keys log-new',
  summary: 'a new log signing key (for VOUCH_LOG_SIGNING_KEY)',
  description: `Make a new log signing key, for VOUCH_LOG_SIGNING_KEY (Postgres deployments, or a key
rotation: list the new key after the old one, publish the new verifier key, and drop the
old key once auditors trust the new one). Nothing is stored: the signer key is printed on
stdout, its public verifier key on stderr.`,
  options: {
    origin: {
      type: 'string',
      value: 'PREFIX',
      help: `the key name and checkpoint origin prefix (default VOUCH_LOG_ORIGIN,\nelse ${DEFAULT_ORIGIN_PREFIX}); checkpoints of log L get origin PREFIX/L`,
    },
  },
  async action({ values }, io) {
    const prefix = (values.origin ?? io.env.VOUCH_LOG_ORIGIN?.trim() ?? DEFAULT_ORIGIN_PREFIX).replace(
      /\/+$/,
      '',
    );
    if (!isValidKeyName(prefix)) throw new CliError(`--origin ${prefix} cannot name a key: no spaces or +`);
    const { signerKey, verifierKey } = generateNoteKeys(prefix);
    io.err(
      `New log signing key. Keep it secret (set it as VOUCH_LOG_SIGNING_KEY); publish its verifier key:\n  ${verifierKey}\n`,
    );
    io.out(`${signerKey}\n`);
    return EXIT.OK;
  },
});
