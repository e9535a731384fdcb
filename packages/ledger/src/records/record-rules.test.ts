import type { ChainFailure, StoredEvent } from '@vouch/audit';
import { CLAIM_SWEEPER_IDENTITY } from '@vouch/records';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../database';
import { openDatabase } from '../database';
import { createLedger, type Ledger } from '../ledger';
import { migrate } from '../migrate';
import { refund, refundTool } from './__fixtures__/refund';
import { createRecords, type RecordContext } from './create-records';
import { proposalPayloadHash } from './payload-hash';
import { createRecordRuleCheck } from './record-rules';
import type { ProposalRecord } from './types';

// The events of one real, rule-abiding story (a proposal that needed an approval, was
// approved by someone else, executed once and verified twice, the second superseding the
// first), then forged variants of them: each broken rule is reported with its name, and the
// real story with none. The forgeries need no database: the rules read events only.

let database: Database;
let ledger: Ledger;
let story: StoredEvent[];

beforeAll(async () => {
  database = await openDatabase();
  await migrate(database);
  ledger = createLedger(database);
  const records = createRecords(ledger);
  const log = 'rules';
  const ops: RecordContext = { log, caller: { identity: 'user:ops' } };
  const agent: RecordContext = {
    log,
    caller: { identity: 'agent:billing', scopes: ['payments:write'], environments: ['prod'] },
  };
  const alice: RecordContext = { log, caller: { identity: 'user:alice' } };
  const checker: RecordContext = { log, caller: { identity: 'service:checker' } };
  await records.registerTool(ops, refundTool({ side_effect: 'irreversible' }));
  const { proposal, approval } = await records.propose(
    agent,
    refund('k1', { side_effect: 'irreversible', postconditions: [{ name: 'refund.recorded' }] }),
  );
  await records.approve(alice, { request_id: approval!.id, validity: 'once' });
  await records.authorize(agent, { proposal_id: proposal.id });
  const { observation } = await records.observe(agent, { proposal_id: proposal.id, outcome: 'succeeded' });
  const { verification } = await records.recordVerification(checker, {
    observation_id: observation.id,
    checks: [{ name: 'refund.recorded', status: 'fail', source: 'billing-ledger' }],
  });
  await records.recordVerification(alice, {
    observation_id: observation.id,
    checks: [{ name: 'refund.recorded', status: 'pass', source: 'billing-ledger' }],
    supersedes: [verification.id],
    reason: 'the first read was of a stale replica',
  });
  story = await ledger.events(log, { after: 0, limit: 100 });
});
afterAll(async () => {
  await ledger?.close();
  await database?.close();
});

/** The rules broken by `events`, as `[rule, kind]`. */
function broken(events: readonly StoredEvent[]): Array<[unknown, string]> {
  const failures: ChainFailure[] = [];
  const check = createRecordRuleCheck((f) => failures.push(f));
  for (const event of events) check.add(event);
  for (const f of failures) expect(f.code).toBe('RECORD_RULE_VIOLATION');
  return failures.map((f) => [f.rule, String(f.table)]);
}

const of = (kind: string, nth = 0) => story.filter((e) => e.kind === kind)[nth]!;
const payloadOf = (event: StoredEvent) => JSON.parse(event.payload) as Record<string, unknown>;
/** `event` with its payload (and optionally its actor) changed: what a forger would append. */
const forged = (event: StoredEvent, change: Record<string, unknown>, actor?: string): StoredEvent => ({
  ...event,
  ...(actor ? { actor } : {}),
  payload: JSON.stringify({ ...payloadOf(event), ...change }),
});
/** The story with `event` appended again after `after`, as a new record `id`. */
const withExtra = (after: StoredEvent, extra: StoredEvent): StoredEvent[] => {
  const at = story.indexOf(after) + 1;
  return [...story.slice(0, at), extra, ...story.slice(at)];
};
const replaced = (event: StoredEvent, by: StoredEvent) => story.map((e) => (e === event ? by : e));

