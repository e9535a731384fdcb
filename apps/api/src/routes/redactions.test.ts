import { createVouchClient, isVouchClientError } from '@vouch/client';
import { appendWithFields } from '@vouch/ledger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '../auth/roles';
import { createHarness, type Harness } from '../testing/app-harness';

let h: Harness;
let redactor: string;
let auditor: string;
let otherLogRedactor: string;
let logNo = 0;

beforeAll(async () => {
  h = await createHarness();
  redactor = await h.keyFor('user:dpo', ['redactor']);
  auditor = await h.keyFor('user:auditor', ['auditor']);
  otherLogRedactor = await h.keyFor('user:dpo-elsewhere', ['redactor'], { logs: ['elsewhere'] });
});
afterAll(async () => {
  await h.close();
});

/** A log with a whole-payload note (seq 1) and a customer event with fields (seq 2). */
async function freshLog() {
  const log = `crm-${++logNo}`;
  await h.ledger.append({ log, kind: 'note', entity: 'n1', actor: 'user:alice', payload: { i: 1 } });
  const event = await appendWithFields(h.ledger, {
    log,
    kind: 'customer.contacted',
    entity: 'cust_1',
    actor: 'gateway:mcp',
    payload: { email: 'ana@example.com', channel: 'email' },
  });
  return { log, seq: event.seq };
}

const path = (log: string, seq: number | string) => `/v1/logs/${log}/events/${seq}/redactions`;
const body = { fields: ['email'], reason: 'GDPR erasure request 2026-117' };

describe('POST /v1/logs/{log}/events/{seq}/redactions', () => {
  describe('when a redactor erases a field', () => {
    it('answers 201 with the redaction event, and verification reports it with the chain intact', async () => {
      const { log, seq } = await freshLog();
      const response = await h.json('POST', path(log, seq), redactor, body);
      expect(response.status).toBe(201);
      expect(response.body).toMatchObject({
        log,
        target: { seq },
        fields: ['email'],
        event: { kind: 'event.redacted', actor: 'user:dpo', seq: 3 },
      });

      const verified = await h.json('GET', `/v1/logs/${log}/verify`, auditor);
      expect(verified.status).toBe(200);
      expect(verified.body).toMatchObject({
        ok: true,
        failures: [],
        redactions: [{ seq, fields: ['email'], by: 3, reason: body.reason }],
      });

      const page = await h.json('GET', `/v1/logs/${log}/events`, auditor);
      const served = page.body.events[seq - 1];
      expect(served.commitment).toBe('fields/1');
      expect(served.fields).toEqual({
        channel: { salt: expect.stringMatching(/^[0-9a-f]{64}$/), value: 'email' },
      });
      expect(JSON.stringify(page.body)).not.toContain('ana@example.com');
    });
  });

  describe('when the request cannot be carried out', () => {
    it.each([
      ['an unknown event', () => 99, body, 404, 'EVENT_NOT_FOUND'],
      ['a whole-payload event', () => 1, { ...body, fields: ['i'] }, 409, 'EVENT_NOT_REDACTABLE'],
      ['an unknown field', (seq: number) => seq, { ...body, fields: ['phone'] }, 422, 'FIELD_NOT_FOUND'],
      ['no field', (seq: number) => seq, { ...body, fields: [] }, 400, 'INVALID_REQUEST'],
      ['no reason', (seq: number) => seq, { fields: ['email'] }, 400, 'INVALID_REQUEST'],
      [
        'a field named twice',
        (seq: number) => seq,
        { ...body, fields: ['email', 'email'] },
        400,
        'REDACTION_INVALID',
      ],
      ['a seq that is not a number', () => 'x', body, 400, 'INVALID_REQUEST'],
    ] as const)(
      'refuses %s with its status and code, and writes nothing',
      async (_what, seqOf, request, status, code) => {
        const { log, seq } = await freshLog();
        const before = await h.rowCounts();
        const response = await h.json('POST', path(log, seqOf(seq)), redactor, request);
        expect({ status: response.status, code: response.body.error?.code }).toEqual({ status, code });
        expect(await h.rowCounts()).toEqual(before);
      },
    );

    it('refuses a field already erased with 409 FIELD_ALREADY_REDACTED, and writes nothing', async () => {
      const { log, seq } = await freshLog();
      expect((await h.json('POST', path(log, seq), redactor, body)).status).toBe(201);
      const before = await h.rowCounts();
      const again = await h.json('POST', path(log, seq), redactor, body);
      expect({ status: again.status, code: again.body.error?.code }).toEqual({
        status: 409,
        code: 'FIELD_ALREADY_REDACTED',
      });
      expect(await h.rowCounts()).toEqual(before);
    });
  });

  describe('when called through @vouch/client', () => {
    const clientFor = (apiKey: string) =>
      createVouchClient({
        baseUrl: 'http://vouch.test',
        apiKey,
        fetch: ((url: string, init: RequestInit) => h.app.request(url, init)) as unknown as typeof fetch,
      });

    it('audit.redact erases the field and answers the redaction; a refusal is a typed error', async () => {
      const { log, seq } = await freshLog();
      const result = await clientFor(redactor).audit.redact(log, seq, body);
      expect(result).toMatchObject({
        log,
        target: { seq },
        fields: ['email'],
        event: { kind: 'event.redacted' },
      });
      const report = await clientFor(auditor).audit.verify(log);
      expect(report.redactions).toEqual([
        { seq, fields: ['email'], by: result.event.seq, reason: body.reason },
      ]);
      const again = await clientFor(redactor)
        .audit.redact(log, seq, body)
        .catch((e: unknown) => e);
      expect(isVouchClientError(again) && again.code).toBe('FIELD_ALREADY_REDACTED');
    });
  });

  describe('when the caller may not redact', () => {
    it.each(['gateway', 'policy', 'approver', 'verifier', 'auditor', 'admin'] as Role[])(
      'refuses %s with 403 ROLE_FORBIDDEN and erases nothing',
      async (role) => {
        const { log, seq } = await freshLog();
        const key = await h.keyFor(`user:${role}-${logNo}`, [role]);
        const before = await h.rowCounts();
        const response = await h.json('POST', path(log, seq), key, body);
        expect({ status: response.status, code: response.body.error?.code }).toEqual({
          status: 403,
          code: 'ROLE_FORBIDDEN',
        });
        expect(await h.rowCounts()).toEqual(before);
      },
    );

    it('refuses a redactor limited to other logs with 403 LOG_FORBIDDEN', async () => {
      const { log, seq } = await freshLog();
      const before = await h.rowCounts();
      const response = await h.json('POST', path(log, seq), otherLogRedactor, body);
      expect({ status: response.status, code: response.body.error?.code }).toEqual({
        status: 403,
        code: 'LOG_FORBIDDEN',
      });
      expect(await h.rowCounts()).toEqual(before);
    });

    it('refuses a caller without a key with 401', async () => {
      const { log, seq } = await freshLog();
      const response = await h.call('POST', path(log, seq), { body });
      expect(response.status).toBe(401);
    });
  });
});
