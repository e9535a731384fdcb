import { randomBytes } from 'node:crypto';
import { generateNoteKeys, parseSignerKey } from '@vouch/audit';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeOf as outcomeOf } from './__fixtures__/code-of';
import { latestCheckpoint } from './checkpoints/checkpoint-store';
import { logOrigin, signLogCheckpoint } from './checkpoints/sign-log-checkpoint';
import type { Database } from './database';
import { SYSTEM_LOG } from './keys/api-key-events';
import { findApiKeysByHash, issueApiKey, revokeApiKey } from './keys/api-keys';
import { OPERATOR_ACTOR } from './keys/key-history';
import { createLedger, type Ledger } from './ledger';
import { addSeconds } from './policy/approval-validity';
import { evaluatePolicy } from './policy/built-in-policy';
import { refund, refundTool } from './records/__fixtures__/refund';
import { approvalResolutionCodec } from './records/codec';
import { createRecords, type RecordContext, type Records } from './records/create-records';
import { type ProposalInput, parseInput, proposalInputSchema, type ToolInput } from './records/inputs';
import { proposalPayloadHash, proposalPayloadOf } from './records/payload-hash';
import type { Page, ProposalListItem } from './records/record-lists';
import type { RecordTransaction } from './records/record-transaction';
import type { ApprovalResolutionRecord, ProposalRecord } from './records/types';
import { approvalResolutions } from './schema/records';
import { forgeRecords, verifyBothWays } from './tamper-testing';
import { tamper, testBackends } from './testing';
import type { LogVerificationReport } from './verify-chain';

// Attacks an outside auditor would try, one per case, each named after who attacks (the
// threat model in docs/chain.md): the table owner (rights to switch the append-only
// triggers off: `tamper`), the runtime role (INSERT only: plain `insert` statements, every
// trigger and foreign key on), and what each check must then say.

const PREFIX = 'vouch.test/red-team';
const logKey = generateNoteKeys(PREFIX);
const signers = [parseSignerKey(logKey.signerKey)];
const origin = (log: string) => logOrigin(PREFIX, log);

const codes = (report: LogVerificationReport) => report.failures.map((f) => f.code);

