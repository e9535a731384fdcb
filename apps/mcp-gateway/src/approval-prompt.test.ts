import type { ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { askAboutApproval, type SendToAgent } from './approval-prompt';
import { silentLogger } from './logger';

const action = {
  server_id: 'bank',
  tool_name: 'close_account',
  action: 'bank.close_account',
  target: { kind: 'mcp_server', id: 'bank', env: 'production' },
  arguments: { account: 'acct-1' },
} as never;
const meta = {
  status: 'approval_pending',
  proposal_id: 'prop_1',
  payload_hash: 'abc',
  approval: { request_id: 'apr_1', status: 'pending' },
} as never;

describe('askAboutApproval without a console address', () => {
  it('tells the user how to approve with what Vouch really offers: the approve endpoint of that request', async () => {
    const asked: ElicitRequest[] = [];
    const send: SendToAgent = async (request) => {
      asked.push(request);
      return { action: 'decline' };
    };
    const answer = await askAboutApproval(
      send,
      { supported: () => true, recheckWaitMs: 0, timeoutMs: 1_000 },
      { label: 'close_account', action, meta },
      new AbortController().signal,
      silentLogger,
    );
    expect(answer).toBe('decline');
    const message = asked[0]!.params.message;
    expect(message).toContain('POST /v1/approvals/apr_1/approve');
    // There is no `vouch approvals` command to point to.
    expect(message).not.toContain('vouch approvals');
  });
});