describe('the record rules over the chain', () => {
  it('find nothing in a story the server wrote', () => {
    expect(story.map((e) => e.kind)).toEqual([
      'tool',
      'proposal',
      'approval_request',
      'decision',
      'approval_resolution',
      'approval_use',
      'execution_claim',
      'observation',
      'verification',
      'verification',
    ]);
    expect(broken(story)).toEqual([]);
  });

  it('report an approval its own requester gave (SELF_APPROVAL)', () => {
    const resolution = of('approval_resolution');
    const self = forged(resolution, { resolver: 'agent:billing' }, 'agent:billing');
    expect(broken(replaced(resolution, self))).toEqual([['SELF_APPROVAL', 'approval_resolutions']]);
  });

  it('report a second answer to one request (APPROVAL_RESOLVED)', () => {
    const resolution = of('approval_resolution');
    const again = forged(resolution, {
      id: 'res_2',
      resolution: 'denied',
      validity: null,
      window_seconds: null,
      window_source: null,
      valid_until: null,
    });
    expect(broken(withExtra(resolution, { ...again, entity: 'res_2' }))).toEqual([
      ['APPROVAL_RESOLVED', 'approval_resolutions'],
    ]);
  });

  it('report a second decision on one proposal (DECISION_EXISTS)', () => {
    const decision = of('decision');
    const again = forged(decision, { id: 'dec_2', verdict: 'allow' });
    expect(broken(withExtra(decision, { ...again, entity: 'dec_2' }))).toEqual([
      ['DECISION_EXISTS', 'decisions'],
    ]);
  });

  it('report an executable decision that authorizes nobody (IDENTITY_MISMATCH)', () => {
    const decision = of('decision');
    expect(broken(replaced(decision, forged(decision, { authorized_identity: null })))).toEqual(
      expect.arrayContaining([['IDENTITY_MISMATCH', 'decisions']]),
    );
  });

  it('report a use and an execution by another identity than the decision authorized (IDENTITY_MISMATCH)', () => {
    // An engine may name another executor than the requester; then only that one may act.
    const decision = of('decision');
    const external = { source: 'opa', decided_by: 'policy:opa', authorized_identity: 'agent:executor' };
    expect(broken(replaced(decision, forged(decision, external)))).toEqual([
      ['IDENTITY_MISMATCH', 'approval_uses'],
      ['IDENTITY_MISMATCH', 'execution_claims'],
      ['IDENTITY_MISMATCH', 'observations'],
    ]);
  });

  describe('re-derive every decision of the built-in policy (DECISION_NOT_DERIVED)', () => {
    /** The story up to its decision, the decision `change`d. */
    const decided = (change: Record<string, unknown>, before: StoredEvent[] = []) => {
      const decision = of('decision');
      const upTo = story.slice(0, story.indexOf(decision));
      return [...upTo, ...before, forged(decision, change)];
    };
    const satisfied = [
      { code: 'POLICY_SATISFIED', effect: 'allow', message: 'every rule of the policy is met' },
    ];

    it('report an allow of a proposal the policy sends to a human', () => {
      const forgedAllow = decided({ verdict: 'allow', reasons: satisfied, approval_request_id: null });
      expect(broken(forgedAllow)).toEqual([['DECISION_NOT_DERIVED', 'decisions']]);
    });

    it('report reasons, an executor or a tool the policy did not give', () => {
      for (const change of [
        { reasons: [] },
        { authorized_identity: 'agent:executor' },
        { tool_id: 'tool_other' },
        { repair: null, verdict: 'require_approval', reasons: [...satisfied] },
      ]) {
        expect(broken(decided(change))).toContainEqual(['DECISION_NOT_DERIVED', 'decisions']);
      }
    });

    it('report a decision under a registry that changed since its proposal, which the server reads once', () => {
      const tool = of('tool');
      const laxer = forged(tool, { id: 'tool_2', version: 2, side_effect: 'read_only' });
      expect(broken(decided({}, [{ ...laxer, entity: 'tool_2' }]))).toEqual([
        ['DECISION_NOT_DERIVED', 'decisions'],
      ]);
    });

    it('report a repair that is not the one the policy gives', () => {
      const tool = of('tool');
      const withDryRun = forged(tool, { dry_run_tool: 'refund_preview' });
      const proposal = payloadOf(of('proposal'));
      const repair = {
        kind: 'dry_run_first',
        action: proposal.action,
        server_id: 'payments',
        tool_name: 'refund_preview',
        target: proposal.target,
        arguments: { amount: 5000, currency: 'EUR' },
        message: 'propose refund_preview first, then this action again with its impact estimate',
      };
      const reasons = [
        ...(payloadOf(of('decision')).reasons as unknown[]),
        {
          code: 'DRY_RUN_FIRST',
          effect: 'repair',
          message: 'run refund_preview first so the approver sees the impact',
          details: { dry_run_tool: 'refund_preview' },
        },
      ];
      const asRepair = { verdict: 'repair', reasons, authorized_identity: null, approval_request_id: null };
      const events = decided({ ...asRepair, repair }).map((e) => (e === tool ? withDryRun : e));
      expect(broken(events)).toEqual([['DECISION_NOT_DERIVED', 'decisions']]);
      const honest = { ...repair, arguments: { amount: 5, currency: 'EUR' } };
      expect(
        broken(decided({ ...asRepair, repair: honest }).map((e) => (e === tool ? withDryRun : e))),
      ).toEqual([]);
    });

    it("leave an external engine's decision to its writer rule: it is not re-derived", () => {
      const external = { source: 'opa', decided_by: 'policy:opa', verdict: 'allow', reasons: satisfied };
      expect(broken(decided(external))).toEqual([]);
    });
  });

  it('report an execution without the approval being used for it (EXECUTION_NOT_AUTHORIZED)', () => {
    const use = of('approval_use');
    const claim = of('execution_claim');
    const observation = of('observation');
    const events = replaced(observation, forged(observation, { approval_use_id: null }))
      .map((e) => (e === claim ? forged(claim, { approval_use_id: null }) : e))
      .filter((e) => e !== use);
    expect(broken(events)).toEqual([
      ['EXECUTION_NOT_AUTHORIZED', 'execution_claims'],
      ['EXECUTION_NOT_AUTHORIZED', 'observations'],
    ]);
  });

  it('report a second execution claim of one proposal (EXECUTION_CLAIM_EXISTS)', () => {
    const claim = of('execution_claim');
    const again = forged(claim, { id: 'clm_2' });
    expect(broken(withExtra(claim, { ...again, entity: 'clm_2' }))).toEqual([
      ['EXECUTION_CLAIM_EXISTS', 'execution_claims'],
    ]);
  });

  describe('when the server records a lapsed claim as unknown', () => {
    const claim = () => payloadOf(of('execution_claim'));
    /** The sweeper's observation in place of the gateway's, `change`d. */
    const swept = (change: Record<string, unknown> = {}) => {
      const observation = of('observation');
      const deadline = String(claim().deadline);
      return replaced(
        observation,
        forged(
          observation,
          {
            executed_by: CLAIM_SWEEPER_IDENTITY,
            outcome: 'unknown',
            result: { reason: 'EXECUTION_CLAIM_LAPSED', claim_id: claim().id },
            observed_at: deadline,
            ...change,
          },
          CLAIM_SWEEPER_IDENTITY,
        ),
      ).filter((e) => e.kind !== 'verification');
    };

    it('finds nothing when the claim had lapsed', () => {
      expect(broken(swept())).toEqual([]);
    });

    it('reports a sweep before the deadline, of another claim, or with an outcome (EXECUTION_CLAIM_LAPSED)', () => {
      const early = new Date(Date.parse(String(claim().deadline)) - 1).toISOString();
      for (const change of [
        { observed_at: early },
        { result: { claim_id: 'clm_other' } },
        { outcome: 'succeeded' },
      ]) {
        expect(broken(swept(change))).toEqual([['EXECUTION_CLAIM_LAPSED', 'observations']]);
      }
    });

    it('reports a sweep of a proposal nobody claimed (EXECUTION_CLAIM_LAPSED)', () => {
      const claimEvent = of('execution_claim');
      expect(broken(swept().filter((e) => e !== claimEvent))).toEqual([
        ['EXECUTION_CLAIM_LAPSED', 'observations'],
      ]);
    });
  });

  it('report an execution by another identity than the authorized one (IDENTITY_MISMATCH)', () => {
    const observation = of('observation');
    const other = forged(observation, { executed_by: 'agent:other' }, 'agent:other');
    expect(broken(replaced(observation, other))).toEqual([['IDENTITY_MISMATCH', 'observations']]);
  });

  it('report a second use of a single-use approval (APPROVAL_CONSUMED)', () => {
    const use = of('approval_use');
    const again = forged(use, { id: 'use_2' });
    expect(broken(withExtra(use, { ...again, entity: 'use_2' }))).toEqual([
      ['APPROVAL_CONSUMED', 'approval_uses'],
    ]);
  });

  it('report a use after the approval window ended (APPROVAL_EXPIRED)', () => {
    const resolution = of('approval_resolution');
    const use = of('approval_use');
    const ended = new Date(Date.parse(String(payloadOf(use).used_at)) - 1000).toISOString();
    const windowed = forged(resolution, {
      validity: 'window',
      window_seconds: 60,
      valid_until: ended,
      resolved_at: new Date(Date.parse(ended) - 60_000).toISOString(),
    });
    const events = replaced(resolution, windowed).map((e) =>
      e === use ? forged(use, { validity: 'window' }) : e,
    );
    expect(broken(events)).toEqual([['APPROVAL_EXPIRED', 'approval_uses']]);
  });

  it('report a use of an approval for another payload (APPROVAL_PAYLOAD_MISMATCH)', () => {
    const proposal = of('proposal');
    const other = forged(proposal, { payload_hash: 'ee'.repeat(32) });
    expect(broken(replaced(proposal, other))).toEqual(
      expect.arrayContaining([
        ['APPROVAL_PAYLOAD_MISMATCH', 'approval_requests'],
        ['APPROVAL_PAYLOAD_MISMATCH', 'approval_uses'],
      ]),
    );
  });

  it('report a proposal whose payload hash is not that of the payload it shows (PROPOSAL_PAYLOAD_MISMATCH)', () => {
    const other = 'ee'.repeat(32);
    const events = story.map((e) =>
      ['proposal', 'approval_request'].includes(e.kind) ? forged(e, { payload_hash: other }) : e,
    );
    expect(of('proposal').fields).toBeDefined();
    expect(broken(events)).toEqual([['PROPOSAL_PAYLOAD_MISMATCH', 'proposals']]);
  });

  it('leave a proposal with an erased argument unchecked: its payload cannot be rehashed', () => {
    const proposal = of('proposal');
    const { amount: _, ...rest } = proposal.fields!;
    const erased = { ...forged(proposal, { payload_hash: 'ee'.repeat(32) }), fields: rest };
    expect(broken(replaced(proposal, erased))).not.toContainEqual(['PROPOSAL_PAYLOAD_MISMATCH', 'proposals']);
  });

  describe('report an approval answer beyond the bounds the server writes (APPROVAL_BOUNDS_VIOLATED)', () => {
    it.each([
      ['open-ended', () => ({ valid_until: null })],
      [
        'a window past the request',
        () => ({ window_seconds: Number(payloadOf(of('approval_request')).max_window_seconds) + 1 }),
      ],
      ['an end that is not resolved_at + window', () => ({ valid_until: '2099-01-01T00:00:00.000Z' })],
      ['answered after the request expired', () => ({ resolved_at: '2099-01-01T00:00:00.000Z' })],
      ['a denial with a window', () => ({ resolution: 'denied', validity: null })],
    ])('%s', (_, change) => {
      const resolution = of('approval_resolution');
      expect(broken(replaced(resolution, forged(resolution, change())))).toContainEqual([
        'APPROVAL_BOUNDS_VIOLATED',
        'approval_resolutions',
      ]);
    });
  });

  it('report a second observation of one proposal (OBSERVATION_EXISTS)', () => {
    const observation = of('observation');
    const again = forged(observation, { id: 'obs_2', outcome: 'failed' });
    expect(broken(withExtra(observation, { ...again, entity: 'obs_2' }))).toEqual([
      ['OBSERVATION_EXISTS', 'observations'],
    ]);
  });

  it('report a check read from the tool itself counted as independent (INDEPENDENCE_NOT_ASSESSED)', () => {
    const verification = of('verification');
    const tool = String(payloadOf(of('proposal')).server_id);
    // The status its checks give, as stored: only the independence of the source is forged.
    const fromTheTool = forged(verification, {
      checks: [{ name: 'refund.recorded', status: 'pass', source: tool }],
      status: 'passed',
    });
    expect(broken(replaced(verification, fromTheTool))).toEqual([
      ['INDEPENDENCE_NOT_ASSESSED', 'verifications'],
    ]);
    // As the server records it: not independent, the verifier's verdict kept aside.
    const assessed = forged(verification, {
      checks: [
        {
          name: 'refund.recorded',
          status: 'inconclusive',
          source: tool,
          reason: 'NOT_INDEPENDENT',
          reported: 'pass',
        },
      ],
      status: 'inconclusive',
    });
    expect(broken(replaced(verification, assessed))).not.toContainEqual([
      'INDEPENDENCE_NOT_ASSESSED',
      'verifications',
    ]);
  });

  it('report a pass from a confusable look-alike of the tool counted as independent (INDEPENDENCE_NOT_ASSESSED)', () => {
    const verification = of('verification');
    const tool = String(payloadOf(of('proposal')).server_id);
    // The tool's server id with its first Latin letter that has a Cyrillic twin swapped for it.
    const cyrillic: Record<string, string> = {
      a: '\u0430',
      c: '\u0441',
      e: '\u0435',
      o: '\u043e',
      p: '\u0440',
    };
    const lookalike = tool.replace(/[aceop]/, (c) => cyrillic[c]!);
    expect(lookalike).not.toBe(tool);
    const fromTheTool = forged(verification, {
      checks: [{ name: 'refund.recorded', status: 'pass', source: lookalike }],
      status: 'passed',
    });
    expect(broken(replaced(verification, fromTheTool))).toEqual([
      ['INDEPENDENCE_NOT_ASSESSED', 'verifications'],
    ]);
  });

  it('accept a fail read from the tool itself: a failure needs no independence', () => {
    const verification = of('verification');
    const tool = String(payloadOf(of('proposal')).server_id);
    const failed = forged(verification, {
      checks: [{ name: 'refund.recorded', status: 'fail', source: tool }],
      status: 'failed',
    });
    expect(broken(replaced(verification, failed))).toEqual([]);
  });

  it('accept a record written before a failure always counted, with the status of its rule', () => {
    const verification = of('verification');
    const tool = String(payloadOf(of('proposal')).server_id);
    // As the server recorded a fail from the tool itself until #32: downgraded, verdict kept.
    const legacy = forged(verification, {
      checks: [
        {
          name: 'refund.recorded',
          status: 'inconclusive',
          source: tool,
          reason: 'NOT_INDEPENDENT',
          reported: 'fail',
        },
      ],
      status: 'inconclusive',
    });
    expect(broken(replaced(verification, legacy))).toEqual([]);
    // Stating the current rule's status is as good.
    expect(
      broken(replaced(verification, forged(verification, { ...payloadOf(legacy), status: 'failed' }))),
    ).toEqual([]);
  });

  it('report an observation of another server or tool than its proposal (OBSERVATION_SCOPE_MISMATCH)', () => {
    const observation = of('observation');
    expect(broken(replaced(observation, forged(observation, { server_id: 'elsewhere' })))).toContainEqual([
      'OBSERVATION_SCOPE_MISMATCH',
      'observations',
    ]);
  });

  it('report a status its checks do not give (STATUS_NOT_DERIVED)', () => {
    const verification = of('verification');
    expect(broken(replaced(verification, forged(verification, { status: 'passed' })))).toEqual([
      ['STATUS_NOT_DERIVED', 'verifications'],
    ]);
  });

  it('report a supersession by the audited party (SUPERSESSION_FORBIDDEN)', () => {
    const second = of('verification', 1);
    const byAgent = forged(second, { verifier: 'agent:billing' }, 'agent:billing');
    expect(broken(replaced(second, byAgent))).toEqual([['SUPERSESSION_FORBIDDEN', 'verifications']]);
  });

  it('report a supersession of what is not there to supersede (SUPERSESSION_INVALID)', () => {
    const second = of('verification', 1);
    expect(broken(replaced(second, forged(second, { supersedes: ['ver_none'] })))).toEqual([
      ['SUPERSESSION_INVALID', 'verifications'],
    ]);
  });

  it('report a record whose event names another actor (ACTOR_MISMATCH)', () => {
    const proposal = of('proposal');
    expect(broken(replaced(proposal, { ...proposal, actor: 'agent:other' }))).toEqual([
      ['ACTOR_MISMATCH', 'proposals'],
    ]);
  });

  it('report a record that names one no earlier event records (REFERENCE_MISSING)', () => {
    const decision = of('decision');
    expect(broken(replaced(decision, forged(decision, { proposal_id: 'prop_none' })))).toEqual(
      expect.arrayContaining([['REFERENCE_MISSING', 'decisions']]),
    );
  });

  describe('rebind the postconditions a tool registration requires (POSTCONDITIONS_NOT_APPLIED)', () => {
    let events: StoredEvent[];
    let proposal: ProposalRecord;
    beforeAll(async () => {
      const records = createRecords(ledger);
      const log = 'rules-required';
      const ops: RecordContext = { log, caller: { identity: 'user:ops' } };
      const agent: RecordContext = {
        log,
        caller: { identity: 'agent:billing', scopes: ['payments:write'], environments: ['prod'] },
      };
      await records.registerTool(
        ops,
        refundTool({
          postconditions: [
            {
              name: 'refund.recorded',
              params: { payment: { pointer: '/target/id' }, cents: { cel: 'arguments.amount * 100.0' } },
              verifiers: ['billing-ledger'],
            },
          ],
        }),
      );
      ({ proposal } = await records.propose(
        agent,
        refund('k1', { postconditions: [{ name: 'email.sent' }] }),
      ));
      events = await ledger.events(log, { after: 0, limit: 100 });
    });

    const required = {
      name: 'refund.recorded',
      params: { payment: 'pay_1', cents: 500 },
      origin: 'registry',
      verifiers: ['billing-ledger'],
    };
    /** The proposal event with other postconditions and its payload hash recomputed, as a forger would. */
    const withPostconditions = (postconditions: unknown[]): StoredEvent[] =>
      events.map((e) => {
        if (e.kind !== 'proposal') return e;
        // The event's arguments may be committed as field hashes: the hash is over the record's own.
        const hash = proposalPayloadHash({ ...proposal, postconditions } as ProposalRecord);
        return { ...e, payload: JSON.stringify({ ...payloadOf(e), postconditions, payload_hash: hash }) };
      });

    it('find nothing in the proposal the server wrote', () => {
      expect(payloadOf(events.find((e) => e.kind === 'proposal')!).postconditions).toEqual([
        required,
        { name: 'email.sent' },
      ]);
      expect(broken(events)).toEqual([]);
    });

    it.each([
      ['dropped', [{ name: 'email.sent' }]],
      ['renamed', [{ ...required, name: 'refund.recorded\u200b' }, { name: 'email.sent' }]],
      [
        'rebound to another payment',
        [{ ...required, params: { payment: 'pay_2', cents: 500 } }, { name: 'email.sent' }],
      ],
      ['stripped of its verifiers', [{ ...required, verifiers: undefined }, { name: 'email.sent' }]],
      [
        'joined by an agent condition passed off as required',
        [required, { name: 'email.sent', origin: 'registry' }],
      ],
      [
        'doubled by an identical agent condition',
        [required, { name: 'refund.recorded', params: required.params }],
      ],
    ])('reports a required postcondition %s', (_, postconditions) => {
      expect(broken(withPostconditions(JSON.parse(JSON.stringify(postconditions))))).toEqual([
        ['POSTCONDITIONS_NOT_APPLIED', 'proposals'],
      ]);
    });
  });
});

