import { appendWithFields, createLedger, type Database, type Ledger } from '@vouch/ledger';
import { testBackends } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../testing/app-harness';
import { createKeyStore } from './key-store';

/** How far the clock of the server that issues the keys runs ahead of the one that serves them. */
const AHEAD_MS = 30_000;

// Two servers on one database whose clocks differ: keys are issued on the one that runs ahead,
// and used at once on the other. The key rules judge every record at its event's time and the
// key at its `api_key.created` event's: a record written by the lagging server before its own
// clock reached the key's time would read as written by nobody who held a key. So a batch is
// recorded no earlier than the keys of its writers were issued.
describe.each(testBackends())('keys issued by a server whose clock runs ahead, on $name', ({ open }) => {
  let database: Database;
  let issuing: Ledger;
  let h: Harness;
  let admin: string;
  let gateway: string;
  let redactor: string;
  let auditor: string;

  beforeAll(async () => {
    database = await open();
    issuing = createLedger(database, { now: () => new Date(Date.now() + AHEAD_MS) });
    const keys = createKeyStore(issuing);
    h = await createHarness({ open: async () => database, keys });
    admin = await h.keyFor('user:root', ['admin']);
    gateway = await h.keyFor('agent:gw', ['gateway']);
    redactor = await h.keyFor('user:dpo', ['redactor']);
    auditor = await h.keyFor('user:audrey', ['auditor']);
  });
  afterAll(async () => {
    await issuing?.close();
    await h?.close();
  });

  it('records what they write no earlier than they were issued, and the log verifies', async () => {
    const log = 'skewed';
    const issuedAt = (await h.keys.list()).find((key) => key.identity === 'agent:gw')!.createdAt;
    expect(Date.parse(issuedAt)).toBeGreaterThan(Date.now());

    const registered = await h.json('POST', `/v1/tools?log=${log}`, admin, {
      server_id: 'payments-mcp',
      tool_name: 'refund',
      side_effect: 'compensatable',
    });
    expect(registered.status).toBe(201);
    const proposed = await h.json('POST', `/v1/proposals?log=${log}`, gateway, {
      idempotency_key: 'skew-1',
      action: 'payments.refund',
      server_id: 'payments-mcp',
      tool_name: 'refund',
      target: { kind: 'payment', id: 'pay_1', env: 'test' },
      arguments: { amount: 5 },
      side_effect: 'compensatable',
    });
    expect(proposed.status).toBe(201);
    const events = await h.ledger.events(log);
    const proposal = events.find((event) => event.kind === 'proposal')!;
    expect(Date.parse(proposal.at)).toBeGreaterThanOrEqual(Date.parse(issuedAt));

    // A redaction is judged by the same rule, against the redactor's key.
    const contacted = await appendWithFields(h.ledger, {
      log,
      kind: 'customer.contacted',
      entity: 'cust_1',
      actor: 'gateway:mcp',
      payload: { email: 'ana@example.com' },
    });
    const redacted = await h.json('POST', `/v1/logs/${log}/events/${contacted.seq}/redactions`, redactor, {
      fields: ['email'],
      reason: 'erasure request 7',
    });
    expect(redacted.status).toBe(201);

    const verified = await h.json('GET', `/v1/logs/${log}/verify`, auditor);
    expect(verified.status).toBe(200);
    expect(verified.body.failures).toEqual([]);
    expect(verified.body).toMatchObject({ ok: true, writers: 'checked' });
  });
});
