import { appendWithFields, OPERATOR_ACTOR, redactFields } from '@vouch/ledger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ACTOR } from '../cli/keys';
import { createHarness, type Harness } from '../testing/app-harness';

let h: Harness;
let auditor: string;

beforeAll(async () => {
  h = await createHarness();
  auditor = await h.keyFor('user:auditor', ['auditor']);
  await h.keyFor('user:dpo', ['redactor']);
});
afterAll(async () => {
  await h.close();
});

describe('GET /v1/logs/{log}/verify on an erasure the server never made', () => {
  it('fails it by the rule it breaks, beside the erasure it lists', async () => {
    const log = 'crm-forged';
    const event = await appendWithFields(h.ledger, {
      log,
      kind: 'customer.contacted',
      entity: 'cust_1',
      actor: 'gateway:mcp',
      payload: { email: 'ana@example.com', channel: 'email' },
    });
    // What the runtime database role can do without the API: append the redaction event and
    // delete the rows it names. user:dpo holds a redactor key; gateway:mcp, the auditor and
    // an unknown identity do not.
    await redactFields(h.ledger, { log, seq: event.seq, fields: ['email'], reason: 'ok', actor: 'user:dpo' });
    const forged = await redactFields(h.ledger, {
      log,
      seq: event.seq,
      fields: ['channel'],
      reason: 'cover-up',
      actor: 'user:auditor',
    });

    const verified = await h.json('GET', `/v1/logs/${log}/verify`, auditor);
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({
      ok: false,
      redactions: [
        { seq: event.seq, fields: ['email'], by: 2 },
        { seq: event.seq, fields: ['channel'], by: forged.event.seq },
      ],
    });
    expect(verified.body.failures).toMatchObject([
      {
        seq: forged.event.seq,
        code: 'RECORD_RULE_VIOLATION',
        rule: 'ROLE_FORBIDDEN',
        table: 'event_fields',
        target: event.seq,
      },
    ]);
  });
});

describe('vouch redact', () => {
  it('writes as the operator actor the redaction rules accept without a key (the database guards it)', () => {
    expect(CLI_ACTOR).toBe(OPERATOR_ACTOR);
  });
});
