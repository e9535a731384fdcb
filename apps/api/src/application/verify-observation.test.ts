import {
  authorStatement,
  detachedSignature,
  formatAuthorPublicKey,
  generateAuthorKey,
  signAuthorStatement,
} from '@vouch/audit';
import {
  createRecords,
  createVerificationJobStore,
  enrollSigningKey,
  OPERATOR_ACTOR,
  type Records,
} from '@vouch/ledger';
import { testBackends } from '@vouch/ledger/testing';
import { createVerifierRegistry, defineVerifier, VERIFIER_API_VERSION } from '@vouch/verifier-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from '../app';
import { createHarness, type Harness } from '../testing/app-harness';
import { createVerificationQueue, type VerificationQueue } from '../verification-queue';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

// A verifier that reads the billing database, which version 1 of the tool says it writes to
// and version 2 (registered after the decision) no longer does.
const readsBilling = defineVerifier({
  id: 'reads-billing',
  version: '1.0.0',
  apiVersion: VERIFIER_API_VERSION,
  handles: ['refund.recorded'],
  check: () => ({ name: 'refund.recorded', status: 'pass' as const, source: 'billing-db' }),
});

describe.each(testBackends())('verifying an observation, on $name', ({ open }) => {
  let h: Harness;
  let app: VouchApp;
  let queue: VerificationQueue;
  let gw: string;
  let n = 0;

  beforeAll(async () => {
    h = await createHarness({ open });
    // Verifying reads the registration the decision cites, by its id: the registry is never listed.
    const records: Records = {
      ...createRecords(h.ledger),
      listTools: () => Promise.reject(new Error('the whole registry was listed to find one tool')),
    };
    const verification = { registry: createVerifierRegistry([{ verifier: readsBilling }]) };
    queue = createVerificationQueue({
      records,
      host: verification,
      store: createVerificationJobStore(h.database),
      logger: h.logger,
    });
    app = createApp({
      ledger: h.ledger,
      keys: h.keys,
      logger: h.logger,
      records,
      verification,
      verificationQueue: queue,
    });
    const admin = await h.keyFor('user:root', ['admin']);
    gw = await h.keyFor('agent:gw', ['gateway']);
    const tool = { server_id: 'billing', tool_name: 'refund', side_effect: 'compensatable' };
    expect(await call('POST', '/v1/tools', admin, { ...tool, writes: ['billing-db'] })).toMatchObject({
      status: 201,
      body: { tool: { version: 1 } },
    });
    proposals = await Promise.all([propose(), propose(), propose()]);
    // Registered again after those decisions: no longer writing to billing-db.
    expect(
      await call('POST', '/v1/tools', admin, { ...tool, writes: ['ledger-api'], replaces_version: 1 }),
    ).toMatchObject({
      status: 201,
      body: { tool: { version: 2 } },
    });
  });
  afterAll(async () => {
    await queue?.close();
    await h?.close();
  });

  let proposals: string[] = [];

  async function call(method: string, path: string, key: string, body?: unknown, headers = {}) {
    const response = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Json };
  }

  async function propose(): Promise<string> {
    const proposed = await call('POST', '/v1/proposals', gw, {
      idempotency_key: `verify-app-${++n}`,
      action: 'billing.refund',
      server_id: 'billing',
      tool_name: 'refund',
      target: { kind: 'order', id: `A-${n}`, env: 'test' },
      arguments: { amount: n },
      side_effect: 'compensatable',
      postconditions: [{ name: 'refund.recorded' }],
    });
    expect(proposed.body.decision).toMatchObject({ verdict: 'allow', tool_id: expect.any(String) });
    const authorized = await call('POST', `/v1/proposals/${proposed.body.proposal.id}/authorize`, gw, {});
    expect(authorized.status).toBe(200);
    return proposed.body.proposal.id as string;
  }

  const observation = (proposalId: string) => ({
    proposal_id: proposalId,
    outcome: 'succeeded',
    result: { refund_id: `re_${proposalId}` },
  });

  // The check of billing-db is marked as reading a system the tool writes to: version 1's
  // `writes`, the registration the action was decided under, not version 2's.
  const judgedByTheDecidedRegistration = { source: 'billing-db', status: 'pass', readsWrittenSystem: true };

  describe('when the observation is posted with ?verify=true', () => {
    it('judges the checks against the registration the decision read', async () => {
      const observed = await call('POST', '/v1/observations?verify=true', gw, observation(proposals[0]!));
      expect(observed.status).toBe(201);
      expect(observed.body.verification_refused).toBeNull();
      expect(observed.body.verification.checks).toMatchObject([judgedByTheDecidedRegistration]);
    });
  });

  describe('when POST /v1/observations/{id}/verify is asked to wait', () => {
    it('judges the checks against the registration the decision read', async () => {
      const observed = await call('POST', '/v1/observations', gw, observation(proposals[1]!));
      const verified = await call('POST', `/v1/observations/${observed.body.observation.id}/verify`, gw);
      expect(verified.status).toBe(201);
      expect(verified.body.checks).toMatchObject([judgedByTheDecidedRegistration]);
    });
  });

  describe('when the verification runs in the background (Prefer: respond-async)', () => {
    it('judges the checks against the registration the decision read', async () => {
      const observed = await call('POST', '/v1/observations', gw, observation(proposals[2]!));
      const queued = await call(
        'POST',
        `/v1/observations/${observed.body.observation.id}/verify`,
        gw,
        undefined,
        { prefer: 'respond-async' },
      );
      expect(queued.status).toBe(202);
      await queue.idle();
      const story = await call('GET', `/v1/proposals/${proposals[2]}`, gw);
      expect(story.body.verifications).toMatchObject([
        { verifier: 'agent:gw', checks: [judgedByTheDecidedRegistration] },
      ]);
    });

    it('records the signature of a requester who must sign, and refuses one without it, queueing nothing', async () => {
      const checker = await h.keyFor('service:checker', ['verifier']);
      const key = generateAuthorKey();
      await enrollSigningKey(h.ledger, {
        identity: 'service:checker',
        publicKey: formatAuthorPublicKey(key.publicKey),
        enrolledBy: OPERATOR_ACTOR,
      });
      const proposalId = await propose();
      const observed = await call('POST', '/v1/observations', gw, observation(proposalId));
      const id = observed.body.observation.id as string;
      const path = `/v1/observations/${id}/verify`;
      const jobs = async () => (await h.rowCounts()).verification_jobs;
      const before = await jobs();
      const unsigned = await call('POST', path, checker, {}, { prefer: 'respond-async' });
      expect(unsigned).toMatchObject({ status: 403, body: { error: { code: 'SIGNATURE_REQUIRED' } } });
      expect(await jobs()).toBe(before);
      const statement = authorStatement('default', 'verification.run', 'service:checker', {
        observation_id: id,
      });
      const signature = detachedSignature(signAuthorStatement(statement, key));
      const queued = await call(
        'POST',
        path,
        checker,
        {},
        { prefer: 'respond-async', 'vouch-signature': signature },
      );
      expect(queued.status).toBe(202);
      await queue.idle();
      const story = await call('GET', `/v1/proposals/${proposalId}`, gw);
      expect(story.status).toBe(200);
      expect(story.body.verifications).toMatchObject([
        { verifier: 'service:checker', signature: { signatures: [{ keyid: key.keyId }] } },
      ]);
    });
  });
});
