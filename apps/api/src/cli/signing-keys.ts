import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { formatAuthorPrivateKey, formatAuthorPublicKey, generateAuthorKey } from '@vouch/audit';
import {
  currentKeyHistory,
  enrollSigningKey,
  requireSignatures,
  revokeSigningKey,
  SERVER_SIGNER,
} from '@vouch/ledger';
import { serverKeyOf } from '../transparency/server-key';
import { defineCommand, defineGroup } from './command';
import { CliError, EXIT } from './io';
import { CLI_ACTOR, withStore } from './keys';

const OPERATOR = `The operator acts as ${CLI_ACTOR}: on Postgres connect as the owner role (as for
\`vouch migrate\`), which the database requires for ${CLI_ACTOR}'s events in the system log.
While \`vouch serve\` runs on PGlite, use POST /v1/signing-keys with an admin key instead.
Exit 0: done. Exit 2: usage, an unknown key, or the database (the message says what to fix).`;

const iso = (ms: number) => new Date(ms).toISOString();

/** An enrolled key as the key history holds it. */
type SigningKey = Awaited<
  ReturnType<typeof currentKeyHistory>
>['signingKeys']['all'] extends () => (infer K)[]
  ? K
  : never;

function describeSigningKey(key: SigningKey): string {
  const end = Number.isFinite(key.until) ? `  REVOKED ${iso(key.until)}` : '';
  return `${key.keyId}  ${key.identity}  ${formatAuthorPublicKey(key.publicKey)}  enrolled ${iso(key.from)}${end}`;
}

/** `vouch signing-keys generate`: a new author key, on no database. */
const generateCommand = defineCommand({
  name: 'vouch signing-keys generate',
  summary: "make an author's Ed25519 signing key",
  description: `Make an Ed25519 key an author signs records with (docs/chain.md, "Records signed by
their authors"). With --out, the private key is written to FILE (mode 0600, never over an
existing file) and the public key and key id are printed on stdout; without it, the private
key is printed on stdout (for a secret store) and the rest on stderr. Give the private key to
its author only (VOUCH_SIGNING_KEY, or @vouch/client's \`signing.key\`); enrol the public key
with \`vouch signing-keys enroll\`.`,
  options: {
    out: { type: 'string', value: 'FILE', help: 'write the private key here (mode 0600)' },
    json: { type: 'boolean', help: 'print {key_id, public_key} (and private_key without --out) as JSON' },
  },
  footer: 'Exit 0: made. Exit 2: FILE exists or cannot be written.',
  action: ({ values }, io) => {
    const key = generateAuthorKey();
    const publicKey = formatAuthorPublicKey(key.publicKey);
    const privateKey = formatAuthorPrivateKey(key);
    if (values.out !== undefined) {
      const path = resolve(io.cwd, values.out);
      try {
        writeFileSync(path, `${privateKey}\n`, { mode: 0o600, flag: 'wx' });
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        throw new CliError(
          code === 'EEXIST'
            ? `--out ${values.out}: the file exists; a signing key is never overwritten (choose another path)`
            : `--out ${values.out}: cannot write it (${code ?? String(error)})`,
        );
      }
    }
    const shown = { key_id: key.keyId, public_key: publicKey };
    if (values.json) {
      io.out(
        `${JSON.stringify(values.out === undefined ? { ...shown, private_key: privateKey } : shown, null, 2)}\n`,
      );
    } else if (values.out !== undefined) {
      io.err(`Wrote the private key to ${values.out} (mode 0600). Enrol the public key:\n`);
      io.out(`key_id ${key.keyId}\npublic_key ${publicKey}\n`);
    } else {
      io.err(`key_id ${key.keyId}\npublic_key ${publicKey}\nThe private key (give it to its author only):\n`);
      io.out(`${privateKey}\n`);
    }
    return Promise.resolve(EXIT.OK);
  },
});

