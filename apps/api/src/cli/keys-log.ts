import { generateNoteKeys, isValidKeyName } from '@vouch/audit';
import { logOrigin } from '@vouch/ledger';
import { databaseTarget } from '../config';
import { LogIdSchema } from '../schemas/common';
import { transparencyConfig } from '../transparency/config';
import { DEFAULT_ORIGIN_PREFIX, loadLogKeys } from '../transparency/log-keys';
import { defineCommand } from './command';
import { CliError, EXIT } from './io';

/** `vouch keys log-public`: exit 0 with the verifier keys on stdout, 2 when there is no key. */
export const keysLogPublicCommand = defineCommand({
  name: 'vouch keys log-public',
  summary: "the log's public checkpoint key, for auditors and witnesses",
  description: `Print public verifier keys of the log signing key, one per line: what auditors and
witnesses pass to \`vouch verify --public-key\` / \`vouch witness --public-key\` to check this
server's checkpoints. Publish them where auditors can get them without asking this server.

With --log L: the verifier key(s) of log L's own key, named after its checkpoint origin
PREFIX/L (one per master key while rotating). Each log is signed with its own key,
derived from the master key, so a witness of one log trusts nothing about another.
Without --log: the shared (master) key(s), which signed every log's checkpoints before
per-log keys, and still sign new ones while VOUCH_LOG_SHARED_SIGNATURE is true (default).

The master key comes from VOUCH_LOG_SIGNING_KEY (several keys while rotating: each is
printed), or on PGlite from the data directory (VOUCH_DATA_DIR), where it is generated on
first use. On Postgres VOUCH_LOG_SIGNING_KEY is required.`,
  options: {
    log: { type: 'string', value: 'L', help: "print log L's own verifier key(s)" },
    json: { type: 'boolean', help: 'print the keys, their origin prefix and source as JSON' },
  },
  async action({ values }, io) {
    const keys = loadLogKeys(transparencyConfig(io.env), databaseTarget(io.env, io.cwd));
    if (keys === null) {
      throw new CliError(
        'no log signing key: on Postgres set VOUCH_LOG_SIGNING_KEY (make one with `vouch keys log-new`)',
      );
    }
    const log = values.log;
    if (log !== undefined && !LogIdSchema.safeParse(log).success)
      throw new CliError(`--log ${log} is not a log id`);
    const source = keys.source.kind === 'env' ? 'VOUCH_LOG_SIGNING_KEY' : keys.source.path;
    const printed = log === undefined ? keys.sharedVerifierKeys : keys.logVerifierKeys(log);
    if (values.json) {
      const body = {
        origin_prefix: keys.originPrefix,
        ...(log === undefined ? {} : { log, origin: logOrigin(keys.originPrefix, log) }),
        verifier_keys: printed,
        shared_verifier_keys: keys.sharedVerifierKeys,
        shared_signature: keys.sharedSignature,
        source,
      };
      io.out(`${JSON.stringify(body, null, 2)}\n`);
      return EXIT.OK;
    }
    if (keys.source.kind === 'file' && keys.source.created)
      io.err(`Generated a new log signing key in ${source}.\n`);
    if (log === undefined) {
      io.err(
        `Checkpoints of log L have origin ${logOrigin(keys.originPrefix, 'L')} and are signed with L's own key (\`--log L\` prints it)${keys.sharedSignature ? ' and with the shared key from' : '; before per-log keys, with the shared key from'} ${source}:\n`,
      );
    } else {
      io.err(`The key of log ${log}, named after its origin ${logOrigin(keys.originPrefix, log)}:\n`);
    }
    for (const key of printed) io.out(`${key}\n`);
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
