import { randomBytes } from 'node:crypto';
import {
  type AuthorKey,
  authorStatement,
  detachedSignature,
  formatAuthorPublicKey,
  generateAuthorKey,
  observationClaims,
  proposalClaims,
  signAuthorStatement,
} from '@vouch/audit';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeOf } from '../__fixtures__/code-of';
import type { Database } from '../database';
import { issueApiKey } from '../keys/api-keys';
import { OPERATOR_ACTOR } from '../keys/key-history';
import { createLedger, type Ledger } from '../ledger';
import { refund, refundTool } from '../records/__fixtures__/refund';
import { createRecords, type RecordContext, type Records } from '../records/create-records';
import type { ObservationRecord, ProposalRecord } from '../records/types';
import { redactFields } from '../redaction';
import { forgeRecords, verifyBothWays } from '../tamper-testing';
import { testBackends } from '../testing';
import { enrollSigningKey } from './enrol-signing-key';

// What a gateway writes (its proposals, execution claims and observations) speaks for it:
// once it holds an enrolled signing key, the runtime role can no longer append one in its
// name, nor change what a signed one says, without verification reporting it. The signed
// claims hold `arguments` and `result` only as hashes, so an erasure leaves them verifiable.

const GATEWAY = 'agent:billing';

describe.each(testBackends())('gateway signatures on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let records: Records;
  const gatewayKey = generateAuthorKey();
  let logs = 0;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database);
    records = createRecords(ledger);
    const people: [string, string][] = [
      ['user:ops', 'admin'],
      [GATEWAY, 'gateway'],
      ['user:dpo', 'redactor'],
    ];
    for (const [identity, role] of people) {
      await issueApiKey(ledger, {
        id: `key_${identity}`,
        keyHash: randomBytes(32).toString('hex'),
        identity,
        roles: [role],
        scopes: role === 'gateway' ? ['payments:write'] : [],
        environments: null,
        logs: null,
        createdBy: OPERATOR_ACTOR,
      });
    }
    await enrollSigningKey(ledger, {
      identity: GATEWAY,
      publicKey: formatAuthorPublicKey(gatewayKey.publicKey),
      enrolledBy: OPERATOR_ACTOR,
    });
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  const newLog = async () => {
    const log = `gw-${++logs}`;
    await records.registerTool({ log, caller: { identity: 'user:ops' } }, refundTool());
    return log;
  };
  /** The gateway's context for one request, signed over `claims` as `action` (by `key`). */
  const signed = (
    log: string,
    action: string,
    claims: unknown,
    key: AuthorKey = gatewayKey,
  ): RecordContext => {
    const header = detachedSignature(signAuthorStatement(authorStatement(log, action, GATEWAY, claims), key));
    const [, keyid, sig] = /^keyid=(\S+); sig=(\S+)$/.exec(header)!;
    return {
      log,
      caller: { identity: GATEWAY, scopes: ['payments:write'], signature: { keyid: keyid!, sig: sig! } },
    };
  };
  const json = <T>(value: T) => JSON.parse(JSON.stringify(value)) as Record<string, unknown>;

  /** A proposal, its claim and its observation, each signed by the gateway. */
  const executed = async (log: string, key = 'k1') => {
    const body = json(refund(key));
    const { proposal } = await records.propose(signed(log, 'proposal.propose', proposalClaims(body)), body);
    const authorize = { proposal_id: proposal.id, payload_hash: proposal.payload_hash };
    const { claim } = await records.authorize(signed(log, 'execution.authorize', authorize), authorize);
    const observe = { proposal_id: proposal.id, outcome: 'succeeded', result: { refund: 'rf_1', amount: 5 } };
    const { observation } = await records.observe(
      signed(log, 'execution.observe', observationClaims(observe)),
      observe,
    );
    return { proposal, claim, observation };
  };
  /** The signature rules verification reports the log breaking (other rules a forgery breaks left out). */
  const rules = async (log: string) =>
    (await verifyBothWays(database, { log })).failures
      .filter((f) => f.code === 'RECORD_RULE_VIOLATION' && String(f.rule).startsWith('SIGN'))
      .map((f) => [f.rule, f.table]);
  const seqOf = async (log: string, kind: string, nth: number) =>
    Number(
      (
        await database.rows<{ seq: number }>(
          sql`select seq from audit_events where log_id = ${log} and kind = ${kind} order by seq`,
        )
      )[nth]!.seq,
    );

  it('the enrolled gateway unsigned is refused at propose, authorize and observe, nothing written', async () => {
    const log = await newLog();
    const agent: RecordContext = { log, caller: { identity: GATEWAY, scopes: ['payments:write'] } };
    expect(await codeOf(records.propose(agent, refund('k1')))).toBe('SIGNATURE_REQUIRED');
    const { proposal, observation } = await executed(log, 'k2');
    expect(await codeOf(records.authorize(agent, { proposal_id: proposal.id }))).toBe('SIGNATURE_REQUIRED');
    const observe = { proposal_id: proposal.id, outcome: 'failed' };
    expect(await codeOf(records.observe(agent, observe))).toBe('SIGNATURE_REQUIRED');
    expect((await records.story(log, proposal.id)).observation?.id).toBe(observation.id);
    expect((await records.listProposals(log, {})).items).toHaveLength(1);
  });

  it('signed, each record keeps its envelope, holds no argument or result in clear, and verifies', async () => {
    const log = await newLog();
    const { proposal, claim, observation } = await executed(log);
    for (const record of [proposal, claim, observation])
      expect(record.signature?.signatures[0]?.keyid).toBe(gatewayKey.keyId);
    const statements = [proposal, observation].map((r) =>
      Buffer.from(r.signature!.payload, 'base64').toString(),
    );
    expect(statements.join('\n')).not.toMatch(/rf_1|EUR/);
    expect(await rules(log)).toEqual([]);
  });

  it('a signature over another body is refused (SIGNATURE_INVALID)', async () => {
    const log = await newLog();
    const body = json(refund('k1'));
    const other = proposalClaims({ ...body, arguments: { amount: 500, currency: 'EUR' } });
    expect(await codeOf(records.propose(signed(log, 'proposal.propose', other), body))).toBe(
      'SIGNATURE_INVALID',
    );
  });

  it("the runtime role's proposal and observation in the enrolled gateway's name are reported", async () => {
    const log = await newLog();
    const { proposal, claim, observation } = await executed(log);
    await forgeRecords(ledger, log, (tx) => {
      const { signature: _p, ...unsignedProposal } = proposal;
      tx.write('proposal', GATEWAY, { ...unsignedProposal, id: 'prop_forged', idempotency_key: 'k9' });
      const { signature: _c, ...unsignedClaim } = claim;
      tx.write('execution_claim', GATEWAY, {
        ...unsignedClaim,
        id: 'clm_forged',
        proposal_id: 'prop_forged',
      });
      const { signature: _o, ...unsignedObservation } = observation;
      tx.write('observation', GATEWAY, {
        ...unsignedObservation,
        id: 'obs_forged',
        proposal_id: 'prop_forged',
      });
    });
    expect(await rules(log)).toEqual([
      ['SIGNATURE_MISSING', 'proposals'],
      ['SIGNATURE_MISSING', 'execution_claims'],
      ['SIGNATURE_MISSING', 'observations'],
    ]);
  });

  /**
   * The envelope of a request the gateway signed and sent, as a server under the runtime
   * role's control received it: it may record it saying something else.
   */
  const intercepted = (log: string, action: string, claims: unknown) =>
    signAuthorStatement(authorStatement(log, action, GATEWAY, claims), gatewayKey);
  /** A proposal record for the signed body `k`, as the runtime role writes it, with `over` changed. */
  const recordedProposal = (
    base: ProposalRecord,
    log: string,
    key: string,
    over: Partial<ProposalRecord>,
  ) => {
    const body = json(refund(key));
    return {
      ...base,
      id: `prop_${key}`,
      idempotency_key: key,
      signature: intercepted(log, 'proposal.propose', proposalClaims(body)),
      ...over,
    };
  };
  /** A proposal proposed and authorized (signed), not observed yet. */
  const authorized = async (log: string, key: string) => {
    const body = json(refund(key));
    const { proposal } = await records.propose(signed(log, 'proposal.propose', proposalClaims(body)), body);
    const authorize = { proposal_id: proposal.id };
    await records.authorize(signed(log, 'execution.authorize', authorize), authorize);
    return proposal;
  };
  /** An observation of `proposal` the gateway signed (`succeeded`, `result`), recorded with `over` changed. */
  const recordedObservation = (
    base: ObservationRecord,
    log: string,
    proposal: ProposalRecord,
    over: Partial<ObservationRecord>,
  ) => {
    const body = { proposal_id: proposal.id, outcome: 'succeeded', result: { refund: `rf_${proposal.id}` } };
    return {
      ...base,
      ...body,
      id: `obs_${proposal.id}`,
      signature: intercepted(log, 'execution.observe', observationClaims(body)),
      ...over,
    } as ObservationRecord;
  };

  it('a signed request recorded saying something else is reported', async () => {
    const log = await newLog();
    const { proposal, claim, observation } = await executed(log);
    const [second, third, fourth] = [
      await authorized(log, 'k2'),
      await authorized(log, 'k3'),
      (
        await records.propose(
          signed(log, 'proposal.propose', proposalClaims(json(refund('k4')))),
          json(refund('k4')),
        )
      ).proposal,
    ];
    await forgeRecords(ledger, log, (tx) => {
      // The gateway said `succeeded`: the runtime role records that it failed.
      tx.write('observation', GATEWAY, recordedObservation(observation, log, second, { outcome: 'failed' }));
      // Another result than the one signed.
      tx.write(
        'observation',
        GATEWAY,
        recordedObservation(observation, log, third, { result: { refund: 'rf_x' } }),
      );
      // A signed proposal recorded with another target, and with other arguments.
      tx.write(
        'proposal',
        GATEWAY,
        recordedProposal(proposal, log, 'k5', { target: { ...proposal.target, id: 'pay_2' } }),
      );
      tx.write(
        'proposal',
        GATEWAY,
        recordedProposal(proposal, log, 'k6', { arguments: { amount: 500, currency: 'EUR' } }),
      );
      // An execution claim of another proposal than the one signed.
      tx.write('execution_claim', GATEWAY, { ...claim, id: 'clm_moved', proposal_id: fourth.id });
    });
    expect(await rules(log)).toEqual([
      ['SIGNATURE_CLAIMS_MISMATCH', 'observations'],
      ['SIGNATURE_CLAIMS_MISMATCH', 'observations'],
      ['SIGNATURE_CLAIMS_MISMATCH', 'proposals'],
      ['SIGNATURE_CLAIMS_MISMATCH', 'proposals'],
      ['SIGNATURE_CLAIMS_MISMATCH', 'execution_claims'],
    ]);
  });

  it('an erased argument and result leave the signatures verifiable; the rest of the claims still binds', async () => {
    const log = await newLog();
    const { proposal, observation } = await executed(log);
    const second = await authorized(log, 'k2');
    await forgeRecords(ledger, log, (tx) => {
      tx.write('proposal', GATEWAY, recordedProposal(proposal, log, 'k7', { action: 'refund_all' }));
      tx.write('observation', GATEWAY, recordedObservation(observation, log, second, { outcome: 'failed' }));
    });
    const erase = async (kind: string, field: string, nth: number) =>
      redactFields(ledger, {
        log,
        seq: await seqOf(log, kind, nth),
        fields: [field],
        reason: 'erasure request',
        actor: 'user:dpo',
      });
    // The gateway's own records, and the two recorded saying something else than was signed.
    await erase('proposal', 'amount', 0);
    await erase('observation', 'refund', 0);
    await erase('proposal', 'amount', 2);
    await erase('observation', 'refund', 1);
    expect((await records.story(log, proposal.id)).proposal.redacted).toEqual({ arguments: ['amount'] });
    expect(await rules(log)).toEqual([
      ['SIGNATURE_CLAIMS_MISMATCH', 'proposals'],
      ['SIGNATURE_CLAIMS_MISMATCH', 'observations'],
    ]);
  });
});
