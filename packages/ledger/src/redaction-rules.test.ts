import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR_ACTOR } from './check-redaction-rules';
import type { Database } from './database';
import { issueApiKey, revokeApiKey, scheduleApiKeyExpiry } from './keys/api-keys';
import { createLedger, type Ledger } from './ledger';
import { appendWithFields, redactFields } from './redaction';
import { verifyBothWays } from './tamper-testing';
import { tamper, testBackends } from './testing';
import type { LogVerificationReport } from './verify-chain';

/**
 * A redaction the server would refuse, written as the runtime database role can write it:
 * an `event.redacted` event appended like any event, and the field's row deleted under it
 * (the one DELETE the role holds). `verifyChain` must not report it as an authorized erasure.
 */
describe.each(testBackends())('verifyChain on redactions, on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let n = 0;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database);
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  const unique = (what: string) => `${what}-${++n}`;

  async function key(identity: string, roles: string[], logs: string[] | null = null) {
    return (await issueApiKey(ledger, {
      id: unique('key'),
      identity,
      roles,
      scopes: [],
      environments: null,
      logs,
      createdBy: OPERATOR_ACTOR,
      keyHash: randomBytes(32).toString('hex'),
    }))!;
  }

  /** A log holding one field-committed event by `gateway:mcp`. */
  async function fieldLog() {
    const log = unique('rr');
    await ledger.append({ log, kind: 'note', entity: 'n1', actor: 'user:alice', payload: { i: 1 } });
    const target = await appendWithFields(ledger, {
      log,
      kind: 'customer.contacted',
      entity: 'cust_1',
      actor: 'gateway:mcp',
      payload: { email: 'ana@example.com', channel: 'email' },
    });
    return { log, target };
  }

  /** Append a redaction event as any writer of `audit_events` can, then delete the rows it names. */
  async function forge(
    log: string,
    actor: string,
    payload: Record<string, unknown>,
    entity = `event/${(payload.target as { seq: number }).seq}`,
  ) {
    const event = await ledger.append({ log, kind: 'event.redacted', entity, actor, payload });
    const { seq } = payload.target as { seq: number };
    for (const name of payload.fields as string[]) {
      await database.rows(
        sql`delete from event_fields where log_id = ${log} and seq = ${seq} and name = ${name}`,
      );
    }
    return event;
  }

  const rules = (report: LogVerificationReport) =>
    report.failures.map((f) => [f.seq, f.code, f.rule, f.table, f.target]);

  it('accepts a redaction by a live redactor key for the log, by someone else than the event actor', async () => {
    const { log, target } = await fieldLog();
    const identity = unique('dpo');
    await key(identity, ['redactor'], [log]);
    await redactFields(ledger, {
      log,
      seq: target.seq,
      fields: ['email'],
      reason: 'ticket 1',
      actor: identity,
    });
    const report = await verifyBothWays(database, { log });
    expect(report.failures).toEqual([]);
    expect(report).toMatchObject({ ok: true, redactions: [{ seq: target.seq, fields: ['email'], by: 3 }] });
  });

  it('accepts the operator CLI (system:cli), which holds no key', async () => {
    const { log, target } = await fieldLog();
    await redactFields(ledger, {
      log,
      seq: target.seq,
      fields: ['email'],
      reason: 'ticket 2',
      actor: OPERATOR_ACTOR,
    });
    expect((await verifyBothWays(database, { log })).failures).toEqual([]);
  });

  describe('reports ROLE_FORBIDDEN / LOG_FORBIDDEN when the actor could not redact in the log then', () => {
    it('for an identity that holds no key', async () => {
      const { log, target } = await fieldLog();
      await redactFields(ledger, { log, seq: target.seq, fields: ['email'], reason: 'x', actor: 'mallory' });
      const report = await verifyBothWays(database, { log });
      expect(report.ok).toBe(false);
      expect(rules(report)).toEqual([[3, 'RECORD_RULE_VIOLATION', 'ROLE_FORBIDDEN', 'event_fields', 2]]);
      // The erasure is still listed, with the failure beside it.
      expect(report.redactions).toEqual([{ seq: 2, fields: ['email'], by: 3, reason: 'x' }]);
    });

    it('for a key without the redactor role (an auditor)', async () => {
      const { log, target } = await fieldLog();
      const identity = unique('auditor');
      await key(identity, ['auditor', 'admin']);
      await redactFields(ledger, { log, seq: target.seq, fields: ['email'], reason: 'x', actor: identity });
      expect(rules(await verifyBothWays(database, { log }))).toEqual([
        [3, 'RECORD_RULE_VIOLATION', 'ROLE_FORBIDDEN', 'event_fields', 2],
      ]);
    });

    it('for a redactor key limited to other logs', async () => {
      const { log, target } = await fieldLog();
      const identity = unique('dpo');
      await key(identity, ['redactor'], ['elsewhere']);
      await redactFields(ledger, { log, seq: target.seq, fields: ['email'], reason: 'x', actor: identity });
      expect(rules(await verifyBothWays(database, { log }))).toEqual([
        [3, 'RECORD_RULE_VIOLATION', 'LOG_FORBIDDEN', 'event_fields', 2],
      ]);
    });

    it('for a redactor key revoked, expired or not yet issued when the redaction was recorded', async () => {
      const { log, target } = await fieldLog();
      const revoked = unique('dpo');
      await revokeApiKey(ledger, (await key(revoked, ['redactor'])).id, OPERATOR_ACTOR);
      const expired = unique('dpo');
      await scheduleApiKeyExpiry(ledger, (await key(expired, ['redactor'])).id, {
        graceSeconds: 0,
        by: OPERATOR_ACTOR,
      });
      const later = unique('dpo');
      await redactFields(ledger, { log, seq: target.seq, fields: ['email'], reason: 'x', actor: revoked });
      await redactFields(ledger, { log, seq: target.seq, fields: ['channel'], reason: 'x', actor: expired });
      await ledger.append({
        log,
        kind: 'event.redacted',
        entity: 'event/2',
        actor: later,
        payload: { target: { seq: 2, hash: target.hash }, fields: ['channel'], reason: 'x' },
      });
      await key(later, ['redactor']);
      const report = await verifyBothWays(database, { log });
      expect(rules(report)).toEqual([
        [3, 'RECORD_RULE_VIOLATION', 'ROLE_FORBIDDEN', 'event_fields', 2],
        [4, 'RECORD_RULE_VIOLATION', 'ROLE_FORBIDDEN', 'event_fields', 2],
        [5, 'RECORD_RULE_VIOLATION', 'FIELD_ALREADY_REDACTED', 'event_fields', 2],
        [5, 'RECORD_RULE_VIOLATION', 'ROLE_FORBIDDEN', 'event_fields', 2],
      ]);
    });
  });

  it('counts no role added by editing the payload of a key event in the system log', async () => {
    const { log, target } = await fieldLog();
    const identity = unique('auditor');
    const issued = await key(identity, ['auditor']);
    await tamper(
      database,
      sql`update audit_events set payload = replace(payload, '"roles":["auditor"]', '"roles":["auditor","redactor"]')
          where log_id = 'system' and kind = 'api_key.created' and entity_id = ${issued.id}`,
    );
    await redactFields(ledger, { log, seq: target.seq, fields: ['email'], reason: 'x', actor: identity });
    expect(rules(await verifyBothWays(database, { log }))).toEqual([
      [3, 'RECORD_RULE_VIOLATION', 'ROLE_FORBIDDEN', 'event_fields', 2],
    ]);
    // The system log's own verification names the edit.
    const system = await verifyBothWays(database, { log: 'system' });
    expect(system.failures.map((f) => f.code)).toContain('PAYLOAD_HASH_MISMATCH');
  });

  it("reports SELF_REDACTION for the event's own actor, in any spelling, even holding a redactor key", async () => {
    const { log, target } = await fieldLog();
    await key('gateway:mcp', ['redactor']);
    await forge(log, 'GATEWAY:MCP', {
      target: { seq: target.seq, hash: target.hash },
      fields: ['email'],
      reason: 'mine',
    });
    expect(rules(await verifyBothWays(database, { log }))).toEqual([
      [3, 'RECORD_RULE_VIOLATION', 'SELF_REDACTION', 'event_fields', 2],
      [3, 'RECORD_RULE_VIOLATION', 'ROLE_FORBIDDEN', 'event_fields', 2],
    ]);
  });

  it('reports a redaction of what the server would not erase by the code it refuses it with', async () => {
    const { log, target } = await fieldLog();
    const identity = unique('dpo');
    await key(identity, ['redactor']);
    const at = { seq: target.seq, hash: target.hash };
    // 3: a field the event does not commit to.
    await ledger.append({
      log,
      kind: 'event.redacted',
      entity: 'event/2',
      actor: identity,
      payload: { target: at, fields: ['phone'], reason: 'x' },
    });
    // 4: a whole-payload event.
    const note = await ledger.append({
      log,
      kind: 'note',
      entity: 'n',
      actor: 'user:alice',
      payload: { i: 2 },
    });
    await ledger.append({
      log,
      kind: 'event.redacted',
      entity: `event/${note.seq}`,
      actor: identity,
      payload: { target: { seq: note.seq, hash: note.hash }, fields: ['i'], reason: 'x' },
    });
    // 6: another hash; 7: a later event (itself).
    await ledger.append({
      log,
      kind: 'event.redacted',
      entity: 'event/2',
      actor: identity,
      payload: { target: { seq: 2, hash: note.hash }, fields: ['email'], reason: 'x' },
    });
    await ledger.append({
      log,
      kind: 'event.redacted',
      entity: 'event/8',
      actor: identity,
      payload: { target: { seq: 8, hash: note.hash }, fields: ['email'], reason: 'x' },
    });
    // 8..11: malformed: fields unsorted, a blank reason, another entity, a member too many.
    const bad = [
      { payload: { target: at, fields: ['email', 'channel'], reason: 'x' } },
      { payload: { target: at, fields: ['email'], reason: '  ' } },
      { payload: { target: at, fields: ['email'], reason: 'x' }, entity: 'event/1' },
      { payload: { target: at, fields: ['email'], reason: 'x', by: 'dpo' } },
    ];
    for (const { payload, entity } of bad) {
      await ledger.append({
        log,
        kind: 'event.redacted',
        entity: entity ?? 'event/2',
        actor: identity,
        payload,
      });
    }
    expect(rules(await verifyBothWays(database, { log }))).toEqual([
      [3, 'RECORD_RULE_VIOLATION', 'FIELD_NOT_FOUND', 'event_fields', 2],
      [5, 'RECORD_RULE_VIOLATION', 'EVENT_NOT_REDACTABLE', 'event_fields', 4],
      [6, 'RECORD_RULE_VIOLATION', 'EVENT_NOT_FOUND', 'event_fields', 2],
      [7, 'RECORD_RULE_VIOLATION', 'EVENT_NOT_FOUND', 'event_fields', 8],
      [8, 'RECORD_RULE_VIOLATION', 'REDACTION_INVALID', 'event_fields', undefined],
      [9, 'RECORD_RULE_VIOLATION', 'REDACTION_INVALID', 'event_fields', undefined],
      [10, 'RECORD_RULE_VIOLATION', 'REDACTION_INVALID', 'event_fields', undefined],
      [11, 'RECORD_RULE_VIOLATION', 'REDACTION_INVALID', 'event_fields', undefined],
    ]);
  });
});
