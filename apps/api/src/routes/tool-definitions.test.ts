import { testBackends } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../testing/app-harness';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const TOOL = { server_id: 'mail', tool_name: 'send_mail' };

describe.each(testBackends())('pinned tool definitions over HTTP, on $name', ({ open }) => {
  let h: Harness;
  const key = {} as Record<'admin' | 'gateway' | 'auditor', string>;
  const report = (definition_sha256: string) =>
    h.json('POST', '/v1/tools', key.gateway, { ...TOOL, source: 'discovery', definition_sha256 });
  const approve = (body: Record<string, unknown>, as = key.admin) =>
    h.json('POST', '/v1/tools/definition-approvals', as, { ...TOOL, ...body });
  const latest = async () =>
    (await h.json('GET', '/v1/tools', key.auditor)).body.tools.find(
      (tool: { tool_name: string }) => tool.tool_name === TOOL.tool_name,
    );

  beforeAll(async () => {
    h = await createHarness({ open });
    key.admin = await h.keyFor('user:admin', ['admin']);
    key.gateway = await h.keyFor('agent:gw', ['gateway']);
    key.auditor = await h.keyFor('user:auditor', ['auditor']);
  });
  afterAll(async () => {
    await h.close();
  });

  describe('when a gateway reports definitions', () => {
    it('pins the first, records a different one beside the pin, and replays what is recorded', async () => {
      expect(await report(A)).toMatchObject({
        status: 201,
        body: { tool: { version: 1, source: 'discovery', definition_sha256: A }, replayed: false },
      });
      expect(await report(A)).toMatchObject({ status: 200, body: { replayed: true } });
      expect(await report(B)).toMatchObject({
        status: 201,
        body: { tool: { version: 2, definition_sha256: A, changed_definition_sha256: B } },
      });
      expect(await report(B)).toMatchObject({ status: 200, body: { replayed: true } });
      expect(await report(A)).toMatchObject({ status: 200, body: { tool: { version: 2 }, replayed: true } });
    });
  });

  describe('when an operator registers the tool again without naming a definition', () => {
    it('keeps the pin and the pending change', async () => {
      const answer = await h.json('POST', '/v1/tools', key.admin, {
        ...TOOL,
        side_effect: 'read_only',
        replaces_version: 2,
      });
      expect(answer).toMatchObject({
        status: 201,
        body: {
          tool: { version: 3, side_effect: 'read_only', definition_sha256: A, changed_definition_sha256: B },
        },
      });
    });
  });

  describe('when the change is approved wrongly', () => {
    it.each([
      ['a gateway key', { definition_sha256: B, replaces_version: 3 }, 'gateway', 403, 'ROLE_FORBIDDEN'],
      [
        'a hash that is not one',
        { definition_sha256: 'xyz', replaces_version: 3 },
        'admin',
        400,
        'INVALID_REQUEST',
      ],
      ['a stale version', { definition_sha256: B, replaces_version: 2 }, 'admin', 409, 'TOOL_EXISTS'],
      [
        'an unknown tool',
        { tool_name: 'nope', definition_sha256: B, replaces_version: 1 },
        'admin',
        422,
        'TOOL_NOT_REGISTERED',
      ],
    ] as const)('refuses %s and writes nothing', async (_what, body, as, status, code) => {
      const answer = await approve(body, key[as]);
      expect(answer).toMatchObject({ status, body: { error: { code } } });
      expect(await latest()).toMatchObject({
        version: 3,
        definition_sha256: A,
        changed_definition_sha256: B,
      });
    });
  });

  describe('when an admin approves the change', () => {
    it('pins it in a new version, replays it, and the chain verifies', async () => {
      const approved = await approve({ definition_sha256: B, replaces_version: 3 });
      expect(approved).toMatchObject({
        status: 201,
        body: {
          tool: { version: 4, definition_sha256: B, side_effect: 'read_only', registered_by: 'user:admin' },
        },
      });
      expect(approved.body.tool).not.toHaveProperty('changed_definition_sha256');
      expect(await approve({ definition_sha256: B, replaces_version: 4 })).toMatchObject({
        status: 200,
        body: { replayed: true },
      });
      const verified = await h.json('GET', '/v1/logs/default/verify', key.auditor);
      expect(verified.body).toMatchObject({ ok: true, failures: [] });
    });
  });
});
