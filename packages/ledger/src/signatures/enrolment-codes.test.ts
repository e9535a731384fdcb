import { randomBytes } from 'node:crypto';
import {
  type AuthorKey,
  attachSignature,
  authorStatement,
  detachedSignature,
  formatAuthorPublicKey,
  generateAuthorKey,
  parseDetachedSignature,
  signAuthorStatement,
} from '@vouch/audit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeOf } from '../__fixtures__/code-of';
import type { Database } from '../database';
import { SYSTEM_LOG } from '../keys/api-key-events';
import { issueApiKey } from '../keys/api-keys';
import { OPERATOR_ACTOR } from '../keys/key-history';
import { createLedger, type Ledger } from '../ledger';
import { verifyBothWays } from '../tamper-testing';
import { testBackends } from '../testing';
import { enrollSigningKey } from './enrol-signing-key';
import { enrolWithCode, issueEnrolmentCode } from './enrolment-code-events';
import {
  ENROL_BY_CODE_ACTION,
  ENROLMENT_CODE_ACTION,
  ENROLMENT_CODE_TTL_MS,
  enrolByCodeClaims,
  enrolmentCodeCommitment,
} from './enrolment-codes';
import { currentKeyHistory } from './request-signature';
import { SIGNING_KEY_ENROLLED } from './signing-key-events';

// A person enrols their own signing key with a one-time code an admin issued for them. The
// runtime role can append any event in anyone's name: a self-enrolment it forges (a code it
// does not know, a code used already, expired, for someone else, or without the new key's
// proof) counts for nothing and is reported; the server refuses the same, writing nothing.

const detached = (text: string) => parseDetachedSignature(text)!;
const publicText = (key: AuthorKey) => formatAuthorPublicKey(key.publicKey);
/** The new key's proof that it is held, over what the enrolment says. */
const proofOf = (key: AuthorKey, identity: string, code: string, signer = key) =>
  detached(
    detachedSignature(
      signAuthorStatement(
        authorStatement(
          SYSTEM_LOG,
          ENROL_BY_CODE_ACTION,
          identity,
          enrolByCodeClaims({
            identity,
            public_key: publicText(key),
            code_commitment: enrolmentCodeCommitment(code),
          }),
        ),
        signer,
      ),
    ),
  );