/** `vouch signing-keys enroll`: bind a public key to an identity, as the operator. */
const enrollCommand = defineCommand({
  name: 'vouch signing-keys enroll',
  summary: "enrol an author's public key (signing_key.enrolled)",
  description: `Record in the system log that IDENTITY signs with PUBLIC_KEY (signing_key.enrolled, by
${CLI_ACTOR}). From then on every approval, verification, decision, redaction and API key
issuance or revocation in IDENTITY's name must carry its signature: the server refuses one
without it (403 SIGNATURE_REQUIRED) and \`vouch verify\` reports one written behind its back.`,
  options: {
    identity: { type: 'string', value: 'ID', required: true, help: 'the identity of the author (user:…, …)' },
    'public-key': {
      type: 'string',
      value: 'KEY',
      required: true,
      help: 'ed25519:<base64> (from vouch signing-keys generate)',
    },
  },
  footer: OPERATOR,
  action: ({ values }, io) => {
    for (const flag of ['identity', 'public-key'] as const) {
      if (!values[flag]) throw new CliError(`--${flag} is required (see vouch signing-keys enroll --help)`);
    }
    return withStore(io, async ({ ledger, keys }) => {
      const enrolled = await enrollSigningKey(ledger, {
        identity: values.identity!,
        publicKey: values['public-key']!,
        enrolledBy: CLI_ACTOR,
      });
      io.out(`enrolled ${enrolled.key_id} for ${enrolled.identity}\n`);
      if (!(await keys.list()).some((key) => key.identity === values.identity && key.revokedAt === null)) {
        io.err(
          `note: no live API key belongs to ${values.identity} (yet); its signatures are checked once one does\n`,
        );
      }
      return EXIT.OK;
    });
  },
});

/** `vouch signing-keys revoke KEY_ID`. */
const revokeCommand = defineCommand({
  name: 'vouch signing-keys revoke',
  summary: 'end an enrolled signing key (signing_key.revoked)',
  description: `Record that KEY_ID signs nothing from now on (what it signed before stays valid). Its
author, if it must sign, is refused until another key is enrolled for it.`,
  options: {},
  positionals: [{ name: 'KEY_ID' }],
  footer: OPERATOR,
  action: ({ positionals }, io) =>
    withStore(io, async ({ ledger, database }) => {
      const keyId = positionals[0]!;
      const key = (await currentKeyHistory(database)).signingKeys.all().find((k) => k.keyId === keyId);
      if (!key) throw new CliError(`no enrolled signing key ${keyId} (see vouch signing-keys list)`);
      if (Number.isFinite(key.until)) throw new CliError(`${keyId} was revoked at ${iso(key.until)} already`);
      await revokeSigningKey(ledger, { keyId, revokedBy: CLI_ACTOR });
      io.out(`revoked ${keyId} of ${key.identity}\n`);
      return EXIT.OK;
    }),
});

/** `vouch signing-keys list`. */
const listCommand = defineCommand({
  name: 'vouch signing-keys list',
  summary: 'every enrolled signing key, and whether every author must sign',
  options: { json: { type: 'boolean', help: 'print the keys as JSON' } },
  footer: OPERATOR,
  action: ({ values }, io) =>
    withStore(io, async ({ database }) => {
      const history = await currentKeyHistory(database);
      const keys = history.signingKeys.all();
      const required = signaturesRequired(history.signingKeys.mustSign);
      if (values.json) {
        const view = keys.map((k) => ({
          key_id: k.keyId,
          identity: k.identity,
          public_key: formatAuthorPublicKey(k.publicKey),
          enrolled_at: iso(k.from),
          revoked_at: Number.isFinite(k.until) ? iso(k.until) : null,
        }));
        io.out(`${JSON.stringify({ signatures_required: required, keys: view }, null, 2)}\n`);
        return EXIT.OK;
      }
      for (const key of keys) io.out(`${describeSigningKey(key)}\n`);
      io.err(
        required
          ? 'signatures required: every author must sign\n'
          : 'signatures not required: only authors holding a live key must sign (vouch signing-keys require)\n',
      );
      return EXIT.OK;
    }),
});

