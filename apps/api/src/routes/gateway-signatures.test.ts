import { formatAuthorPrivateKey, formatAuthorPublicKey, generateAuthorKey } from '@vouch/audit';
import { createVouchClient, isVouchClientError } from '@vouch/client';
import { enrollSigningKey, OPERATOR_ACTOR } from '@vouch/ledger';
import { testBackends } from '@vouch/ledger/testing';
import { createVerifierRegistry } from '@vouch/verifier-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VouchApp } from '../app';
import { createHarness, type Harness } from '../testing/app-harness';
import { lookupDone } from '../testing/sample-verifiers';

// A gateway with an enrolled signing key signs what it writes through @vouch/client's
// execute(): its proposal, its execution claim and its observation each carry its signature,
// and the log verifies. Unsigned, the same gateway is refused before anything is written.
describe.each(testBackends())('gateway signatures over HTTP, through execute(), on $name', ({ open }) => {
  let h: Harness;
  let app: VouchApp;
  const keys = {} as Record<'admin' | 'gateway' | 'auditor', string>;
  const gatewayKey = generateAuthorKey();
  const signing = { key: formatAuthorPrivateKey(gatewayKey), identity: 'agent:gw' };
  const client = (apiKey: string, sign?: typeof signing) =>
    createVouchClient({
      baseUrl: 'http://vouch.test',
      apiKey,
      fetch: async (input, init) => app.request(String(input).replace('http://vouch.test', ''), init),
      ...(sign ? { signing: sign } : {}),
    });

  beforeAll(async () => {
    h = await createHarness({
      open,
      verification: { registry: createVerifierRegistry([{ verifier: lookupDone }]) },
    });
    app = h.app;
    keys.admin = await h.keyFor('user:root', ['admin']);
    keys.gateway = await h.keyFor('agent:gw', ['gateway']);
    keys.auditor = await h.keyFor('user:audit', ['auditor']);
    await client(keys.admin).tools.register({
      server_id: 'pay',
      tool_name: 'lookup',
      side_effect: 'read_only',
    });
    await enrollSigningKey(h.ledger, {
      identity: 'agent:gw',
      publicKey: formatAuthorPublicKey(gatewayKey.publicKey),
      enrolledBy: OPERATOR_ACTOR,
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  let n = 0;
  const action = () => ({
    action: 'pay.lookup',
    server_id: 'pay',
    tool_name: 'lookup',
    target: { kind: 'account', id: `acct-${++n}`, env: 'production' },
    arguments: { account: `acct-${n}`, email: 'someone@example.com' },
    side_effect: 'read_only' as const,
  });

  it('the enrolled gateway unsigned is refused (403 SIGNATURE_REQUIRED), and nothing runs or is written', async () => {
    const before = (await h.rowCounts()).proposals ?? 0;
    let invoked = false;
    const failure = await client(keys.gateway)
      .execute(action(), () => {
        invoked = true;
        return { ok: true };
      })
      .then(
        () => 'SUCCEEDED',
        (error) => (isVouchClientError(error) ? [error.status, error.code] : Promise.reject(error)),
      );
    expect(failure).toEqual([403, 'SIGNATURE_REQUIRED']);
    expect(invoked).toBe(false);
    expect((await h.rowCounts()).proposals ?? 0).toBe(before);
  });

  it('signed, execute() runs the call and every record it wrote carries the signature; the log verifies', async () => {
    const result = await client(keys.gateway, signing).execute(action(), () => ({ done: true }));
    expect(result.status).toBe('executed');
    if (result.status !== 'executed') return;
    const story = await client(keys.auditor).proposals.get(result.proposal.id);
    for (const record of [story.proposal, story.claim, story.observation])
      expect(record?.signature?.signatures[0]?.keyid).toBe(gatewayKey.keyId);
    // The verification the gateway asked for is signed too (verification.run).
    expect(result.verification?.signature?.signatures[0]?.keyid).toBe(gatewayKey.keyId);
    const report = await client(keys.auditor).audit.verify('default');
    expect(report.failures).toEqual([]);
    expect(report.ok).toBe(true);
  });

  it('the fused authorize of a signed proposal is refused beside it; the proposal is recorded signed', async () => {
    const body = { ...action(), idempotency_key: `fused-${n}` };
    const answer = await client(keys.gateway, signing).proposals.create(body, { authorize: 'a'.repeat(64) });
    expect(answer.proposal.signature?.signatures[0]?.keyid).toBe(gatewayKey.keyId);
    expect(answer.authorization).toBeNull();
    expect(answer.authorization_refused?.code).toBe('SIGNATURE_REQUIRED');
  });
});
