// One client conformance suite (@vouch/client/testing), run against the in-memory fake and
// against the real app: both must answer the client's calls alike, with exactly the records
// @vouch/records declares. It replaces a comparison of field names with the OpenAPI document.
import { createApp, createKeyStore, STATUS_BY_CODE } from '@vouch/api';
import { SERVER_ERROR_CODES } from '@vouch/client';
import {
  CLIENT_CONFORMANCE_CASES,
  CONFORMANCE_POLICY,
  type ConformanceServer,
  createFakeVouch,
} from '@vouch/client/testing';
import { createLedger, type Database, migrate, OPERATOR_ACTOR, openDatabase } from '@vouch/ledger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

describe('the client conformance suite', () => {
  describe('when run against the fake', () => {
    const fake = createFakeVouch({
      decide: (proposal) =>
        proposal.side_effect === CONFORMANCE_POLICY.requireApproval ? 'require_approval' : 'allow',
    });
    const server: ConformanceServer = {
      fetch: fake.fetch,
      keyFor: async () => 'vch_fake',
      approve: async (requestId) => fake.approve(requestId),
    };
    it.each(CLIENT_CONFORMANCE_CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
      await c.run(server);
    });
  });

  describe('when run against the real app', () => {
    let database: Database;
    let server: ConformanceServer;

    beforeAll(async () => {
      database = await openDatabase();
      await migrate(database);
      const ledger = createLedger(database);
      const keys = createKeyStore(ledger);
      const app = createApp({ ledger, keys });
      const keyFor: ConformanceServer['keyFor'] = async (identity, roles) =>
        (
          await keys.create({
            identity,
            roles,
            scopes: [],
            environments: null,
            logs: null,
            createdBy: OPERATOR_ACTOR,
          })
        ).secret;
      const approver = await keyFor('user:approver', ['approver']);
      server = {
        fetch: async (input, init) => app.request(input instanceof URL ? input.href : input, init),
        keyFor,
        approve: async (requestId) => {
          const response = await app.request(`/v1/approvals/${requestId}/approve`, {
            method: 'POST',
            headers: { authorization: `Bearer ${approver}`, 'content-type': 'application/json' },
            body: '{}',
          });
          expect(response.status).toBe(200);
        },
      };
    });
    afterAll(async () => {
      await database?.close();
    });

    it.each(CLIENT_CONFORMANCE_CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
      await c.run(server);
    });
  });

  describe('when the server can answer with an error code', () => {
    it('the client knows exactly the codes in the server status table', () => {
      expect([...SERVER_ERROR_CODES].sort()).toEqual(Object.keys(STATUS_BY_CODE).sort());
    });
  });
});