describe('the record rules over a claim with precondition checks', () => {
  let claimed: StoredEvent[];
  const pass = { name: 'account.open', status: 'pass', source: 'core-banking' };

  beforeAll(async () => {
    const records = createRecords(ledger);
    const log = 'rules-preconditions';
    const ops: RecordContext = { log, caller: { identity: 'user:ops' } };
    const agent: RecordContext = {
      log,
      caller: { identity: 'agent:billing', scopes: ['payments:write'], environments: ['prod'] },
    };
    await records.registerTool(ops, refundTool());
    const { proposal } = await records.propose(
      agent,
      refund('k1', { preconditions: [{ name: 'account.open' }] }),
    );
    await records.authorize(agent, { proposal_id: proposal.id }, { preconditionChecks: [pass] });
    claimed = await ledger.events(log, { after: 0, limit: 100 });
  });

  const claimOf = () => claimed.find((e) => e.kind === 'execution_claim')!;
  const withClaim = (preconditions: unknown) =>
    claimed.map((e) => (e === claimOf() ? forged(e, { preconditions }) : e));

  it('find nothing in the claim the server wrote, which carries the checks', () => {
    expect(payloadOf(claimOf()).preconditions).toEqual({ status: 'passed', checks: [pass] });
    expect(broken(claimed)).toEqual([]);
  });

  it('report a status its checks do not give (STATUS_NOT_DERIVED)', () => {
    const failing = { ...pass, status: 'fail' };
    expect(broken(withClaim({ status: 'passed', checks: [failing] }))).toEqual([
      ['STATUS_NOT_DERIVED', 'execution_claims'],
      ['PRECONDITION_FAILED', 'execution_claims'],
    ]);
  });

  it('report a claim an unproven precondition should have blocked (PRECONDITION_UNPROVEN)', () => {
    expect(broken(withClaim({ status: 'inconclusive', checks: [] }))).toEqual([
      ['PRECONDITION_UNPROVEN', 'execution_claims'],
    ]);
  });
});
