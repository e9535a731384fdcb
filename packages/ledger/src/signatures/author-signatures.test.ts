import { authorStatement, formatAuthorPublicKey, generateAuthorKey, signAuthorStatement } from '@vouch/audit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeOf } from '../__fixtures__/code-of';
import type { Database } from '../database';
import { OPERATOR_ACTOR } from '../keys/key-history';
import { createLedger, type Ledger } from '../ledger';
import { refund, refundTool } from '../records/__fixtures__/refund';
import { createRecords, type RecordContext, type Records } from '../records/create-records';
import { forgeRecords, verifyBothWays } from '../tamper-testing';
import { testBackends } from '../testing';
import { issueTestKeys, signedBy } from './__fixtures__/signing';
import { enrollSigningKey } from './enrol-signing-key';
import { requireSignatures, revokeSigningKey } from './signing-key-events';

// The runtime role holds only its database credentials: it can append any record, in any
// actor's name, every hash right. Once an author holds an enrolled signing key, a record in
// their name without their signature over what it says is refused by the server when asked
// for, and reported by verification when forged.

describe.each(testBackends())('author signatures on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let records: Records;
  const alice = generateAuthorKey();
  const checker = generateAuthorKey();
  let logs = 0;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database);
    records = createRecords(ledger);
    await issueTestKeys(ledger, [
      ['user:ops', 'admin'],
      ['agent:billing', 'gateway'],
      ['user:alice', 'approver'],
      ['user:bob', 'approver'],
      ['service:checker', 'verifier'],
      ['service:opa', 'policy'],
    ]);
    await enrollSigningKey(ledger, {
      identity: 'user:alice',
      publicKey: formatAuthorPublicKey(alice.publicKey),
      enrolledBy: OPERATOR_ACTOR,
    });
    await enrollSigningKey(ledger, {
      identity: 'service:checker',
      publicKey: formatAuthorPublicKey(checker.publicKey),
      enrolledBy: OPERATOR_ACTOR,
    });
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  const pending = async () => {
    const log = `sig-${++logs}`;
    const agent: RecordContext = { log, caller: { identity: 'agent:billing', scopes: ['payments:write'] } };
    await records.registerTool(
      { log, caller: { identity: 'user:ops' } },
      refundTool({ approval_required: true }),
    );
    const { approval, proposal } = await records.propose(agent, refund('k1'));
    return { log, agent, request: approval!, proposal };
  };
  /** The signature rules verification reports the log breaking (other rules a forgery breaks left out). */
  const rules = async (log: string) =>
    (await verifyBothWays(database, { log })).failures
      .filter((f) => f.code === 'RECORD_RULE_VIOLATION' && String(f.rule).startsWith('SIGN'))
      .map((f) => f.rule);

  it('an enrolled approver who does not sign is refused (SIGNATURE_REQUIRED), nothing written', async () => {
    const { log, request } = await pending();
    const ctx: RecordContext = { log, caller: { identity: 'user:alice' } };
    expect(await codeOf(records.approve(ctx, { request_id: request.id }))).toBe('SIGNATURE_REQUIRED');
    expect((await records.getApproval(log, request.id)).resolution).toBeNull();
  });

  it('a signed approval is recorded with its envelope, and verifies', async () => {
    const { log, request } = await pending();
    const body = { request_id: request.id, validity: 'once' };
    const signature = signedBy(alice, log, 'approval.approve', 'user:alice', body);
    const view = await records.approve({ log, caller: { identity: 'user:alice', signature } }, body);
    expect(view.resolution?.signature?.signatures[0]?.keyid).toBe(alice.keyId);
    expect(await rules(log)).toEqual([]);
    // The gateway and the registrar hold no signing key: the proposal and the tool's
    // registration are counted unsigned, and allowed.
    expect((await verifyBothWays(database, { log })).authors).toEqual({ signed: 1, unsigned: 2 });
  });

  it.each([
    ['another request', (id: string) => ({ request_id: `${id}x`, validity: 'once' })],
    ['a deny for an approve', (id: string) => ({ request_id: id })],
  ])('a signature over %s is refused (SIGNATURE_INVALID)', async (_what, claimsOf) => {
    const { log, request } = await pending();
    const action = _what === 'a deny for an approve' ? 'approval.deny' : 'approval.approve';
    const signature = signedBy(alice, log, action, 'user:alice', claimsOf(request.id));
    const ctx = { log, caller: { identity: 'user:alice', signature } };
    expect(await codeOf(records.approve(ctx, { request_id: request.id, validity: 'once' }))).toBe(
      'SIGNATURE_INVALID',
    );
  });

  it("a signature by someone else's key is refused", async () => {
    const { log, request } = await pending();
    const body = { request_id: request.id };
    const signature = signedBy(checker, log, 'approval.approve', 'user:alice', body);
    expect(await codeOf(records.approve({ log, caller: { identity: 'user:alice', signature } }, body))).toBe(
      'SIGNATURE_INVALID',
    );
  });

  it("the runtime role's approval in an enrolled approver's name is reported", async () => {
    const { log, request } = await pending();
    await forgeRecords(ledger, log, (tx, now) => {
      tx.write('approval_resolution', 'user:alice', {
        id: 'res_forged',
        request_id: request.id,
        resolution: 'approved',
        resolver: 'user:alice',
        validity: 'once',
        window_seconds: null,
        window_source: null,
        valid_until: null,
        comment: null,
        resolved_at: now,
      });
    });
    expect(await rules(log)).toEqual(['SIGNATURE_MISSING']);
  });

  it("the server refuses to act on the runtime role's approval in an enrolled approver's name", async () => {
    const { log, agent, request, proposal } = await pending();
    await forgeRecords(ledger, log, (tx, now) => {
      tx.write('approval_resolution', 'user:alice', {
        id: 'res_forged',
        request_id: request.id,
        resolution: 'approved',
        resolver: 'user:alice',
        validity: 'once',
        window_seconds: 3600,
        window_source: 'policy',
        valid_until: new Date(Date.parse(now) + 3_600_000).toISOString(),
        comment: null,
        resolved_at: now,
      });
    });
    const before = ledger.integrityAlarm.alarms().length;
    expect(await codeOf(records.authorize(agent, { proposal_id: proposal.id }))).toBe(
      'RECORD_SIGNATURE_INVALID',
    );
    expect(await codeOf(records.story(log, proposal.id))).toBe('RECORD_SIGNATURE_INVALID');
    expect(ledger.integrityAlarm.alarms().length).toBeGreaterThan(before);
  });

  it('a signed approval authorizes the execution', async () => {
    const { log, agent, request, proposal } = await pending();
    const body = { request_id: request.id };
    await records.approve(
      {
        log,
        caller: {
          identity: 'user:alice',
          signature: signedBy(alice, log, 'approval.approve', 'user:alice', body),
        },
      },
      body,
    );
    expect(await codeOf(records.authorize(agent, { proposal_id: proposal.id }))).toBe('SUCCEEDED');
    expect((await records.story(log, proposal.id)).approval?.status).toBe('used');
  });

  it('a signature Alice gave for one request, on a record for another or turned into a deny, is reported', async () => {
    const { log, agent, request } = await pending();
    const more = async (key: string, amount: number) =>
      (await records.propose(agent, refund(key, { arguments: { amount, currency: 'EUR' } }))).approval!;
    const second = await more('k2', 6);
    // Statements Alice signed and never sent (or sent elsewhere): whoever holds one may try it.
    const envelope = (claims: unknown) =>
      signAuthorStatement(authorStatement(log, 'approval.approve', 'user:alice', claims), alice);
    const answer = (id: string, requestId: string, resolution: 'approved' | 'denied', now: string) => ({
      id,
      request_id: requestId,
      resolution,
      resolver: 'user:alice',
      validity: resolution === 'approved' ? ('once' as const) : null,
      window_seconds: 3600,
      window_source: 'policy',
      valid_until: new Date(Date.parse(now) + 3_600_000).toISOString(),
      comment: null,
      resolved_at: now,
    });
    await forgeRecords(ledger, log, (tx, now) => {
      tx.write('approval_resolution', 'user:alice', {
        ...answer('res_moved', request.id, 'approved', now),
        signature: envelope({ request_id: second.id, validity: 'once' }),
      });
      tx.write('approval_resolution', 'user:alice', {
        ...answer('res_denied', second.id, 'denied', now),
        signature: envelope({ request_id: second.id }),
      });
    });
    expect(await rules(log)).toEqual(['SIGNATURE_CLAIMS_MISMATCH', 'SIGNATURE_MISMATCH']);
  });

  it('one signed statement cannot speak for two records: the database refuses the replay', async () => {
    const { log, agent, proposal, request } = await pending();
    const body = { request_id: request.id };
    await records.approve(
      {
        log,
        caller: {
          identity: 'user:alice',
          signature: signedBy(alice, log, 'approval.approve', 'user:alice', body),
        },
      },
      body,
    );
    await records.authorize(agent, { proposal_id: proposal.id });
    const { observation } = await records.observe(agent, { proposal_id: proposal.id, outcome: 'succeeded' });
    const verification = {
      observation_id: observation.id,
      checks: [{ name: 'refund.recorded', status: 'pass' as const, source: 'billing-ledger' }],
    };
    const signature = signedBy(checker, log, 'verification.record', 'service:checker', verification);
    const { verification: first } = await records.recordVerification(
      { log, caller: { identity: 'service:checker', signature } },
      verification,
    );
    await expect(
      forgeRecords(ledger, log, (tx) => {
        tx.write('verification', 'service:checker', { ...first, id: 'ver_again' });
      }),
    ).rejects.toThrow();
    expect((await records.story(log, proposal.id)).verifications.map((v) => v.id)).toEqual([first.id]);
    expect(await rules(log)).toEqual([]);
  });

  it("the runtime role's verification in an enrolled verifier's name is reported", async () => {
    const { log, agent, proposal, request } = await pending();
    const body = { request_id: request.id };
    await records.approve(
      {
        log,
        caller: {
          identity: 'user:alice',
          signature: signedBy(alice, log, 'approval.approve', 'user:alice', body),
        },
      },
      body,
    );
    await records.authorize(agent, { proposal_id: proposal.id });
    const { observation } = await records.observe(agent, { proposal_id: proposal.id, outcome: 'succeeded' });
    await forgeRecords(ledger, log, (tx, now) => {
      tx.write('verification', 'service:checker', {
        id: 'ver_forged',
        observation_id: observation.id,
        proposal_id: proposal.id,
        checks: [{ name: 'refund.recorded', status: 'pass', source: 'billing-ledger' }],
        status: 'passed',
        verifier: 'service:checker',
        verified_at: now,
        undeclared: [],
      });
    });
    expect(await rules(log)).toEqual(['SIGNATURE_MISSING']);
    // Online too: the story never derives "verified" from it.
    expect(await codeOf(records.story(log, proposal.id))).toBe('RECORD_SIGNATURE_INVALID');
  });

  it('a revoked signing key signs nothing afterwards', async () => {
    const bob = generateAuthorKey();
    const enrolled = await enrollSigningKey(ledger, {
      identity: 'user:bob',
      publicKey: formatAuthorPublicKey(bob.publicKey),
      enrolledBy: OPERATOR_ACTOR,
    });
    await revokeSigningKey(ledger, { keyId: enrolled.key_id, revokedBy: OPERATOR_ACTOR });
    const { log, request } = await pending();
    const body = { request_id: request.id };
    const signature = signedBy(bob, log, 'approval.approve', 'user:bob', body);
    expect(await codeOf(records.approve({ log, caller: { identity: 'user:bob', signature } }, body))).toBe(
      'SIGNATURE_INVALID',
    );
  });

  it('an enrolment by someone who holds no admin key counts for nothing, and is reported', async () => {
    const mallory = generateAuthorKey();
    await enrollSigningKey(ledger, {
      identity: 'user:alice',
      publicKey: formatAuthorPublicKey(mallory.publicKey),
      enrolledBy: 'agent:billing',
    });
    const { log, request } = await pending();
    const body = { request_id: request.id };
    const signature = signedBy(mallory, log, 'approval.approve', 'user:alice', body);
    expect(await codeOf(records.approve({ log, caller: { identity: 'user:alice', signature } }, body))).toBe(
      'SIGNATURE_INVALID',
    );
    expect(await rules('system')).toContain('SIGNING_KEY_ENROLLER_FORBIDDEN');
  });

  // Last: from here on, every author of this database must sign.
  it('once signatures are required, an author without a key is refused too', async () => {
    const { log, request } = await pending();
    await requireSignatures(ledger, OPERATOR_ACTOR);
    const ctx: RecordContext = { log, caller: { identity: 'user:bob' } };
    expect(await codeOf(records.deny(ctx, { request_id: request.id }))).toBe('SIGNATURE_REQUIRED');
  });
});
