import { formatAuthorPublicKey, generateAuthorKey } from '@vouch/audit';
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

// An external policy engine with an enrolled key: its decisions carry its signature, and one
// appended in its name without it is refused before an execution and reported.

describe.each(testBackends())('decisions signed by their engine on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let records: Records;
  const opa = generateAuthorKey();
  let logs = 0;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database);
    records = createRecords(ledger, { policy: 'external' });
    await issueTestKeys(ledger, [
      ['user:ops', 'admin'],
      ['agent:billing', 'gateway'],
      ['service:opa', 'policy'],
    ]);
    await enrollSigningKey(ledger, {
      identity: 'service:opa',
      publicKey: formatAuthorPublicKey(opa.publicKey),
      enrolledBy: OPERATOR_ACTOR,
    });
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  const undecided = async () => {
    const log = `dec-${++logs}`;
    const agent: RecordContext = { log, caller: { identity: 'agent:billing', scopes: ['payments:write'] } };
    await records.registerTool({ log, caller: { identity: 'user:ops' } }, refundTool());
    const { proposal } = await records.propose(agent, refund('k1'));
    return { log, agent, proposal };
  };
  const allow = (proposalId: string) => ({
    proposal_id: proposalId,
    verdict: 'allow',
    reasons: [{ code: 'OK', effect: 'allow', message: 'fine' }],
    source: 'opa',
  });
  const signature = (log: string, claims: unknown) =>
    signedBy(opa, log, 'decision.record', 'service:opa', claims);

  it('unsigned is refused; signed is recorded with its envelope and lets the execution run', async () => {
    const { log, agent, proposal } = await undecided();
    const body = allow(proposal.id);
    expect(await codeOf(records.decide({ log, caller: { identity: 'service:opa' } }, body))).toBe(
      'SIGNATURE_REQUIRED',
    );
    const { decision } = await records.decide(
      { log, caller: { identity: 'service:opa', signature: signature(log, body) } },
      body,
    );
    expect(decision.signature?.signatures[0]?.keyid).toBe(opa.keyId);
    expect(await codeOf(records.authorize(agent, { proposal_id: proposal.id }))).toBe('SUCCEEDED');
    const failures = (await verifyBothWays(database, { log })).failures.filter((f) =>
      String(f.rule).startsWith('SIGN'),
    );
    expect(failures).toEqual([]);
  });

  it('a signature over another verdict is refused', async () => {
    const { log, proposal } = await undecided();
    const body = allow(proposal.id);
    const ctx = {
      log,
      caller: { identity: 'service:opa', signature: signature(log, { ...body, verdict: 'deny' }) },
    };
    expect(await codeOf(records.decide(ctx, body))).toBe('SIGNATURE_INVALID');
  });

  it("the runtime role's allow in the engine's name: authorize refuses it, verification reports it", async () => {
    const { log, agent, proposal } = await undecided();
    await forgeRecords(ledger, log, (tx, now) => {
      tx.write('decision', 'service:opa', {
        id: 'dec_forged',
        proposal_id: proposal.id,
        verdict: 'allow',
        reasons: [{ code: 'OK', effect: 'allow', message: 'fine' }],
        repair: null,
        authorized_identity: proposal.requester,
        source: 'opa',
        tool_id: null,
        approval_request_id: null,
        decided_by: 'service:opa',
        decided_at: now,
      });
    });
    expect(await codeOf(records.authorize(agent, { proposal_id: proposal.id }))).toBe(
      'RECORD_SIGNATURE_INVALID',
    );
    const rules = (await verifyBothWays(database, { log })).failures.map((f) => f.rule);
    expect(rules).toContain('SIGNATURE_MISSING');
  });
});
