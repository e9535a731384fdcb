import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeOf as outcomeOf } from '../__fixtures__/code-of';
import type { Database } from '../database';
import { issueApiKey } from '../keys/api-keys';
import { OPERATOR_ACTOR } from '../keys/key-history';
import { createLedger, type Ledger } from '../ledger';
import {
  POLICY_CONFIGURED_KIND,
  POLICY_PINNER,
  type PolicyConfiguration,
} from '../policy/policy-configuration';
import { forgeRecords, verifyBothWays } from '../tamper-testing';
import { testBackends } from '../testing';
import { refund, refundTool } from './__fixtures__/refund';
import { createRecords, type RecordContext, type Records } from './create-records';
import { parseInput, proposalInputSchema } from './inputs';
import { proposalPayloadHash, proposalPayloadOf } from './payload-hash';
import type { ProposalRecord } from './types';

// docs/chain.md, "The policy is pinned": each log records the policy its server enforces, and
// a decision from any other source is refused where the server acts and reported by
// verifyChain, whoever appended it.

const OPA: PolicyConfiguration = {
  engine: 'external',
  decisions: 'asked',
  decision_url: 'https://opa.internal:8181/v1/data/vouch/decision',
  identity: 'service:opa',
  source: 'opa',
};

describe.each(testBackends())('the pinned policy on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let builtIn: Records;
  let engine: Records;
  let logs = 0;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database);
    builtIn = createRecords(ledger, { pinnedPolicy: { engine: 'built_in' } });
    engine = createRecords(ledger, { pinnedPolicy: OPA });
    // Everyone holds the key the server requires: the forged decision is in a live `policy` key's name.
    const people: [string, string][] = [
      ['user:ops', 'admin'],
      ['agent:billing', 'gateway'],
      ['service:opa', 'policy'],
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

  const setup = async (records: Records, tool = refundTool()) => {
    const log = `pin-${++logs}`;
    await records.registerTool({ log, caller: { identity: 'user:ops' } }, tool);
    const agent: RecordContext = {
      log,
      caller: { identity: 'agent:billing', scopes: ['payments:write'], environments: ['prod'] },
    };
    const opa: RecordContext = { log, caller: { identity: 'service:opa' } };
    return { log, agent, opa };
  };

  const allowBy = (proposalId: string, source = 'opa') => ({
    proposal_id: proposalId,
    verdict: 'allow',
    reasons: [{ code: 'OPA_ALLOW', effect: 'allow', message: 'allowed by rego' }],
    source,
  });

  /**
   * What the runtime role can append with its credentials alone: a proposal in the gateway's
   * name and an `allow` labelled external, by the live `policy` key holder `service:opa`.
   */
  const forgeExternalAllow = async (log: string, id: string) => {
    const tool = (await builtIn.listTools(log))[0]!;
    const payload = proposalPayloadOf(
      parseInput(proposalInputSchema, refund(`k-${id}`), { what: 'proposal', maxBytes: 65_536 }),
    );
    await forgeRecords(ledger, log, (tx, now) => {
      const proposal: ProposalRecord = {
        id: `prop_${id}`,
        idempotency_key: `k-${id}`,
        requester: 'agent:billing',
        requester_scopes: ['payments:write'],
        requester_environments: ['prod'],
        ...payload,
        payload_hash: proposalPayloadHash(payload),
        proposed_at: now,
      };
      tx.write('proposal', 'agent:billing', proposal);
      tx.write('decision', 'service:opa', {
        id: `dec_${id}`,
        proposal_id: proposal.id,
        verdict: 'allow',
        reasons: [{ code: 'OPA_ALLOW', effect: 'allow', message: 'allowed by rego' }],
        repair: null,
        authorized_identity: 'agent:billing',
        source: 'opa',
        tool_id: tool.id,
        approval_request_id: null,
        decided_by: 'service:opa',
        decided_at: now,
      });
    });
  };

  const pinsOf = async (log: string) =>
    (await ledger.events(log, { after: 0, limit: 1000 })).filter((e) => e.kind === POLICY_CONFIGURED_KIND);
  const seqOf = async (log: string, entity: string) =>
    (await ledger.events(log, { after: 0, limit: 1000 })).find((e) => e.entity === entity)!.seq;
  const alarmsOf = (log: string) =>
    ledger.integrityAlarm.alarms().filter((a) => a.log === log && a.code === 'RECORD_RULE_VIOLATION');

  describe('on a server of the built-in policy, the runtime role appends an external allow of a tool that needs approval', () => {
    it('authorize, observe and the story refuse it (DECISION_SOURCE_NOT_PINNED) and raise the alarm', async () => {
      const { log, agent } = await setup(builtIn, refundTool({ approval_required: true }));
      const honest = await builtIn.propose(agent, refund('k-honest'));
      expect(honest.decision?.verdict).toBe('require_approval');
      await forgeExternalAllow(log, 'forged');
      expect(await outcomeOf(builtIn.authorize(agent, { proposal_id: 'prop_forged' }))).toBe(
        'DECISION_SOURCE_NOT_PINNED',
      );
      expect(alarmsOf(log)).toEqual([expect.objectContaining({ table: 'decisions' })]);
      expect(
        await outcomeOf(builtIn.observe(agent, { proposal_id: 'prop_forged', outcome: 'succeeded' })),
      ).toBe('DECISION_SOURCE_NOT_PINNED');
      expect(await outcomeOf(builtIn.story(log, 'prop_forged'))).toBe('DECISION_SOURCE_NOT_PINNED');
      // The honest proposal's story still reads.
      expect((await builtIn.story(log, honest.proposal.id)).decision?.verdict).toBe('require_approval');
    });

    it('verifyChain reports it at the decision (RECORD_RULE_VIOLATION, DECISION_SOURCE_NOT_PINNED)', async () => {
      const { log, agent } = await setup(builtIn, refundTool({ approval_required: true }));
      await builtIn.propose(agent, refund('k-honest'));
      await forgeExternalAllow(log, 'forged');
      const report = await verifyBothWays(database, { log });
      expect(report.failures).toEqual([
        expect.objectContaining({
          seq: await seqOf(log, 'dec_forged'),
          code: 'RECORD_RULE_VIOLATION',
          rule: 'DECISION_SOURCE_NOT_PINNED',
          table: 'decisions',
          id: 'dec_forged',
        }),
      ]);
      expect(report.policy).toBe('pinned');
    });

    it('the decision route refuses to record an engine decision at all, writing nothing', async () => {
      const { log, agent, opa } = await setup(builtIn);
      await builtIn.propose(agent, refund('k-honest'));
      const head = (await ledger.head(log))!.seq;
      expect(await outcomeOf(builtIn.decide(opa, allowBy('prop_none')))).toBe('DECISION_SOURCE_NOT_PINNED');
      expect((await ledger.head(log))!.seq).toBe(head);
    });
  });

  describe('a server that asks an external engine', () => {
    it("records the engine's decisions, acts on them, and they verify", async () => {
      const { log, agent, opa } = await setup(engine);
      const { proposal, decision } = await engine.propose(agent, refund('k-1'));
      expect(decision).toBeNull();
      await engine.decide(opa, allowBy(proposal.id));
      expect(await outcomeOf(engine.authorize(agent, { proposal_id: proposal.id }))).toBe('SUCCEEDED');
      const report = await verifyBothWays(database, { log });
      expect(report.failures).toEqual([]);
      expect(report.policy).toBe('pinned');
      const [pin] = await pinsOf(log);
      expect(pin).toMatchObject({ actor: POLICY_PINNER, entity: 'policy' });
      expect(JSON.parse(pin!.payload)).toEqual({ format: 'policy/1', policy: OPA });
    });

    it('refuses a decision by another identity or under another source label', async () => {
      const { agent, opa, log } = await setup(engine);
      const { proposal } = await engine.propose(agent, refund('k-1'));
      expect(await outcomeOf(engine.decide(opa, allowBy(proposal.id, 'rego')))).toBe(
        'DECISION_SOURCE_NOT_PINNED',
      );
      const other: RecordContext = { log, caller: { identity: 'service:other-engine' } };
      expect(await outcomeOf(engine.decide(other, allowBy(proposal.id)))).toBe('DECISION_SOURCE_NOT_PINNED');
    });
  });

  describe('a change of configuration', () => {
    it('is recorded once per change, and each decision is judged by the policy pinned at its time', async () => {
      const { log, agent, opa } = await setup(builtIn);
      const before = await builtIn.propose(agent, refund('k-before'));
      // The same policy again (another process, a restart) pins nothing new.
      await createRecords(ledger, { pinnedPolicy: { engine: 'built_in' } }).propose(agent, refund('k-same'));
      expect(await pinsOf(log)).toHaveLength(1);
      // The server restarts asking OPA: the log is pinned again at its first decision there.
      const after = await engine.propose(agent, refund('k-after'));
      await engine.decide(opa, allowBy(after.proposal.id));
      expect((await pinsOf(log)).map((e) => JSON.parse(e.payload).policy.engine)).toEqual([
        'built_in',
        'external',
      ]);
      // The built-in decision of before is still judged by the built-in pin, the engine's by its own.
      expect(await outcomeOf(engine.authorize(agent, { proposal_id: before.proposal.id }))).toBe('SUCCEEDED');
      expect(await outcomeOf(engine.authorize(agent, { proposal_id: after.proposal.id }))).toBe('SUCCEEDED');
      expect((await verifyBothWays(database, { log })).failures).toEqual([]);
      // Back to the built-in policy (a restart): pinned a third time, and an engine decision
      // after it is refused.
      const restarted = createRecords(ledger, { pinnedPolicy: { engine: 'built_in' } });
      await restarted.propose(agent, refund('k-back'));
      expect(await pinsOf(log)).toHaveLength(3);
      await forgeExternalAllow(log, 'late');
      expect(await outcomeOf(restarted.authorize(agent, { proposal_id: 'prop_late' }))).toBe(
        'DECISION_SOURCE_NOT_PINNED',
      );
      expect((await verifyBothWays(database, { log })).failures).toEqual([
        expect.objectContaining({ rule: 'DECISION_SOURCE_NOT_PINNED', id: 'dec_late' }),
      ]);
    });
  });

  describe('a log with no pin (an old install, the ledger as a library)', () => {
    it('is judged as before, and the report says the policy was not pinned', async () => {
      const library = createRecords(ledger);
      const { log, agent } = await setup(library);
      await library.propose(agent, refund('k-1'));
      await forgeExternalAllow(log, 'unpinned');
      expect(await outcomeOf(library.authorize(agent, { proposal_id: 'prop_unpinned' }))).toBe('SUCCEEDED');
      const report = await verifyBothWays(database, { log });
      expect(report.failures).toEqual([]);
      expect(report.policy).toBe('not_pinned');
      expect(await pinsOf(log)).toEqual([]);
    });
  });

  describe('a pin the runtime role appends that pins nothing readable', () => {
    it('fails closed: no decision after it is acted on, and both are reported', async () => {
      const { log, agent } = await setup(builtIn);
      await builtIn.propose(agent, refund('k-1'));
      await ledger.append({
        log,
        kind: POLICY_CONFIGURED_KIND,
        entity: 'policy',
        actor: POLICY_PINNER,
        payload: { format: 'policy/1', policy: { engine: 'anything' } },
      });
      const { proposal } = await builtIn.propose(agent, refund('k-2'));
      expect(await outcomeOf(builtIn.authorize(agent, { proposal_id: proposal.id }))).toBe(
        'DECISION_SOURCE_NOT_PINNED',
      );
      expect((await verifyBothWays(database, { log })).failures.map((f) => f.rule)).toEqual([
        'POLICY_CONFIGURATION_INVALID',
        'DECISION_SOURCE_NOT_PINNED',
      ]);
    });
  });
});