describe.each(testBackends())('enrolment by one-time code on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  /** Added to the clock: codes expire. Only ever moves forward. */
  let later = 0;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database, { now: () => new Date(Date.now() + later) });
    const people: [string, string][] = [
      ['user:ops', 'admin'],
      ['user:root', 'admin'],
      ['agent:billing', 'gateway'],
      ['user:alice', 'approver'],
      ['user:bob', 'approver'],
    ];
    for (const [identity, role] of people) {
      await issueApiKey(ledger, {
        id: `key_${identity}`,
        keyHash: randomBytes(32).toString('hex'),
        identity,
        roles: [role],
        scopes: [],
        environments: null,
        logs: null,
        createdBy: OPERATOR_ACTOR,
      });
    }
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  const issue = (identity = 'user:alice', issuedBy = 'user:ops') =>
    issueEnrolmentCode(ledger, { identity, issuedBy });
  const enrol = (
    key: AuthorKey,
    code: string,
    proof = proofOf(key, 'user:alice', code),
    identity = 'user:alice',
  ) => enrolWithCode(ledger, { identity, publicKey: publicText(key), code, proof });
  const head = async () => (await ledger.head(SYSTEM_LOG))?.seq;
  const live = async (key: AuthorKey) =>
    (await currentKeyHistory(database)).signingKeys
      .liveKeysOf('user:alice', Date.now() + later)
      .some((k) => k.keyId === key.keyId);
  /** The rules verification reports the `system` log's event for `entity` breaking. */
  const reported = async (entity: string) =>
    (await verifyBothWays(database, { log: SYSTEM_LOG })).failures
      .filter((f) => f.code === 'RECORD_RULE_VIOLATION' && f.id === entity)
      .map((f) => f.rule);
  /** What the runtime role can append: a self-enrolment in anyone's name, with what it likes. */
  const forge = (
    key: AuthorKey,
    fields: { code: string; commitment?: string; proof?: unknown; actor?: string },
  ) =>
    ledger.append({
      log: SYSTEM_LOG,
      kind: SIGNING_KEY_ENROLLED,
      entity: key.keyId,
      actor: fields.actor ?? 'user:alice',
      payload: {
        key_id: key.keyId,
        identity: 'user:alice',
        public_key: publicText(key),
        enrolled_by: fields.actor ?? 'user:alice',
        code: fields.code,
        code_commitment: fields.commitment ?? enrolmentCodeCommitment(fields.code),
        ...(fields.proof === undefined ? {} : { proof: fields.proof }),
      },
    });
  /** The new key's proof as the event keeps it, over `commitment` (by default the code's own). */
  const proofEnvelope = (key: AuthorKey, code: string, commitment = enrolmentCodeCommitment(code)) => {
    const statement = authorStatement(
      SYSTEM_LOG,
      ENROL_BY_CODE_ACTION,
      'user:alice',
      enrolByCodeClaims({ identity: 'user:alice', public_key: publicText(key), code_commitment: commitment }),
    );
    return attachSignature(statement, detached(detachedSignature(signAuthorStatement(statement, key))));
  };

  it('the log holds the code’s commitment, never the code', async () => {
    const { code, code_commitment } = await issue();
    const [event] = await ledger.events(SYSTEM_LOG, { after: (await head())! - 1 });
    expect(event!.entity).toBe(code_commitment);
    expect(code_commitment).toBe(enrolmentCodeCommitment(code));
    expect(event!.payload).not.toContain(code);
    expect(code).toMatch(/^[0-9a-f]{8}(-[0-9a-f]{8}){3}$/);
  });

  it('a key enrolled by its owner with a live code counts, and verifies', async () => {
    const key = generateAuthorKey();
    const { code, code_commitment } = await issue();
    const enrolled = await enrol(key, code);
    expect(enrolled).toMatchObject({ key_id: key.keyId, enrolled_by: 'user:alice', code, code_commitment });
    expect(await live(key)).toBe(true);
    expect(await reported(key.keyId)).toEqual([]);
    expect(await reported(code_commitment)).toEqual([]);
  });

  it('a code enrols one key: used again it is refused (ENROLMENT_CODE_USED); forged, reported', async () => {
    const { code } = await issue();
    await enrol(generateAuthorKey(), code);
    const second = generateAuthorKey();
    const before = await head();
    expect(await codeOf(enrol(second, code))).toBe('ENROLMENT_CODE_USED');
    expect(await head()).toBe(before);
    await forge(second, { code, proof: proofEnvelope(second, code) });
    expect(await live(second)).toBe(false);
    expect(await reported(second.keyId)).toEqual(['SIGNING_KEY_ENROLLER_FORBIDDEN']);
  });

  it('a wrong code is refused (ENROLMENT_CODE_INVALID); a forged one is reported', async () => {
    const { code_commitment } = await issue();
    const key = generateAuthorKey();
    const before = await head();
    expect(await codeOf(enrol(key, 'not-the-code'))).toBe('ENROLMENT_CODE_INVALID');
    expect(await head()).toBe(before);
    await forge(key, {
      code: 'not-the-code',
      commitment: code_commitment,
      proof: proofEnvelope(key, 'not-the-code', code_commitment),
    });
    expect(await live(key)).toBe(false);
    expect(await reported(key.keyId)).toEqual(['SIGNING_KEY_ENROLLER_FORBIDDEN']);
  });

  it('a code issued for someone else is refused (ENROLMENT_CODE_INVALID); forged, reported', async () => {
    const { code } = await issue('user:bob');
    const key = generateAuthorKey();
    expect(await codeOf(enrol(key, code))).toBe('ENROLMENT_CODE_INVALID');
    await forge(key, { code, proof: proofEnvelope(key, code) });
    expect(await live(key)).toBe(false);
    expect(await reported(key.keyId)).toEqual(['SIGNING_KEY_ENROLLER_FORBIDDEN']);
  });

  it('without the new key’s proof it is refused (ENROLMENT_PROOF_INVALID); forged, reported, the code spent', async () => {
    const { code } = await issue();
    const key = generateAuthorKey();
    const other = generateAuthorKey();
    const before = await head();
    expect(await codeOf(enrol(key, code, proofOf(key, 'user:alice', code, other)))).toBe(
      'ENROLMENT_PROOF_INVALID',
    );
    expect(await codeOf(enrol(key, code, proofOf(other, 'user:alice', code)))).toBe(
      'ENROLMENT_PROOF_INVALID',
    );
    expect(await head()).toBe(before);
    await forge(key, { code });
    expect(await live(key)).toBe(false);
    expect(await reported(key.keyId)).toEqual(['SIGNING_KEY_ENROLLER_FORBIDDEN']);
    // The forged event revealed the code: anyone could use it now, so no one can.
    expect(await codeOf(enrol(generateAuthorKey(), code))).toBe('ENROLMENT_CODE_USED');
  });

  it('a code revealed by any enrolment event is spent, even one that names no valid key', async () => {
    const { code } = await issue();
    const key = generateAuthorKey();
    await ledger.append({
      log: SYSTEM_LOG,
      kind: SIGNING_KEY_ENROLLED,
      entity: key.keyId,
      actor: 'user:alice',
      payload: { key_id: key.keyId, identity: 'user:alice', public_key: 'ed25519:AAAA', code },
    });
    expect(await reported(key.keyId)).toEqual(['SIGNATURE_MALFORMED']);
    expect(await codeOf(enrol(generateAuthorKey(), code))).toBe('ENROLMENT_CODE_USED');
  });

  it('a self-enrolment written in another actor’s name is reported', async () => {
    const { code } = await issue();
    const key = generateAuthorKey();
    await forge(key, { code, proof: proofEnvelope(key, code), actor: 'user:ops' });
    expect(await live(key)).toBe(false);
    expect(await reported(key.keyId)).toEqual(['SIGNING_KEY_ENROLLER_FORBIDDEN']);
  });

  it('a code issued by someone who could not enrol keys is reported and enrols nothing', async () => {
    const { code, code_commitment } = await issue('user:alice', 'agent:billing');
    expect(await reported(code_commitment)).toEqual(['SIGNING_KEY_ENROLLER_FORBIDDEN']);
    expect(await codeOf(enrol(generateAuthorKey(), code))).toBe('ENROLMENT_CODE_INVALID');
  });

  it('an admin holding a signing key signs each code; a signed request issues one code', async () => {
    const root = generateAuthorKey();
    await enrollSigningKey(ledger, {
      identity: 'user:root',
      publicKey: publicText(root),
      enrolledBy: OPERATOR_ACTOR,
    });
    const unsigned = await issue('user:alice', 'user:root');
    expect(await reported(unsigned.code_commitment)).toEqual(['SIGNATURE_MISSING']);
    const signature = signAuthorStatement(
      authorStatement(SYSTEM_LOG, ENROLMENT_CODE_ACTION, 'user:root', { identity: 'user:alice' }),
      root,
    );
    const signed = await issueEnrolmentCode(ledger, {
      identity: 'user:alice',
      issuedBy: 'user:root',
      signature,
    });
    expect(await reported(signed.code_commitment)).toEqual([]);
    const before = await head();
    expect(
      await codeOf(issueEnrolmentCode(ledger, { identity: 'user:alice', issuedBy: 'user:root', signature })),
    ).toBe('SIGNATURE_REPLAYED');
    expect(await head()).toBe(before);
    const replayed = await ledger.append({
      log: SYSTEM_LOG,
      kind: 'signing_key.enrolment_code',
      entity: enrolmentCodeCommitment('known-to-the-runtime-role'),
      actor: 'user:root',
      payload: {
        identity: 'user:alice',
        code_commitment: enrolmentCodeCommitment('known-to-the-runtime-role'),
        expires_at: new Date(Date.now() + later + 60_000).toISOString(),
        issued_by: 'user:root',
        signature,
      },
    });
    expect(await reported(replayed.entity)).toEqual(['SIGNATURE_REPLAYED']);
    expect(await codeOf(enrol(generateAuthorKey(), 'known-to-the-runtime-role'))).toBe(
      'ENROLMENT_CODE_INVALID',
    );
  });

  // Last: the clock moves a day on.
  it('an expired code is refused (ENROLMENT_CODE_EXPIRED); forged, reported', async () => {
    const { code } = await issue();
    later += ENROLMENT_CODE_TTL_MS + 1000;
    const key = generateAuthorKey();
    expect(await codeOf(enrol(key, code))).toBe('ENROLMENT_CODE_EXPIRED');
    await forge(key, { code, proof: proofEnvelope(key, code) });
    expect(await live(key)).toBe(false);
    expect(await reported(key.keyId)).toEqual(['SIGNING_KEY_ENROLLER_FORBIDDEN']);
  });
});
