import { tamper, testBackends } from '@vouch/ledger/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../testing/app-harness';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

describe.each(testBackends())('a record edited in the database, over HTTP on $name', ({ open }) => {
  let h: Harness;
  const k = {} as Record<'admin' | 'gw' | 'alice' | 'auditor', string>;

  beforeAll(async () => {
    h = await createHarness({ open });
    k.admin = await h.keyFor('user:root', ['admin']);
    k.gw = await h.keyFor('agent:gw', ['gateway']);
    k.alice = await h.keyFor('user:alice', ['approver']);
    k.auditor = await h.keyFor('user:audrey', ['auditor']);
    for (const tool of [
      { server_id: 'pay', tool_name: 'refund', side_effect: 'irreversible' },
      {
        server_id: 'pay',
        tool_name: 'lookup',
        side_effect: 'read_only',
        allowed_environments: ['production'],
      },
    ]) {
      expect((await h.call('POST', '/v1/tools', { key: k.admin, body: tool })).status).toBe(201);
    }
  });
  afterAll(async () => {
    await h?.close();
  });

  const call = (method: string, path: string, key: string, body?: unknown) => h.json(method, path, key, body);

  let n = 0;
  const proposal = (tool: 'refund' | 'lookup', extra: Json = {}) => ({
    idempotency_key: `k-${++n}`,
    action: `pay.${tool}`,
    server_id: 'pay',
    tool_name: tool,
    target: { kind: 'account', id: 'acct-1', env: 'production' },
    arguments: { n },
    side_effect: 'read_only',
    ...extra,
  });

  const seqOf = async (entity: string) =>
    (await h.ledger.events('default', { limit: 10_000 })).find((e) => e.entity === entity)!.seq;

  /** 503 RECORD_INTEGRITY_VIOLATION naming the row, nothing written, and a line in the server log. */
  const expectRefused = async (request: () => Promise<{ status: number; body: Json }>, row: Json) => {
    const before = await h.rowCounts();
    const logged = h.logger.lines.length;
    const answer = await request();
    expect(answer).toMatchObject({
      status: 503,
      body: { error: { code: 'RECORD_INTEGRITY_VIOLATION', details: { log: 'default', ...row } } },
    });
    expect(await h.rowCounts()).toEqual(before);
    expect(h.logger.lines.slice(logged)).toContainEqual(
      expect.objectContaining({ level: 'error', code: 'RECORD_INTEGRITY_VIOLATION' }),
    );
  };

  describe('when an approval resolution is edited from denied to approved', () => {
    it('refuses authorize, the observation and the approval view with 503', async () => {
      const proposed = await call('POST', '/v1/proposals', k.gw, proposal('refund'));
      expect(proposed.body.decision.verdict).toBe('require_approval');
      const denied = await call('POST', `/v1/approvals/${proposed.body.approval.id}/deny`, k.alice);
      const resolution = denied.body.resolution.id as string;
      await tamper(
        h.database,
        sql`update approval_resolutions set resolution = 'approved', validity = 'once' where id = ${resolution}`,
      );
      const row = { table: 'approval_resolutions', id: resolution, seq: await seqOf(resolution) };
      const id = proposed.body.proposal.id;
      await expectRefused(() => call('POST', `/v1/proposals/${id}/authorize`, k.gw), row);
      await expectRefused(
        () => call('POST', '/v1/observations', k.gw, { proposal_id: id, outcome: 'succeeded' }),
        row,
      );
      await expectRefused(() => call('GET', `/v1/approvals/${proposed.body.approval.id}`, k.alice), row);
    });
  });

  describe('when a decision is edited from deny to allow', () => {
    it('refuses the observation with 503', async () => {
      const proposed = await call(
        'POST',
        '/v1/proposals',
        k.gw,
        proposal('lookup', { target: { kind: 'account', id: 'acct-1', env: 'staging' } }),
      );
      expect(proposed.body.decision.verdict).toBe('deny');
      const decision = proposed.body.decision.id as string;
      await tamper(
        h.database,
        sql`update decisions set verdict = 'allow', authorized_identity = 'agent:gw' where id = ${decision}`,
      );
      await expectRefused(
        () =>
          call('POST', '/v1/observations', k.gw, {
            proposal_id: proposed.body.proposal.id,
            outcome: 'succeeded',
          }),
        { table: 'decisions', id: decision, seq: await seqOf(decision), reason: 'RECORD_MISMATCH' },
      );
    });
  });

  describe("when a tool registry entry's side effect is edited", () => {
    it('refuses the proposal with 503', async () => {
      const tool = (await call('GET', '/v1/tools', k.gw)).body.tools.find(
        (t: Json) => t.tool_name === 'refund',
      );
      await tamper(h.database, sql`update tools set side_effect = 'read_only' where id = ${tool.id}`);
      try {
        await expectRefused(() => call('POST', '/v1/proposals', k.gw, proposal('refund')), {
          table: 'tools',
          id: tool.id,
          seq: await seqOf(tool.id),
          reason: 'RECORD_MISMATCH',
        });
      } finally {
        await tamper(h.database, sql`update tools set side_effect = 'irreversible' where id = ${tool.id}`);
      }
    });
  });

  describe('when an approval use is moved to another proposal', () => {
    it('refuses the second execution of a single-use approval with 503', async () => {
      const same = proposal('refund');
      const first = await call('POST', '/v1/proposals', k.gw, same);
      const second = await call('POST', '/v1/proposals', k.gw, {
        ...same,
        idempotency_key: `${same.idempotency_key}-b`,
      });
      expect(second.body.approval.id).toBe(first.body.approval.id);
      await call('POST', `/v1/approvals/${first.body.approval.id}/approve`, k.alice, { validity: 'once' });
      const authorized = await call('POST', `/v1/proposals/${first.body.proposal.id}/authorize`, k.gw);
      const use = authorized.body.approval_use.id as string;
      await tamper(
        h.database,
        sql`update approval_uses set proposal_id = ${second.body.proposal.id} where id = ${use}`,
      );
      await expectRefused(
        () =>
          call('POST', '/v1/observations', k.gw, {
            proposal_id: second.body.proposal.id,
            outcome: 'succeeded',
          }),
        { table: 'approval_uses', id: use, seq: await seqOf(use), reason: 'RECORD_MISMATCH' },
      );
    });
  });
});
