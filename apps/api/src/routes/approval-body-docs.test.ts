import { readFileSync } from 'node:fs';
import { testBackends } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../testing/app-harness';

// Docs that show a request body are tested: the gateway README's approval must be one the
// server takes, and keep what it says it keeps.
const readme = readFileSync(new URL('../../../mcp-gateway/README.md', import.meta.url), 'utf8');
const shownBody = /\/v1\/approvals\/<request_id>\/approve[\s\S]*?-d '(\{[^']*\})'/.exec(readme)?.[1];

describe.each(testBackends())('the approval body the gateway README shows, on $name', ({ open }) => {
  let h: Harness;
  let gateway: string;
  let approver: string;
  let n = 0;

  beforeAll(async () => {
    h = await createHarness({ open });
    const admin = await h.keyFor('user:root', ['admin']);
    gateway = await h.keyFor('agent:trial', ['gateway']);
    approver = await h.keyFor('user:approver', ['approver']);
    const tool = {
      server_id: 'savings',
      tool_name: 'get_balance',
      side_effect: 'read_only',
      approval_required: true,
    };
    expect((await h.call('POST', '/v1/tools', { key: admin, body: tool })).status).toBe(201);
  });
  afterAll(async () => {
    await h.close();
  });

  /** A proposal of the README's savings__get_balance call, waiting for an approval; its request id. */
  async function pendingRequest(): Promise<string> {
    n++;
    const proposed = await h.json('POST', '/v1/proposals', gateway, {
      idempotency_key: `readme-${n}`,
      action: 'savings.get_balance',
      server_id: 'savings',
      tool_name: 'get_balance',
      target: { kind: 'account', id: 'acct-1', env: 'production' },
      arguments: { account: 'acct-1', n },
      side_effect: 'read_only',
    });
    expect(proposed.status).toBe(201);
    return proposed.body.approval.id as string;
  }

  describe('when an approver posts it', () => {
    it('approves once and keeps the comment with the approval', async () => {
      expect(shownBody).toBeDefined();
      const body = JSON.parse(shownBody!) as { comment: string; validity: string };
      const request = await pendingRequest();
      const approved = await h.json('POST', `/v1/approvals/${request}/approve`, approver, body);
      expect(approved.status).toBe(200);
      const read = await h.json('GET', `/v1/approvals/${request}`, approver);
      expect(read.body).toMatchObject({
        status: 'approved',
        resolution: { comment: body.comment, validity: 'once' },
      });
    });
  });

  describe('when the body is left out, or names a field the README does not', () => {
    it('approves without a comment, and refuses the unknown field with 400 writing nothing', async () => {
      const bare = await pendingRequest();
      expect((await h.json('POST', `/v1/approvals/${bare}/approve`, approver)).status).toBe(200);
      expect((await h.json('GET', `/v1/approvals/${bare}`, approver)).body.resolution.comment).toBeNull();

      const other = await pendingRequest();
      const refused = await h.json('POST', `/v1/approvals/${other}/approve`, approver, { note: 'x' });
      expect(refused.status).toBe(400);
      expect(refused.body.error.code).toMatch(/^[A-Z_]+$/);
      expect((await h.json('GET', `/v1/approvals/${other}`, approver)).body.status).toBe('pending');
    });
  });

  describe('when it denies with a comment', () => {
    it('keeps the comment with the denial', async () => {
      const request = await pendingRequest();
      const denied = await h.json('POST', `/v1/approvals/${request}/deny`, approver, {
        comment: 'not today',
      });
      expect(denied.status).toBe(200);
      const read = await h.json('GET', `/v1/approvals/${request}`, approver);
      expect(read.body).toMatchObject({ status: 'denied', resolution: { comment: 'not today' } });
    });
  });
});