/** `vouch signing-keys require`: every author signs from now on. */
const requireCommand = defineCommand({
  name: 'vouch signing-keys require',
  summary: 'make every author sign from now on (signatures.required)',
  description: `Record signatures.required in the system log: from now on every approval, verification,
decision, redaction and API key issued or revoked over HTTP must carry its author's signature,
whether the author holds an enrolled key or not (one without a key is refused). It cannot be
undone. Enrol a key for every author first (vouch signing-keys list). Running it again records
nothing.`,
  options: {},
  footer: OPERATOR,
  action: (_parsed, io) =>
    withStore(io, async ({ ledger, database }) => {
      if (signaturesRequired((await currentKeyHistory(database)).signingKeys.mustSign)) {
        io.out('signatures are required already\n');
        return EXIT.OK;
      }
      await requireSignatures(ledger, CLI_ACTOR);
      io.out('signatures required: from now on every author must sign\n');
      return EXIT.OK;
    }),
});

/** `vouch signing-keys enroll-server`: the key the server signs its own records with. */
const enrollServerCommand = defineCommand({
  name: 'vouch signing-keys enroll-server',
  summary: "enrol the server's own signing key (vouch:server)",
  description: `Enrol, for vouch:server, the key the server signs its own records with: the policy pin, a
lapsed claim's unknown outcome and a settle verification (docs/chain.md, "The server signs its
own"). The key is derived from the log signing key, as \`vouch serve\` derives it:
VOUCH_LOG_SIGNING_KEY, or on PGlite the key file in the data directory; run this with the
same settings as the server. A first start enrols it by itself; run this after an upgrade,
after the server key was revoked, or after a new log signing key. Enrolled already: exit 0,
nothing written.`,
  options: { json: { type: 'boolean', help: 'print {key_id, public_key, enrolled} as JSON' } },
  footer: OPERATOR,
  action: ({ values }, io) =>
    withStore(io, async ({ ledger, database, target }) => {
      const key = serverKeyOf(io.env, target);
      if (!key) {
        throw new CliError(
          'no log signing key to derive the server key from: set VOUCH_LOG_SIGNING_KEY as for vouch serve',
        );
      }
      const live = (await currentKeyHistory(database)).signingKeys
        .liveKeysOf(SERVER_SIGNER, Date.now())
        .some((k) => k.keyId === key.keyId);
      if (!live) {
        await enrollSigningKey(ledger, {
          identity: SERVER_SIGNER,
          publicKey: formatAuthorPublicKey(key.publicKey),
          enrolledBy: CLI_ACTOR,
        });
      }
      if (values.json) {
        const shown = {
          key_id: key.keyId,
          public_key: formatAuthorPublicKey(key.publicKey),
          enrolled: !live,
        };
        io.out(`${JSON.stringify(shown, null, 2)}\n`);
      } else {
        io.out(`${live ? 'enrolled already' : 'enrolled'} ${key.keyId} for ${SERVER_SIGNER}\n`);
      }
      return EXIT.OK;
    }),
});

/** Whether `signatures.required` is recorded: whether an identity that holds no key must sign now. */
function signaturesRequired(mustSign: (identity: string, at: number) => boolean): boolean {
  // No enrolment can name this identity (not one an API key can hold).
  return mustSign('\u0000', Date.now());
}

/** `vouch signing-keys …`: the keys authors sign their records with. */
export const signingKeysCommand = defineGroup({
  name: 'vouch signing-keys',
  description: `Make, enrol, revoke and list the Ed25519 keys authors sign their records with, and require
signatures of every author (docs/operations.md, "Author signing keys").`,
  commands: [generateCommand, enrollCommand, enrollServerCommand, revokeCommand, listCommand, requireCommand],
});
