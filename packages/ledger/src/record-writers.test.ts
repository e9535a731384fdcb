import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from './database';
import { issueApiKey, revokeApiKey } from './keys/api-keys';
import { OPERATOR_ACTOR } from './keys/key-history';
import { createLedger, type Ledger } from './ledger';
import { refund, refundTool } from './records/__fixtures__/refund';
import { toolCodec } from './records/codec';
import { createRecords, type RecordContext, type Records } from './records/create-records';
import type { ToolRecord } from './records/types';
import { tools } from './schema/records';
import { verifyBothWays } from './tamper-testing';
import { testBackends } from './testing';
import type { LogVerificationReport } from './verify-chain';

/**
 * Records appended as the runtime database role can append them: through the records service
 * (every event with its row, every record rule kept) in the name of an actor the server would
 * not have let write them. `verifyChain` must name each such event, its table and its actor,
 * once the `system` log holds keys, and pass what the server writes for its key holders.
 */
describe.each(testBackends())('who may write each record, on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let records: Records;
  let logs = 0;
  let n = 0;

  /** Issue a key as the operator's CLI does. */
  const key = (
    identity: string,
    roles: string[],
    limits: { environments?: string[]; logs?: string[] } = {},
  ) =>
    issueApiKey(ledger, {
      id: `key_${++n}`,
      identity,
      roles,
      scopes: [],
      environments: limits.environments ?? null,
      logs: limits.logs ?? null,
      createdBy: OPERATOR_ACTOR,
      keyHash: randomBytes(32).toString('hex'),
    });

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database);
    records = createRecords(ledger);
    await key('user:ops', ['admin']);
    await key('agent:billing', ['gateway'], { environments: ['prod'] });
    await key('agent:elsewhere', ['gateway'], { logs: ['another-log'] });
    await key('user:alice', ['approver']);
    await key('policy:opa', ['policy']);
    await key('user:audrey', ['auditor']);
    const gone = await key('agent:former', ['gateway']);
    await revokeApiKey(ledger, gone!.id, OPERATOR_ACTOR);
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  const as = (log: string, identity: string): RecordContext => ({
    log,
    caller: { identity, scopes: ['payments:write'], environments: ['prod'] },
  });

  /** A fresh log with the refund tool registered by the admin, irreversible: every proposal needs approval. */
  const setup = async () => {
    const log = `writers-${++logs}`;
    await records.registerTool(as(log, 'user:ops'), refundTool({ side_effect: 'irreversible' }));
    return log;
  };

  const verify = (log: string) => verifyBothWays(database, { log });
  /** The writer failures of a report, as [rule, table, actor]. */
  const writers = (report: LogVerificationReport) =>
    report.failures.filter((f) => f.code === 'RECORD_RULE_VIOLATION').map((f) => [f.rule, f.table, f.actor]);
  const seqOf = async (log: string, kind: string) => {
    const events = await ledger.events(log, { limit: 1000 });
    return events.filter((e) => e.kind === kind).at(-1)!.seq;
  };

  it('passes the settle verifier on an unknown outcome, and names it on any other (WRITER_ROLE_FORBIDDEN)', async () => {
    const log = await setup();
    const settler: RecordContext = { log, caller: { identity: 'vouch:settle-verifier' } };
    const executed = async (key: string, outcome: 'unknown' | 'succeeded') => {
      const { proposal, approval } = await records.propose(as(log, 'agent:billing'), refund(key));
      await records.approve(as(log, 'user:alice'), { request_id: approval!.id });
      await records.authorize(as(log, 'agent:billing'), { proposal_id: proposal.id });
      return (await records.observe(as(log, 'agent:billing'), { proposal_id: proposal.id, outcome }))
        .observation;
    };
    const unknown = await executed('settle-1', 'unknown');
    await records.recordVerification(
      settler,
      { observation_id: unknown.id, checks: [] },
      { checksRunByServer: true },
    );
    expect((await verify(log)).failures).toEqual([]);
    // No key holds the server's own identity: the runtime role appending in its name is named.
    const succeeded = await executed('settle-2', 'succeeded');
    await records.recordVerification(settler, { observation_id: succeeded.id, checks: [] });
    expect(writers(await verify(log))).toEqual([
      ['WRITER_ROLE_FORBIDDEN', 'verifications', 'vouch:settle-verifier'],
    ]);
  });

  it('passes what the server writes for its key holders, and says the writers were checked', async () => {
    const log = await setup();
    const { proposal, approval } = await records.propose(as(log, 'agent:billing'), refund('k1'));
    await records.approve(as(log, 'user:alice'), { request_id: approval!.id });
    await records.authorize(as(log, 'agent:billing'), { proposal_id: proposal.id });
    await records.observe(as(log, 'agent:billing'), { proposal_id: proposal.id, outcome: 'succeeded' });
    const report = await verify(log);
    expect(report.failures).toEqual([]);
    expect(report).toMatchObject({ ok: true, writers: 'checked' });
  });

  it('reports an approval given by an identity that holds no key (WRITER_ROLE_FORBIDDEN), which the server acted on', async () => {
    const log = await setup();
    const { proposal, approval } = await records.propose(as(log, 'agent:billing'), refund('k1'));
    await records.approve(as(log, 'user:ghost'), { request_id: approval!.id });
    await records.authorize(as(log, 'agent:billing'), { proposal_id: proposal.id });
    const report = await verify(log);
    expect(report.ok).toBe(false);
    expect(writers(report)).toEqual([['WRITER_ROLE_FORBIDDEN', 'approval_resolutions', 'user:ghost']]);
    expect(report.failures[0]!.seq).toBe(await seqOf(log, 'approval_resolution'));
  });

  it('reports an approval by an auditor, a revoked gateway proposing, a gateway outside its log or environment', async () => {
    const log = await setup();
    const { approval } = await records.propose(as(log, 'agent:billing'), refund('k1'));
    await records.approve(as(log, 'user:audrey'), { request_id: approval!.id });
    await records.propose(as(log, 'agent:former'), refund('k2'));
    await records.propose(as(log, 'agent:elsewhere'), refund('k3'));
    await records.propose(
      as(log, 'agent:billing'),
      refund('k4', { target: { kind: 'payment', id: 'pay_1', env: 'staging' } }),
    );
    expect(writers(await verify(log))).toEqual([
      ['WRITER_ROLE_FORBIDDEN', 'approval_resolutions', 'user:audrey'],
      // The proposal, then its built-in decision and approval request, in the same name.
      ['WRITER_ROLE_FORBIDDEN', 'proposals', 'agent:former'],
      ['WRITER_ROLE_FORBIDDEN', 'approval_requests', 'agent:former'],
      ['WRITER_ROLE_FORBIDDEN', 'decisions', 'agent:former'],
      ['WRITER_LOG_FORBIDDEN', 'proposals', 'agent:elsewhere'],
      ['WRITER_LOG_FORBIDDEN', 'approval_requests', 'agent:elsewhere'],
      ['WRITER_LOG_FORBIDDEN', 'decisions', 'agent:elsewhere'],
      // The tool runs in prod only: the built-in policy denies, and asks nobody's approval.
      ['WRITER_ENVIRONMENT_FORBIDDEN', 'proposals', 'agent:billing'],
      ['WRITER_ENVIRONMENT_FORBIDDEN', 'decisions', 'agent:billing'],
    ]);
  });

  const readOnly = {
    source: 'manual' as const,
    side_effect: 'read_only' as const,
    required_scopes: [],
    approval_required: false,
    replaces_version: 1,
  };

  it.each([
    ['agent:billing', 'TOOL_REGISTRATION_FORBIDDEN'],
    ['user:nobody', 'WRITER_ROLE_FORBIDDEN'],
  ])(
    'reports a tool made read-only by %s (%s), under which the next proposal was allowed',
    async (by, rule) => {
      const log = await setup();
      await records.registerTool(as(log, by), refundTool(readOnly));
      const { decision } = await records.propose(as(log, 'agent:billing'), refund('k1'));
      expect(decision?.verdict).toBe('allow');
      const report = await verify(log);
      expect(writers(report)).toEqual([[rule, 'tools', by]]);
      expect(report.failures[0]!.seq).toBe(await seqOf(log, 'tool'));
    },
  );

  it('passes a gateway registering a tool it discovered, and an admin declaring over it', async () => {
    const log = `writers-${++logs}`;
    await records.registerTool(
      as(log, 'agent:billing'),
      refundTool({ source: 'discovery', side_effect: 'irreversible' }),
    );
    await records.registerTool(as(log, 'user:ops'), refundTool());
    expect((await verify(log)).failures).toEqual([]);
  });

  it("passes a gateway reporting definitions of an admin's tool, and reports one that also changes its class", async () => {
    const log = await setup();
    const discovered = { source: 'discovery' as const, side_effect: 'irreversible' as const };
    await records.registerTool(
      as(log, 'agent:billing'),
      refundTool({ ...discovered, definition_sha256: 'a'.repeat(64) }),
    );
    await records.registerTool(
      as(log, 'agent:billing'),
      refundTool({ ...discovered, definition_sha256: 'b'.repeat(64) }),
    );
    expect((await records.listTools(log))[0]).toMatchObject({
      version: 3,
      source: 'manual',
      definition_sha256: 'a'.repeat(64),
      changed_definition_sha256: 'b'.repeat(64),
    });
    expect((await verify(log)).failures).toEqual([]);
    // The ledger used as a library checks no roles: the chain check is what catches it.
    await records.registerTool(
      as(log, 'agent:billing'),
      refundTool({ ...readOnly, replaces_version: 3, definition_sha256: 'b'.repeat(64) }),
    );
    expect(writers(await verify(log))).toEqual([['TOOL_REGISTRATION_FORBIDDEN', 'tools', 'agent:billing']]);
  });

  it('reports a registration whose version skips (TOOL_VERSION_GAP) or names another registrar (WRITER_MISMATCH)', async () => {
    const log = await setup();
    const [registered] = await records.listTools(log);
    await ledger.transact(log, async (tx) => {
      const tool: ToolRecord = {
        ...registered!,
        id: 'tool_forged',
        version: 5,
        side_effect: 'read_only',
        registered_by: 'user:alice',
        registered_at: tx.now,
      };
      const event = await tx.append({ kind: 'tool', entity: tool.id, actor: 'user:ops', payload: tool });
      await tx.db
        .insert(tools)
        .values(toolCodec.toRow({ logId: log, eventSeq: event.seq }, { ...tool, registered_at: event.at }));
    });
    expect(writers(await verify(log))).toEqual([
      ['TOOL_VERSION_GAP', 'tools', 'user:ops'],
      ['WRITER_MISMATCH', 'tools', 'user:ops'],
    ]);
  });

  it('reports an external decision and a verification by identities that hold no key', async () => {
    const ext = `writers-${++logs}`;
    await records.registerTool(as(ext, 'user:ops'), refundTool());
    const externalRecords = createRecords(ledger, { policy: 'external' });
    const { proposal } = await externalRecords.propose(as(ext, 'agent:billing'), refund('k1'));
    await externalRecords.decide(as(ext, 'user:nobody'), {
      proposal_id: proposal.id,
      verdict: 'allow',
      source: 'opa',
      reasons: [{ code: 'OPA_ALLOW', effect: 'allow', message: 'rule payments.allow matched' }],
    });
    await externalRecords.authorize(as(ext, 'agent:billing'), { proposal_id: proposal.id });
    await externalRecords.observe(as(ext, 'agent:billing'), {
      proposal_id: proposal.id,
      outcome: 'succeeded',
    });
    await externalRecords.recordVerification(as(ext, 'user:nobody'), {
      observation_id: (await externalRecords.story(ext, proposal.id)).observation!.id,
      checks: [{ name: 'refund.recorded', status: 'pass', source: 'ledger-api' }],
    });
    expect(writers(await verify(ext))).toEqual([
      ['WRITER_ROLE_FORBIDDEN', 'decisions', 'user:nobody'],
      ['WRITER_ROLE_FORBIDDEN', 'verifications', 'user:nobody'],
    ]);
  });

  it('passes an external decision by a live policy key', async () => {
    const ext = `writers-${++logs}`;
    await records.registerTool(as(ext, 'user:ops'), refundTool());
    const externalRecords = createRecords(ledger, { policy: 'external' });
    const { proposal } = await externalRecords.propose(as(ext, 'agent:billing'), refund('k1'));
    await externalRecords.decide(as(ext, 'policy:opa'), {
      proposal_id: proposal.id,
      verdict: 'allow',
      source: 'opa',
      reasons: [{ code: 'OPA_ALLOW', effect: 'allow', message: 'rule payments.allow matched' }],
    });
    expect((await verify(ext)).failures).toEqual([]);
  });
});

describe.each(testBackends())('a ledger without keys, on $name', ({ open }) => {
  it('does not judge writers, and says so', async () => {
    const database = await open();
    const ledger = createLedger(database);
    try {
      const records = createRecords(ledger);
      const log = 'library';
      await records.registerTool({ log, caller: { identity: 'user:anyone' } }, refundTool());
      const report = await verifyBothWays(database, { log });
      expect(report).toMatchObject({ ok: true, failures: [], writers: 'not_checked' });
    } finally {
      await ledger.close();
      await database.close();
    }
  });
});