describe.each(testBackends())('red team: the ledger on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let records: Records;
  let logs = 0;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database);
    records = createRecords(ledger);
    // The people of every log hold the keys the server would require of them: a verification
    // judges who wrote each record once the system log holds keys (records/check-record-writers.ts).
    const people: [string, string, string[] | null][] = [
      ['user:ops', 'admin', null],
      ['agent:billing', 'gateway', ['prod']],
      ['user:alice', 'approver', null],
      ['service:checker', 'verifier', null],
      ['agent:roaming', 'gateway', null],
    ];
    for (const [identity, role, environments] of people) {
      await issueApiKey(ledger, {
        id: `key_${identity}`,
        keyHash: randomBytes(32).toString('hex'),
        identity,
        roles: [role],
        scopes: [],
        environments,
        logs: null,
        createdBy: OPERATOR_ACTOR,
      });
    }
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  /** A fresh log with the refund tool registered, and the people in it. */
  const setup = async (tool: Partial<ToolInput> = {}) => {
    const log = `red-${++logs}`;
    const ops: RecordContext = { log, caller: { identity: 'user:ops' } };
    const agent: RecordContext = {
      log,
      caller: { identity: 'agent:billing', scopes: ['payments:write'], environments: ['prod'] },
    };
    const alice: RecordContext = { log, caller: { identity: 'user:alice' } };
    await records.registerTool(ops, refundTool(tool));
    return { log, agent, alice };
  };

  const verify = (log: string) => verifyBothWays(database, { log });

  /**
   * What the runtime role (INSERT only) can append: records with their events, field content
   * and rows, exactly as the records service writes them, whatever they say.
   */
  const forge = (log: string, write: (tx: RecordTransaction, now: string) => void | Promise<void>) =>
    forgeRecords(ledger, log, write);
  const seqOf = async (log: string, entity: string) =>
    (await ledger.events(log, { after: 0, limit: 1000 })).find((e) => e.entity === entity)!.seq;
  const alarmsOf = (code: string) => ledger.integrityAlarm.alarms().filter((a) => a.code === code);
  /** A list's items as proposal id and stage, or the code of the refusal an item carries. */
  const listed = (page: Page<ProposalListItem>) =>
    page.items.map((item) =>
      'error' in item
        ? { id: item.proposal_id, error: item.error.code }
        : { id: item.proposal.id, stage: item.stage },
    );
  /** Another refund proposed in `log` (allowed, not executed); its id. */
  const proposeAnother = async (log: string) => {
    const agent: RecordContext = {
      log,
      caller: { identity: 'agent:billing', scopes: ['payments:write'], environments: ['prod'] },
    };
    return (await records.propose(agent, refund('another', { arguments: { amount: 9, currency: 'EUR' } })))
      .proposal.id;
  };
  /** A fresh log with a refund proposed (one declared postcondition) and observed, not yet verified. */
  const observedRefund = async () => {
    const { log, agent } = await setup();
    const { proposal } = await records.propose(
      agent,
      refund('k1', { postconditions: [{ name: 'refund.recorded' }] }),
    );
    await records.authorize(agent, { proposal_id: proposal.id });
    const { observation } = await records.observe(agent, { proposal_id: proposal.id, outcome: 'succeeded' });
    return { log, proposal, observation };
  };

  describe('the table owner deletes the revocation row of a revoked key', () => {
    const keyHash = 'ab'.repeat(32);
    beforeAll(async () => {
      await issueApiKey(ledger, {
        id: 'key_revoked',
        keyHash,
        identity: 'agent:fired',
        roles: ['gateway'],
        scopes: [],
        environments: null,
        logs: null,
        createdBy: OPERATOR_ACTOR,
      });
      await revokeApiKey(ledger, 'key_revoked', OPERATOR_ACTOR);
      await tamper(database, sql`delete from api_key_revocations where key_id = 'key_revoked'`);
    });

    it('the key stays revoked: its api_key.revoked event still revokes it', async () => {
      const found = (await findApiKeysByHash(database, [keyHash], ledger.integrityAlarm)).get(keyHash);
      expect(found?.key.revokedAt).not.toBeNull();
      expect(found?.key.revokedBy).toBe(OPERATOR_ACTOR);
    });

    it('a verification of the system log reports the event whose row is gone', async () => {
      const report = await verify(SYSTEM_LOG);
      expect(report.failures).toEqual([
        expect.objectContaining({ code: 'REVOCATION_MISMATCH', table: 'api_key_revocations' }),
      ]);
    });
  });

  describe('the table owner deletes the use of a single-use approval', () => {
    it('a verification reports the use event whose row is gone', async () => {
      const { log, agent, alice } = await setup({ side_effect: 'irreversible' });
      const first = await records.propose(agent, refund('k1'));
      await records.approve(alice, { request_id: first.approval!.id, validity: 'once' });
      const { approval_use: use } = await records.authorize(agent, { proposal_id: first.proposal.id });
      await tamper(database, sql`delete from approval_uses where log_id = ${log} and id = ${use!.id}`);
      expect((await verify(log)).failures).toEqual([
        expect.objectContaining({ code: 'RECORD_MISMATCH', table: 'approval_uses', id: use!.id }),
      ]);
    });

    // The reads that decide "already used" look for the `approval_use` events of the request
    // too (records/event-subjects.ts): a use whose row is gone still consumes the approval.
    it('refuses a second execution under the same single-use approval, and raises the alarm', async () => {
      const { log, agent, alice } = await setup({ side_effect: 'irreversible' });
      const first = await records.propose(agent, refund('k1'));
      const second = await records.propose(agent, refund('k2'));
      await records.approve(alice, { request_id: first.approval!.id, validity: 'once' });
      const { approval_use: use } = await records.authorize(agent, { proposal_id: first.proposal.id });
      await records.observe(agent, { proposal_id: first.proposal.id, outcome: 'succeeded' });
      await tamper(database, sql`delete from approval_uses where log_id = ${log} and id = ${use!.id}`);
      const before = alarmsOf('RECORD_MISMATCH').length;
      expect(await outcomeOf(records.authorize(agent, { proposal_id: second.proposal.id }))).toBe(
        'RECORD_INTEGRITY_VIOLATION',
      );
      expect(alarmsOf('RECORD_MISMATCH').slice(before)).toContainEqual(
        expect.objectContaining({ log, table: 'approval_uses' }),
      );
      expect(
        await database.rows(
          sql`select 1 from execution_claims where log_id = ${log} and proposal_id = ${second.proposal.id}`,
        ),
      ).toEqual([]);
    });

    it('refuses the executed proposal again once its use, claim and observation rows are gone', async () => {
      const { log, agent, alice } = await setup({ side_effect: 'irreversible' });
      const { proposal, approval } = await records.propose(agent, refund('k1'));
      await records.approve(alice, { request_id: approval!.id, validity: 'once' });
      await records.authorize(agent, { proposal_id: proposal.id });
      await records.observe(agent, { proposal_id: proposal.id, outcome: 'succeeded' });
      for (const table of ['observations', 'execution_claims', 'approval_uses']) {
        await tamper(database, sql`delete from ${sql.identifier(table)} where log_id = ${log}`);
      }
      expect(await outcomeOf(records.authorize(agent, { proposal_id: proposal.id }))).toBe(
        'RECORD_INTEGRITY_VIOLATION',
      );
      expect(await outcomeOf(records.observe(agent, { proposal_id: proposal.id, outcome: 'failed' }))).toBe(
        'RECORD_INTEGRITY_VIOLATION',
      );
    });
  });

  describe('the table owner deletes an execution claim', () => {
    it('refuses to claim the proposal again, and raises the alarm', async () => {
      const { log, agent } = await setup();
      const { proposal } = await records.propose(agent, refund('k1'));
      const { claim } = await records.authorize(agent, { proposal_id: proposal.id });
      await tamper(database, sql`delete from execution_claims where log_id = ${log} and id = ${claim.id}`);
      const before = alarmsOf('RECORD_MISMATCH').length;
      expect(await outcomeOf(records.authorize(agent, { proposal_id: proposal.id }))).toBe(
        'RECORD_INTEGRITY_VIOLATION',
      );
      expect(alarmsOf('RECORD_MISMATCH').slice(before)).toContainEqual(
        expect.objectContaining({ log, table: 'execution_claims', seq: await seqOf(log, claim.id) }),
      );
    });
  });

  describe('the table owner deletes an observation', () => {
    // As with approval uses: `observationOf(proposal)` finds the observation event whose row
    // is gone, so the proposal does not look unexecuted.
    it('refuses a second observation of the executed proposal, and writes nothing', async () => {
      const { log, agent } = await setup();
      const { proposal } = await records.propose(agent, refund('k1'));
      await records.authorize(agent, { proposal_id: proposal.id });
      const { observation } = await records.observe(agent, {
        proposal_id: proposal.id,
        outcome: 'failed',
      });
      await tamper(database, sql`delete from observations where log_id = ${log} and id = ${observation.id}`);
      const head = (await ledger.events(log, { after: 0, limit: 1000 })).length;
      expect(
        await outcomeOf(records.observe(agent, { proposal_id: proposal.id, outcome: 'succeeded' })),
      ).toBe('RECORD_INTEGRITY_VIOLATION');
      expect(await outcomeOf(records.authorize(agent, { proposal_id: proposal.id }))).toBe(
        'RECORD_INTEGRITY_VIOLATION',
      );
      expect((await ledger.events(log, { after: 0, limit: 1000 })).length).toBe(head);
      expect(alarmsOf('RECORD_MISMATCH')).toContainEqual(
        expect.objectContaining({ log, table: 'observations', seq: await seqOf(log, observation.id) }),
      );
    });

    it('a verification reports the observation event whose row is gone', async () => {
      const { log, agent } = await setup();
      const { proposal } = await records.propose(agent, refund('k1'));
      await records.authorize(agent, { proposal_id: proposal.id });
      const { observation } = await records.observe(agent, { proposal_id: proposal.id, outcome: 'failed' });
      await tamper(database, sql`delete from observations where log_id = ${log} and id = ${observation.id}`);
      expect(codes(await verify(log))).toEqual(['RECORD_MISMATCH']);
    });

    it('a verification reports rows gone from the first and the last page of its stream', async () => {
      const { log, agent } = await setup();
      const first = await records.propose(agent, refund('k1'));
      await records.propose(agent, refund('k2', { arguments: { amount: 6, currency: 'EUR' } }));
      const last = await records.propose(agent, refund('k3', { arguments: { amount: 7, currency: 'EUR' } }));
      await records.authorize(agent, { proposal_id: last.proposal.id });
      const { observation } = await records.observe(agent, {
        proposal_id: last.proposal.id,
        outcome: 'failed',
      });
      await tamper(database, sql`delete from decisions where log_id = ${log} and id = ${first.decision!.id}`);
      await tamper(database, sql`delete from observations where log_id = ${log} and id = ${observation.id}`);
      // Two events a page: the rows are looked up page by page while the events stream by.
      const report = await verifyBothWays(database, { log, pageSize: 2 });
      expect(report.failures.map(({ code, table, id }) => ({ code, table, id }))).toEqual([
        { code: 'RECORD_MISMATCH', table: 'decisions', id: first.decision!.id },
        { code: 'RECORD_MISMATCH', table: 'observations', id: observation.id },
      ]);
    });
  });

  describe('the runtime role (INSERT only) forges rows beside the chain', () => {
    it('cannot bind a second record row to an event another row already names', async () => {
      const { log, agent } = await setup();
      const a = await records.propose(agent, refund('k1'));
      const b = await records.propose(agent, refund('k2', { arguments: { amount: 6, currency: 'EUR' } }));
      const [row] = await database.rows<{ event_seq: number }>(
        sql`select event_seq from decisions where log_id = ${log} and id = ${a.decision!.id}`,
      );
      // A second decision for proposal b, riding on a's decision event: the database refuses it.
      await expect(
        database.rows(sql`insert into decisions (log_id, id, event_seq, proposal_id, verdict, reasons, repair,
              authorized_identity, source, decided_by, decided_at)
            select log_id, 'dec_forged', event_seq, ${b.proposal.id}, verdict, reasons, repair,
              authorized_identity, source, decided_by, decided_at
            from decisions where log_id = ${log} and event_seq = ${row!.event_seq}`),
      ).rejects.toThrow();
    });

    it('a checkpoint row past the head is reported, and so is an unsigned one inside the tree', async () => {
      const { log, agent } = await setup();
      await records.propose(agent, refund('k1'));
      await signLogCheckpoint(database, { log, origin, signers });
      const head = (await ledger.head(log))!.seq;
      const [signed] = await database.rows<{ root_hash: string; note: string }>(
        sql`select root_hash, note from checkpoints where log_id = ${log} and tree_size = ${head}`,
      );
      // Far past the head (it would be served as the latest checkpoint), and at size 1 with
      // the signed note of another size.
      await database.rows(
        sql`insert into checkpoints (log_id, tree_size, root_hash, note, created_at)
            values (${log}, ${head + 1_000}, ${signed!.root_hash}, ${signed!.note}, '2026-01-01T00:00:00.000Z'),
                   (${log}, 1, ${signed!.root_hash}, ${signed!.note}, '2026-01-01T00:00:00.000Z')`,
      );
      const report = await verifyBothWays(database, {
        log,
        checkpointKeys: { verifiers: [logKey.verifierKey], origin: origin(log) },
      });
      expect(report.ok).toBe(false);
      expect(report.failures.filter((f) => f.code === 'CHECKPOINT_MISMATCH').map((f) => f.seq)).toEqual(
        expect.arrayContaining([1, head + 1_000]),
      );
    });

    it('Merkle nodes inserted for leaves not yet appended are reported, and appends refuse to build on them', async () => {
      const { log, agent } = await setup();
      await records.propose(agent, refund('k1'));
      const head = (await ledger.head(log))!.seq;
      await database.rows(
        // (1, ⌊head / 2⌋) pairs the leaf after the head with the one before it, or with the next.
        sql`insert into merkle_nodes (log_id, level, idx, hash) values (${log}, 1, ${Math.floor(head / 2)}, ${'cd'.repeat(32)})`,
      );
      expect(codes(await verify(log))).toContain('MERKLE_BEYOND_CHAIN');
      expect(
        await outcomeOf(records.propose(agent, refund('k2', { arguments: { amount: 6, currency: 'EUR' } }))),
      ).toBe('CHAIN_CONFLICT');
    });
  });

  describe('the table owner flips a failed verification to passed', () => {
    const failedThenFlipped = async () => {
      const { log, proposal, observation } = await observedRefund();
      const verifier: RecordContext = { log, caller: { identity: 'service:checker' } };
      const { verification } = await records.recordVerification(verifier, {
        observation_id: observation.id,
        checks: [{ name: 'refund.recorded', status: 'fail', source: 'billing-ledger' }],
      });
      expect((await records.story(log, proposal.id)).outcome).toBe('verification_failed');
      await tamper(
        database,
        sql`update verifications set status = 'passed', checks = replace(checks, '"fail"', '"pass"')
            where log_id = ${log} and id = ${verification.id}`,
      );
      return { log, proposal, observation, verifier };
    };

    it('the story refuses to show the edited record (RECORD_INTEGRITY_VIOLATION), never "verified"', async () => {
      const { log, proposal } = await failedThenFlipped();
      expect(await outcomeOf(records.story(log, proposal.id))).toBe('RECORD_INTEGRITY_VIOLATION');
    });

    it('a new verification is refused rather than derived from the edited record', async () => {
      const { observation, verifier } = await failedThenFlipped();
      expect(
        await outcomeOf(
          records.recordVerification(verifier, {
            observation_id: observation.id,
            checks: [{ name: 'refund.recorded', status: 'inconclusive', source: 'billing-ledger' }],
          }),
        ),
      ).toBe('RECORD_INTEGRITY_VIOLATION');
    });

    it('a verification reports the edited row', async () => {
      const { log } = await failedThenFlipped();
      expect((await verify(log)).failures).toEqual([
        expect.objectContaining({ code: 'RECORD_MISMATCH', table: 'verifications' }),
      ]);
    });
  });

  describe("the runtime role appends a verification in the audited party's name that supersedes a failure", () => {
    // Every hash right, and a gateway may write verifications; but the audited party may ask
    // for verification, never replace one (SUPERSESSION_FORBIDDEN when it asks the server).
    const overturned = async () => {
      const { log, proposal, observation } = await observedRefund();
      const checker: RecordContext = { log, caller: { identity: 'service:checker' } };
      const { verification: failed } = await records.recordVerification(checker, {
        observation_id: observation.id,
        checks: [{ name: 'refund.recorded', status: 'fail', source: 'billing-ledger' }],
      });
      await forge(log, (tx, now) => {
        tx.write('verification', proposal.requester, {
          id: 'ver_overturn',
          observation_id: observation.id,
          proposal_id: proposal.id,
          checks: [{ name: 'refund.recorded', status: 'pass', source: 'billing-ledger' }],
          status: 'passed',
          verifier: proposal.requester,
          verified_at: now,
          undeclared: [],
          supersedes: [failed.id],
          reason: 'rechecked',
        });
      });
      return { log, proposal };
    };

    it('the story and the list refuse to derive "verified" from it, and raise the integrity alarm', async () => {
      const { log, proposal } = await overturned();
      const before = alarmsOf('RECORD_RULE_VIOLATION').length;
      expect(await outcomeOf(records.story(log, proposal.id))).toBe('SUPERSESSION_INVALID');
      // One bad proposal is an error in its own item; the list goes on.
      const other = await proposeAnother(log);
      expect(listed(await records.listProposals(log))).toEqual([
        { id: proposal.id, error: 'SUPERSESSION_INVALID' },
        { id: other, stage: 'authorized' },
      ]);
      expect(alarmsOf('RECORD_RULE_VIOLATION').slice(before)).toContainEqual(
        expect.objectContaining({ log, table: 'verifications' }),
      );
    });
  });

  describe("the runtime role appends a verification that counts the tool's own reading as a pass", () => {
    const selfVouched = async () => {
      const { log, proposal, observation } = await observedRefund();
      // Every field as the server writes it, by a verifier key holder, but the check's source
      // is the tool's own server, counted as a pass.
      const id = 'ver_forged';
      await forge(log, (tx, now) => {
        tx.write('verification', 'service:checker', {
          id,
          observation_id: observation.id,
          proposal_id: proposal.id,
          checks: [{ name: 'refund.recorded', status: 'pass', source: proposal.server_id }],
          status: 'passed',
          verifier: 'service:checker',
          verified_at: now,
          undeclared: [],
        });
      });
      return { log, proposal, observation, id };
    };

    it('the story refuses to derive "verified" from it, and raises the integrity alarm', async () => {
      const { log, proposal } = await selfVouched();
      const before = alarmsOf('RECORD_RULE_VIOLATION').length;
      expect(await outcomeOf(records.story(log, proposal.id))).toBe('INDEPENDENCE_NOT_ASSESSED');
      expect(listed(await records.listProposals(log))).toEqual([
        { id: proposal.id, error: 'INDEPENDENCE_NOT_ASSESSED' },
      ]);
      expect(alarmsOf('RECORD_RULE_VIOLATION').slice(before)).toEqual([
        expect.objectContaining({ log, table: 'verifications' }),
      ]);
    });

    it('a new verification is refused rather than derived beside it', async () => {
      const { log, observation } = await selfVouched();
      const verifier: RecordContext = { log, caller: { identity: 'service:checker' } };
      expect(
        await outcomeOf(
          records.recordVerification(verifier, {
            observation_id: observation.id,
            checks: [{ name: 'refund.recorded', status: 'fail', source: 'billing-ledger' }],
          }),
        ),
      ).toBe('INDEPENDENCE_NOT_ASSESSED');
    });

    it('a verification reports it at its seq (INDEPENDENCE_NOT_ASSESSED)', async () => {
      const { log, id } = await selfVouched();
      expect((await verify(log)).failures).toEqual([
        expect.objectContaining({
          code: 'RECORD_RULE_VIOLATION',
          rule: 'INDEPENDENCE_NOT_ASSESSED',
          table: 'verifications',
          seq: await seqOf(log, id),
        }),
      ]);
    });
  });

  describe("the runtime role appends a verification that counts another proposal's evidence as a pass", () => {
    // One refund offered as proof of two refunds: the server records the second pass as
    // EVIDENCE_REUSED; a row appended behind its back counts it, and verification says so.
    const reused = async () => {
      const { log, agent } = await setup();
      const observed = async (key: string) => {
        const { proposal } = await records.propose(
          agent,
          refund(key, { postconditions: [{ name: 'refund.recorded' }] }),
        );
        await records.authorize(agent, { proposal_id: proposal.id });
        const { observation } = await records.observe(agent, {
          proposal_id: proposal.id,
          outcome: 'succeeded',
        });
        return { proposal, observation };
      };
      const first = await observed('k1');
      const second = await observed('k2');
      const checker: RecordContext = { log, caller: { identity: 'service:checker' } };
      const check = {
        name: 'refund.recorded',
        status: 'pass',
        source: 'billing-ledger',
        evidence_ref: 'refund:rf_1',
      };
      const { verification } = await records.recordVerification(checker, {
        observation_id: first.observation.id,
        checks: [check],
      });
      expect(verification.status).toBe('passed');
      const id = 'ver_reused';
      await forge(log, (tx, now) => {
        tx.write('verification', 'service:checker', {
          id,
          observation_id: second.observation.id,
          proposal_id: second.proposal.id,
          checks: [check],
          status: 'passed',
          verifier: 'service:checker',
          verified_at: now,
          undeclared: [],
        });
      });
      return { log, id, checker, second };
    };

    it('a verification reports it at its seq (EVIDENCE_REUSED)', async () => {
      const { log, id } = await reused();
      expect((await verify(log)).failures).toEqual([
        expect.objectContaining({
          code: 'RECORD_RULE_VIOLATION',
          rule: 'EVIDENCE_REUSED',
          table: 'verifications',
          seq: await seqOf(log, id),
        }),
      ]);
    });

    it('the story and the next verification refuse to derive a status from it, and raise the integrity alarm', async () => {
      const { log, checker, second } = await reused();
      const before = alarmsOf('RECORD_RULE_VIOLATION').length;
      expect(await outcomeOf(records.story(log, second.proposal.id))).toBe('EVIDENCE_REUSED');
      expect(
        await outcomeOf(
          records.recordVerification(checker, {
            observation_id: second.observation.id,
            checks: [{ name: 'refund.recorded', status: 'fail', source: 'billing-ledger' }],
          }),
        ),
      ).toBe('EVIDENCE_REUSED');
      expect(alarmsOf('RECORD_RULE_VIOLATION').slice(before)).toContainEqual(
        expect.objectContaining({ log, table: 'verifications' }),
      );
    });
  });

  describe('the table owner deletes the evidence of a refused execution', () => {
    it('the story refuses an edited refusal row', async () => {
      const { log, agent } = await setup();
      const { proposal } = await records.propose(
        agent,
        refund('k1', { target: { kind: 'payment', id: 'pay_1', env: 'staging' } }),
      );
      expect(
        await outcomeOf(records.observe(agent, { proposal_id: proposal.id, outcome: 'succeeded' })),
      ).toBe('EXECUTION_NOT_AUTHORIZED');
      // The refusal now says something else was attempted than what was.
      await tamper(
        database,
        sql`update refused_executions set code = 'IDENTITY_MISMATCH' where log_id = ${log} and proposal_id = ${proposal.id}`,
      );
      expect(await outcomeOf(records.story(log, proposal.id))).toBe('RECORD_INTEGRITY_VIOLATION');
    });
  });

  describe('the runtime role appends a record that breaks an invariant, with its event and every hash right', () => {
    // verifyChain proves that every row is the payload of a well-formed event, and re-checks
    // the invariants of docs/design.md over those payloads in chain order
    // (records/record-rules.ts): whoever holds the runtime role's credentials (INSERT only, no
    // trigger touched) can append the event and row the records service would have refused,
    // here a self-approval: the server refuses to act on it, and verification says so.
    it('a verification reports an approval resolved by its own requester', async () => {
      const { log, agent } = await setup({ side_effect: 'irreversible' });
      const { proposal, approval } = await records.propose(agent, refund('k1'));
      await ledger.transact(log, async (tx) => {
        const resolution: ApprovalResolutionRecord = {
          id: 'res_self',
          request_id: approval!.id,
          resolution: 'approved',
          resolver: 'agent:billing',
          validity: 'once',
          window_seconds: 600,
          window_source: 'approver',
          valid_until: addSeconds(tx.now, 600),
          comment: null,
          resolved_at: tx.now,
        };
        const event = await tx.append({
          kind: 'approval_resolution',
          entity: resolution.id,
          actor: 'agent:billing',
          payload: resolution,
        });
        await tx.db
          .insert(approvalResolutions)
          .values(
            approvalResolutionCodec.toRow(
              { logId: log, eventSeq: event.seq },
              { ...resolution, resolved_at: event.at },
            ),
          );
      });
      // Nobody approves their own request: the server will not run the proposal under it, and
      // raises its integrity alarm.
      expect(await outcomeOf(records.authorize(agent, { proposal_id: proposal.id }))).toBe('SELF_APPROVAL');
      expect(ledger.integrityAlarm.alarms()).toContainEqual(
        expect.objectContaining({ code: 'RECORD_RULE_VIOLATION', table: 'approval_resolutions' }),
      );
      const report = await verify(log);
      expect(report.ok).toBe(false);
      expect(report.failures).toEqual([
        expect.objectContaining({
          code: 'RECORD_RULE_VIOLATION',
          rule: 'SELF_APPROVAL',
          table: 'approval_resolutions',
          id: 'res_self',
        }),
        // A gateway holds no approver key either (records/check-record-writers.ts).
        expect.objectContaining({
          code: 'RECORD_RULE_VIOLATION',
          rule: 'WRITER_ROLE_FORBIDDEN',
          table: 'approval_resolutions',
          id: 'res_self',
        }),
      ]);
    });
  });

  describe('the runtime role appends a proposal showing one payload under the hash of another', () => {
    // The approver is shown `{amount: 5}`; the payload hash, the idempotency key and the
    // approval request name the 5000 refund the gateway will ask to run. An approval of what
    // was shown must not become an approval of that.
    const parsed = (input: ProposalInput) =>
      parseInput(proposalInputSchema, input, { what: 'proposal', maxBytes: 65_536 });
    const big = refund('k-big', {
      side_effect: 'irreversible',
      arguments: { amount: 5000, currency: 'EUR' },
    });
    const bigHash = proposalPayloadHash(proposalPayloadOf(parsed(big)));

    /** The forged proposal, its built-in decision and its approval request, as `propose` would write them. */
    const forgeProposal = async (log: string) => {
      const tool = (await records.listTools(log))[0]!;
      await forge(log, (tx, now) => {
        const proposal: ProposalRecord = {
          id: 'prop_forged',
          idempotency_key: 'k-big',
          requester: 'agent:billing',
          requester_scopes: ['payments:write'],
          requester_environments: ['prod'],
          ...proposalPayloadOf(parsed(refund('k-big', { side_effect: 'irreversible' }))),
          payload_hash: bigHash,
          proposed_at: now,
        };
        tx.write('proposal', 'agent:billing', proposal);
        const request = tx.write('approval_request', 'agent:billing', {
          id: 'apr_forged',
          proposal_id: proposal.id,
          payload_hash: bigHash,
          requester: proposal.requester,
          server_id: proposal.server_id,
          tool_name: proposal.tool_name,
          environment: 'prod',
          expires_at: addSeconds(now, 3600),
          max_window_seconds: 3600,
          requested_at: now,
        });
        tx.write('decision', 'agent:billing', {
          id: 'dec_forged',
          proposal_id: proposal.id,
          ...evaluatePolicy({
            proposal,
            tool,
            caller: { scopes: proposal.requester_scopes, environments: proposal.requester_environments },
          }),
          source: 'built_in',
          tool_id: tool.id,
          approval_request_id: request.id,
          decided_by: 'policy:built_in',
          decided_at: now,
        });
      });
    };

    it('the approver is never shown it, and the gateway cannot replay it into an execution of the other payload', async () => {
      const { log, agent, alice } = await setup({ side_effect: 'irreversible' });
      await forgeProposal(log);
      expect(await outcomeOf(records.getApproval(log, 'apr_forged'))).toBe('PROPOSAL_PAYLOAD_MISMATCH');
      expect(await outcomeOf(records.approve(alice, { request_id: 'apr_forged', validity: 'once' }))).toBe(
        'PROPOSAL_PAYLOAD_MISMATCH',
      );
      // The honest gateway proposes the 5000 refund under the same key: not a replay of the forgery.
      expect(await outcomeOf(records.propose(agent, big))).toBe('PROPOSAL_PAYLOAD_MISMATCH');
      expect(
        await outcomeOf(records.authorize(agent, { proposal_id: 'prop_forged', payload_hash: bigHash })),
      ).toBe('PROPOSAL_PAYLOAD_MISMATCH');
      expect(alarmsOf('RECORD_RULE_VIOLATION')).toEqual(
        expect.arrayContaining([expect.objectContaining({ log, table: 'proposals' })]),
      );
    });

    it('an identical proposal under a new key does not wait on the forged approval request', async () => {
      const { log, agent } = await setup({ side_effect: 'irreversible' });
      await forgeProposal(log);
      expect(await outcomeOf(records.propose(agent, { ...big, idempotency_key: 'k-new' }))).toBe(
        'PROPOSAL_PAYLOAD_MISMATCH',
      );
    });

    it('a verification reports the proposal at its seq (PROPOSAL_PAYLOAD_MISMATCH)', async () => {
      const { log } = await setup({ side_effect: 'irreversible' });
      await forgeProposal(log);
      const report = await verify(log);
      expect(report.failures).toEqual([
        expect.objectContaining({
          seq: await seqOf(log, 'prop_forged'),
          code: 'RECORD_RULE_VIOLATION',
          rule: 'PROPOSAL_PAYLOAD_MISMATCH',
          table: 'proposals',
          id: 'prop_forged',
        }),
      ]);
    });
  });

  describe('the runtime role appends a built-in allow for a tool that needs an approval', () => {
    // The writer rule accepts the requester's gateway key for a built-in decision, so the
    // forgery is in the right name; only re-deriving the decision with the server's own
    // `evaluatePolicy` (records/built-in-decisions.ts) tells it is not the policy's.
    const forgeAllow = async (log: string) => {
      const tool = (await records.listTools(log))[0]!;
      const input = parseInput(proposalInputSchema, refund('k-allow'), {
        what: 'proposal',
        maxBytes: 65_536,
      });
      await forge(log, (tx, now) => {
        const proposal: ProposalRecord = {
          id: 'prop_allow',
          idempotency_key: 'k-allow',
          requester: 'agent:billing',
          requester_scopes: ['payments:write'],
          requester_environments: ['prod'],
          ...proposalPayloadOf(input),
          payload_hash: proposalPayloadHash(proposalPayloadOf(input)),
          proposed_at: now,
        };
        tx.write('proposal', 'agent:billing', proposal);
        tx.write('decision', 'agent:billing', {
          id: 'dec_allow',
          proposal_id: proposal.id,
          verdict: 'allow',
          reasons: [
            { code: 'POLICY_SATISFIED', effect: 'allow', message: 'every rule of the policy is met' },
          ],
          repair: null,
          authorized_identity: 'agent:billing',
          source: 'built_in',
          tool_id: tool.id,
          approval_request_id: null,
          decided_by: 'policy:built_in',
          decided_at: now,
        });
      });
    };

    it('the server authorizes nothing under it, and raises the integrity alarm', async () => {
      const { log, agent } = await setup({ approval_required: true });
      await forgeAllow(log);
      expect(await outcomeOf(records.authorize(agent, { proposal_id: 'prop_allow' }))).toBe(
        'DECISION_NOT_DERIVED',
      );
      expect(alarmsOf('RECORD_RULE_VIOLATION')).toEqual(
        expect.arrayContaining([expect.objectContaining({ log, table: 'decisions' })]),
      );
      // Nor does an observation count as an execution under it.
      expect(
        await outcomeOf(records.observe(agent, { proposal_id: 'prop_allow', outcome: 'succeeded' })),
      ).toBe('DECISION_NOT_DERIVED');
      expect((await records.story(log, 'prop_allow')).observation).toBeNull();
    });

    it('a verification reports the decision at its seq (DECISION_NOT_DERIVED)', async () => {
      const { log } = await setup({ approval_required: true });
      await forgeAllow(log);
      const report = await verify(log);
      expect(report.failures).toEqual([
        expect.objectContaining({
          seq: await seqOf(log, 'dec_allow'),
          code: 'RECORD_RULE_VIOLATION',
          rule: 'DECISION_NOT_DERIVED',
          table: 'decisions',
          id: 'dec_allow',
        }),
      ]);
    });

    it('the decisions the server writes, of every verdict and across a re-registration, all verify', async () => {
      const { log, agent } = await setup();
      const ops: RecordContext = { log, caller: { identity: 'user:ops' } };
      const roaming: RecordContext = {
        log,
        caller: { identity: 'agent:roaming', scopes: ['payments:write'], environments: null },
      };
      const unscoped: RecordContext = { log, caller: { ...agent.caller, scopes: [] } };
      await records.registerTool(
        ops,
        refundTool({ tool_name: 'close', side_effect: 'irreversible', dry_run_tool: 'close_preview' }),
      );
      const decided = [
        await records.propose(agent, refund('k-allow')),
        await records.propose(unscoped, refund('k-deny')),
        await records.propose(
          roaming,
          refund('k-pin', { target: { kind: 'payment', id: 'pay_1', env: null } }),
        ),
        await records.propose(agent, refund('k-repair', { tool_name: 'close', side_effect: 'irreversible' })),
        await records.propose(agent, refund('k-human', { side_effect: 'irreversible' })),
      ];
      expect(decided.map(({ decision }) => [decision!.verdict, decision!.repair?.kind ?? null])).toEqual([
        ['allow', null],
        ['deny', null],
        ['deny', 'pin_environment'],
        ['repair', 'dry_run_first'],
        ['require_approval', null],
      ]);
      // The same refund asks a human once the tool is re-registered as approval-required, and
      // not once it is registered read-only again: each decision under the registration of its time.
      await records.registerTool(ops, refundTool({ approval_required: true, replaces_version: 1 }));
      const stricter = await records.propose(agent, refund('k-after'));
      await records.registerTool(ops, refundTool({ side_effect: 'read_only', replaces_version: 2 }));
      const laxer = await records.propose(agent, refund('k-again', { side_effect: 'read_only' }));
      expect([stricter.decision!.verdict, laxer.decision!.verdict]).toEqual(['require_approval', 'allow']);
      // The server re-derives each under the registration in force when it was decided.
      for (const proposal of [decided[0]!.proposal, laxer.proposal]) {
        expect(await outcomeOf(records.authorize(agent, { proposal_id: proposal.id }))).toBe('SUCCEEDED');
      }
      expect((await verify(log)).failures).toEqual([]);
    });
  });

  describe('the runtime role appends an approval answer without bounds: open-ended, ten years, resolved in 2099', () => {
    const forgeEndlessApproval = (log: string, requestId: string) =>
      forge(log, (tx) => {
        tx.write('approval_resolution', 'user:alice', {
          id: 'res_endless',
          request_id: requestId,
          resolution: 'approved',
          resolver: 'user:alice',
          validity: 'window',
          window_seconds: 315_360_000,
          window_source: 'approver',
          valid_until: null,
          comment: null,
          resolved_at: '2099-01-01T00:00:00.000Z',
        });
      });

    it('the server authorizes nothing under it, and raises the integrity alarm', async () => {
      const { log, agent } = await setup({ side_effect: 'irreversible' });
      const { proposal, approval } = await records.propose(
        agent,
        refund('k1', { side_effect: 'irreversible' }),
      );
      await forgeEndlessApproval(log, approval!.id);
      expect(await outcomeOf(records.authorize(agent, { proposal_id: proposal.id }))).toBe(
        'APPROVAL_BOUNDS_VIOLATED',
      );
      expect(alarmsOf('RECORD_RULE_VIOLATION')).toEqual(
        expect.arrayContaining([expect.objectContaining({ log, table: 'approval_resolutions' })]),
      );
      // A later identical proposal opens a request of its own rather than riding on it.
      const again = await records.propose(agent, refund('k2', { side_effect: 'irreversible' }));
      expect(again.approval!.id).not.toBe(approval!.id);
    });

    it('a verification reports the answer at its seq (APPROVAL_BOUNDS_VIOLATED)', async () => {
      const { log, agent } = await setup({ side_effect: 'irreversible' });
      const { approval } = await records.propose(agent, refund('k1', { side_effect: 'irreversible' }));
      await forgeEndlessApproval(log, approval!.id);
      const report = await verify(log);
      expect(report.failures).toEqual([
        expect.objectContaining({
          seq: await seqOf(log, 'res_endless'),
          code: 'RECORD_RULE_VIOLATION',
          rule: 'APPROVAL_BOUNDS_VIOLATED',
          table: 'approval_resolutions',
          id: 'res_endless',
        }),
      ]);
    });
  });

  describe('the runtime role inserts a checkpoint row far past the head, carrying the latest signed note', () => {
    it('it is never served as the latest checkpoint: the log keeps growing in what witnesses read', async () => {
      const { log, agent } = await setup();
      await records.propose(agent, refund('k1'));
      const first = await signLogCheckpoint(database, { log, origin, signers });
      // A row whose columns claim a million events and whose note is the real, signed one:
      // served as the latest, it would freeze every witness at the first size (the note is
      // what a witness reads), while the server goes on signing rows nobody is shown.
      await database.rows(
        sql`insert into checkpoints (log_id, tree_size, root_hash, note, created_at)
            values (${log}, ${first.treeSize + 1_000_000}, ${first.rootHash}, ${first.note}, ${first.createdAt})`,
      );
      await records.propose(agent, refund('k2', { arguments: { amount: 6, currency: 'EUR' } }));
      const second = await signLogCheckpoint(database, { log, origin, signers });
      expect(second.treeSize).toBeGreaterThan(first.treeSize);
      expect(await latestCheckpoint(database, log)).toEqual(second);
      expect(codes(await verify(log))).toContain('CHECKPOINT_MISMATCH');
    });
  });

  describe('the runtime role fills the next tree sizes with checkpoint rows before the server signs them', () => {
    // `storeCheckpoint` inserts with ON CONFLICT DO NOTHING and returns the row already there
    // (an honest second instance may have signed the same size first). Without a check, a row
    // the runtime role inserted at a size the server was about to sign would win: the
    // server's signature dropped, the forged row returned as its own, and, with every next
    // size filled, witnesses shown an old note ("unchanged") while the log grows.
    it('the server refuses to take a forged row at the size it signed for its own', async () => {
      const { log, agent } = await setup();
      await records.propose(agent, refund('k1'));
      const first = await signLogCheckpoint(database, { log, origin, signers });
      await database.rows(
        sql`insert into checkpoints (log_id, tree_size, root_hash, note, created_at)
            select ${log}, ${first.treeSize} + n, ${first.rootHash}, ${first.note}, ${first.createdAt}
            from generate_series(1, 10) as n`,
      );
      await records.propose(agent, refund('k2', { arguments: { amount: 6, currency: 'EUR' } }));
      expect(await outcomeOf(signLogCheckpoint(database, { log, origin, signers }))).toBe('INTEGRITY_ALARM');
    });
  });

  describe('the table owner respells a JSON column of a record row without changing its parsed value', () => {
    // Reordered keys, whitespace, `5.0`, `5.0000000000000001` (which a double reads as 5, a
    // decimal reader as more), a duplicate key whose last value is the original: the server
    // only shows the parsed value, but psql, a BI export or a non-JS reader reads the text.
    // The codec refuses a JSON column that is not the canonical JSON of what it parses to.
    const respelled = async () => {
      const { log, agent } = await setup();
      const { proposal } = await records.propose(agent, refund('k1'));
      // (A proposal's arguments column holds their field hashes now; its scopes are JSON text too.)
      await tamper(
        database,
        sql`update proposals set requester_scopes = '[ "payments:write" ]'
            where log_id = ${log} and id = ${proposal.id}`,
      );
      return { log, proposal };
    };

    it('a verification reports the respelled row (RECORD_MISMATCH)', async () => {
      const { log, proposal } = await respelled();
      expect((await verify(log)).failures).toEqual([
        expect.objectContaining({ code: 'RECORD_MISMATCH', table: 'proposals', id: proposal.id }),
      ]);
    });

    it('the server refuses to act on it, and raises the alarm', async () => {
      const { log, proposal } = await respelled();
      const agent: RecordContext = {
        log,
        caller: { identity: 'agent:billing', scopes: ['payments:write'], environments: ['prod'] },
      };
      expect(await outcomeOf(records.authorize(agent, { proposal_id: proposal.id }))).toBe(
        'RECORD_INTEGRITY_VIOLATION',
      );
      expect(alarmsOf('RECORD_MISMATCH')).toContainEqual(
        expect.objectContaining({ log, table: 'proposals', seq: await seqOf(log, proposal.id) }),
      );
    });
  });
});
