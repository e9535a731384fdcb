import {
  eventLeafHash,
  generateNoteKeys,
  parseSignerKey,
  readCheckpointUnverified,
  verifyConsistency,
  verifyInclusion,
} from '@vouch/audit';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logOrigin, signLogCheckpoint } from './checkpoints/sign-log-checkpoint';
import { checkTreeToSign } from './checkpoints/verified-tree';
import type { Database } from './database';
import { sqlStateOf } from './database-errors';
import { isLedgerError } from './errors';
import { issueApiKey } from './keys/api-keys';
import { OPERATOR_ACTOR } from './keys/key-history';
import { createLedger, type Ledger } from './ledger';
import { merkleConsistencyProof, merkleInclusionProof, merkleRoot } from './merkle/merkle-proofs';
import { appendWithFields, redactedAfter, redactFields } from './redaction';
import { verifyBothWays } from './tamper-testing';
import { tamper, testBackends } from './testing';

const PREFIX = 'vouch.test/log';
const logKey = generateNoteKeys(PREFIX);
const signers = [parseSignerKey(logKey.signerKey)];
const origin = (log: string) => logOrigin(PREFIX, log);
const checkpointKeys = (log: string) => ({ verifiers: [logKey.verifierKey], origin: logOrigin(PREFIX, log) });

const EMAIL = 'ana.redaction-test@example.com';

describe.each(testBackends())('redactFields on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let logNo = 0;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database);
    // verifyChain accepts a redaction only by an identity holding a live `redactor` key.
    await issueApiKey(ledger, {
      id: 'key_dpo',
      identity: 'admin:dpo',
      roles: ['redactor'],
      scopes: [],
      environments: null,
      logs: null,
      createdBy: OPERATOR_ACTOR,
      keyHash: '0'.repeat(64),
    });
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  /** A log: a note, a customer event with fields, another note; signed at its head. */
  async function freshLog() {
    const log = `redact-${++logNo}`;
    await ledger.append({ log, kind: 'note', entity: 'n1', actor: 'user:alice', payload: { i: 1 } });
    const customer = await appendWithFields(ledger, {
      log,
      kind: 'customer.contacted',
      entity: 'cust_1',
      actor: 'gateway:mcp',
      payload: { email: EMAIL, channel: 'email', amount: 5 },
    });
    await ledger.append({ log, kind: 'note', entity: 'n2', actor: 'user:alice', payload: { i: 2 } });
    const signed = await signLogCheckpoint(database, { log, origin, signers });
    return { log, customer, signed: readCheckpointUnverified(signed.note)! };
  }

  const redact = (log: string, seq: number, fields: string[], reason = 'GDPR request 42') =>
    redactFields(ledger, { log, seq, fields, reason, actor: 'admin:dpo' });

  describe('when a field of a fields/1 event is redacted', () => {
    it('leaves the chain, the Merkle tree and the signed checkpoint valid, and reports the redaction', async () => {
      const { log, customer, signed } = await freshLog();
      const result = await redact(log, customer.seq, ['email']);
      expect(result).toMatchObject({
        target: { seq: customer.seq, hash: customer.hash },
        fields: ['email'],
        event: { kind: 'event.redacted', actor: 'admin:dpo', entity: `event/${customer.seq}`, seq: 4 },
      });

      const report = await verifyBothWays(database, { log, checkpointKeys: checkpointKeys(log) });
      expect(report.failures).toEqual([]);
      expect(report).toMatchObject({
        ok: true,
        checked: 4,
        checkpoints: { checked: 1, signatures: 'verified' },
        redactions: [{ seq: customer.seq, fields: ['email'], by: 4, reason: 'GDPR request 42' }],
      });

      // The checkpoint signed before the redaction still proves the redacted event...
      const inclusion = await merkleInclusionProof(database, { log, seq: customer.seq, treeSize: 3 });
      expect(
        verifyInclusion(eventLeafHash(customer.hash), customer.seq - 1, 3, inclusion, signed.rootHash),
      ).toBe(true);
      // ...and the tree after it (with the redaction event) extends that checkpoint.
      const after = readCheckpointUnverified(
        (await signLogCheckpoint(database, { log, origin, signers })).note,
      )!;
      const consistency = await merkleConsistencyProof(database, { log, size1: 3, size2: 4 });
      expect(verifyConsistency(3, 4, consistency, signed.rootHash, after.rootHash)).toBe(true);

      const [served] = await ledger.events(log, { after: customer.seq - 1, limit: 1 });
      expect(served).toMatchObject({ commitment: 'fields/1', hash: customer.hash });
      expect(Object.keys(served!.fields!).sort()).toEqual(['amount', 'channel']);
    });

    it('removes the value and its salt from the database', async () => {
      const { log, customer } = await freshLog();
      const salt = customer.fields!.email!.salt;
      expect(await countRowsMentioning(EMAIL)).toBeGreaterThan(0);
      await redact(log, customer.seq, ['email']);
      const left = await database.rows<{ name: string }>(
        sql`select name from event_fields where log_id = ${log} and seq = ${customer.seq} order by name`,
      );
      expect(left.map((r) => r.name)).toEqual(['amount', 'channel']);
      expect(await countRowsMentioning(salt)).toBe(0);
      // Other logs of this database still hold the test address; this one holds none.
      expect(await countRowsMentioning(EMAIL, log)).toBe(0);
    });
  });

  describe('when an export ends before a redaction of its events', () => {
    it('redactedAfter names the events whose erasure the export would not carry', async () => {
      const { log, customer } = await freshLog();
      expect(await redactedAfter(database, log, 3)).toEqual([]);
      await redact(log, customer.seq, ['email']);
      expect(await redactedAfter(database, log, 3)).toEqual([customer.seq]);
      expect(await redactedAfter(database, log, 4)).toEqual([]);
      expect(await redactedAfter(database, log, 1)).toEqual([]);
    });
  });

  describe('when a redaction commits after the checkpointer chose the tree to sign', () => {
    it('still signs it: the tree is checked from the hashes, which no redaction changes', async () => {
      const log = `redact-${++logNo}`;
      await ledger.append({ log, kind: 'note', entity: 'n1', actor: 'user:alice', payload: { i: 1 } });
      await signLogCheckpoint(database, { log, origin, signers });
      const customer = await appendWithFields(ledger, {
        log,
        kind: 'customer.contacted',
        entity: 'cust_1',
        actor: 'gateway:mcp',
        payload: { email: EMAIL },
      });
      // The head the checkpointer read: seq 2. The redaction (seq 3) lands before it reads the events.
      const head = { log, treeSize: 2, rootHash: await merkleRoot(database, { log, treeSize: 2 }) };
      await redact(log, customer.seq, ['email']);
      const check = await checkTreeToSign(database, head, {
        verifiers: [logKey.verifierKey],
        origin: origin(log),
      });
      expect(check).toMatchObject({ ok: true, tree: { head: { seq: 2, hash: customer.hash } } });
    });
  });

  /** Rows of audit_events and event_fields (of `log`, or every log) whose text contains `needle`. */
  async function countRowsMentioning(needle: string, log?: string): Promise<number> {
    const like = `%${needle}%`;
    const [row] = await database.rows<{ n: number }>(
      sql`select (select count(*) from audit_events where payload like ${like} ${log ? sql`and log_id = ${log}` : sql``})
               + (select count(*) from event_fields where (value like ${like} or salt like ${like}) ${log ? sql`and log_id = ${log}` : sql``}) as n`,
    );
    return Number(row!.n);
  }

  describe('when the request is one the ledger cannot carry out', () => {
    it.each([
      ['an unknown event', (seq: number) => ({ seq: seq + 100, fields: ['email'] }), 'EVENT_NOT_FOUND'],
      ['a whole-payload event', () => ({ seq: 1, fields: ['i'] }), 'EVENT_NOT_REDACTABLE'],
      ['an unknown field', (seq: number) => ({ seq, fields: ['phone'] }), 'FIELD_NOT_FOUND'],
      ['no field', (seq: number) => ({ seq, fields: [] }), 'REDACTION_INVALID'],
      ['a field named twice', (seq: number) => ({ seq, fields: ['email', 'email'] }), 'REDACTION_INVALID'],
      ['an empty reason', (seq: number) => ({ seq, fields: ['email'], reason: '  ' }), 'REDACTION_INVALID'],
    ] as const)('refuses %s with its code and writes nothing', async (_what, request, code) => {
      const { log, customer } = await freshLog();
      const before = await ledger.head(log);
      const { seq, fields, reason } = { reason: 'GDPR request 42', ...request(customer.seq) };
      const error = await redact(log, seq, [...fields], reason).catch((e: unknown) => e);
      expect(isLedgerError(error) && error.code).toBe(code);
      expect(await ledger.head(log)).toEqual(before);
      expect(await countRowsMentioning(EMAIL, log)).toBe(1);
    });

    it('refuses the event’s own actor with SELF_REDACTION (whatever key it uses) and writes nothing', async () => {
      const { log, customer } = await freshLog();
      const before = await ledger.head(log);
      const error = await redactFields(ledger, {
        log,
        seq: customer.seq,
        fields: ['email'],
        reason: 'GDPR request 42',
        // The gateway that wrote the event, in another spelling of the same identity.
        actor: 'Gateway:MCP',
      }).catch((e: unknown) => e);
      expect(isLedgerError(error) && error.code).toBe('SELF_REDACTION');
      expect(await ledger.head(log)).toEqual(before);
      expect(await countRowsMentioning(EMAIL, log)).toBe(1);
    });

    it('refuses a field already redacted with FIELD_ALREADY_REDACTED and writes nothing', async () => {
      const { log, customer } = await freshLog();
      await redact(log, customer.seq, ['email']);
      const before = await ledger.head(log);
      const error = await redact(log, customer.seq, ['channel', 'email']).catch((e: unknown) => e);
      expect(isLedgerError(error) && error.code).toBe('FIELD_ALREADY_REDACTED');
      expect(await ledger.head(log)).toEqual(before);
      const [left] = await database.rows<{ n: number }>(
        sql`select count(*) as n from event_fields where log_id = ${log} and name = 'channel'`,
      );
      expect(Number(left!.n)).toBe(1);
    });
  });

  describe('when field content is changed in the database', () => {
    it('refuses a DELETE that no redaction event names (VC001)', async () => {
      const { log, customer } = await freshLog();
      const error = await database
        .rows(
          sql`delete from event_fields where log_id = ${log} and seq = ${customer.seq} and name = 'email'`,
        )
        .catch((e: unknown) => e);
      expect(sqlStateOf(error)).toBe('VC001');
      expect(await countRowsMentioning(EMAIL, log)).toBe(1);
    });

    it('refuses an UPDATE, even of a field a redaction names (VC001)', async () => {
      const { log, customer } = await freshLog();
      await redact(log, customer.seq, ['channel']);
      const error = await database
        .rows(sql`update event_fields set value = '"x"' where log_id = ${log} and seq = ${customer.seq}`)
        .catch((e: unknown) => e);
      expect(sqlStateOf(error)).toBe('VC001');
    });

    it('reports a field erased behind the ledger as REDACTION_UNAUTHORIZED', async () => {
      const { log, customer } = await freshLog();
      await tamper(
        database,
        sql`delete from event_fields where log_id = ${log} and seq = ${customer.seq} and name = 'email'`,
      );
      const report = await verifyBothWays(database, { log, checkpointKeys: checkpointKeys(log) });
      expect(report.ok).toBe(false);
      expect(report.failures).toMatchObject([
        { seq: customer.seq, code: 'REDACTION_UNAUTHORIZED', fields: ['email'] },
      ]);
    });

    it('reports a redaction event edited to cover one more erasure as PAYLOAD_HASH_MISMATCH, and the erasure as unauthorized', async () => {
      const { log, customer } = await freshLog();
      const { event } = await redact(log, customer.seq, ['email']);
      const widened = event.payload.replace('"fields":["email"]', '"fields":["channel","email"]');
      expect(widened).not.toBe(event.payload);
      await tamper(
        database,
        sql`update audit_events set payload = ${widened} where log_id = ${log} and seq = ${event.seq}`,
        sql`delete from event_fields where log_id = ${log} and seq = ${customer.seq} and name = 'channel'`,
      );
      const report = await verifyBothWays(database, { log });
      expect(report.failures.map((f) => [f.seq, f.code])).toEqual([
        [customer.seq, 'REDACTION_UNAUTHORIZED'],
        [event.seq, 'PAYLOAD_HASH_MISMATCH'],
      ]);
    });

    /** The `event_fields` row of `name`, as someone reading it before the erasure saved it. */
    const savedRow = async (log: string, seq: number, name: string) => {
      const [row] = await database.rows<{ salt: string; value: string }>(
        sql`select salt, value from event_fields where log_id = ${log} and seq = ${seq} and name = ${name}`,
      );
      return sql`insert into event_fields (log_id, seq, name, salt, value)
        values (${log}, ${seq}, ${name}, ${row!.salt}, ${row!.value})`;
    };

    it('refuses putting erased content back, a row saved before the erasure (VC001)', async () => {
      const { log, customer } = await freshLog();
      const putBack = await savedRow(log, customer.seq, 'email');
      await redact(log, customer.seq, ['email']);
      const error = await database.rows(putBack).catch((e: unknown) => e);
      expect(sqlStateOf(error)).toBe('VC001');
      expect(await countRowsMentioning(EMAIL, log)).toBe(0);
    });

    it('reports erased content put back behind the ledger as REDACTION_NOT_APPLIED, and refuses to erase it again', async () => {
      const { log, customer } = await freshLog();
      const putBack = await savedRow(log, customer.seq, 'email');
      const { event } = await redact(log, customer.seq, ['email']);
      await tamper(database, putBack);
      const report = await verifyBothWays(database, { log, checkpointKeys: checkpointKeys(log) });
      expect(report.ok).toBe(false);
      expect(report.failures).toMatchObject([
        { seq: customer.seq, code: 'REDACTION_NOT_APPLIED', table: 'event_fields', fields: ['email'] },
      ]);
      expect(report.failures[0]!.message).toContain(`event.redacted ${event.seq}`);
      // A second redaction would make its author the one verification blames; the server
      // refuses it and raises its integrity alarm (its own ledger here: the alarm stays up).
      const own = createLedger(database);
      try {
        const before = await own.head(log);
        const again = await redactFields(own, {
          log,
          seq: customer.seq,
          fields: ['email'],
          reason: 'GDPR request 42',
          actor: 'admin:dpo',
        }).catch((e: unknown) => e);
        expect(isLedgerError(again) && again.code).toBe('FIELD_ALREADY_REDACTED');
        expect(isLedgerError(again) && again.message).toContain('REDACTION_NOT_APPLIED');
        expect(await own.head(log)).toEqual(before);
        expect(own.integrityAlarm.alarms()).toMatchObject([
          { code: 'RECORD_MISMATCH', log, seq: customer.seq, table: 'event_fields' },
        ]);
      } finally {
        await own.close();
      }
    });

    it('still erases a field that a redaction event naming another hash of its event names', async () => {
      const { log, customer } = await freshLog();
      // Appended in someone's name with a hash that is not the event's: it authorizes nothing
      // (verification: EVENT_NOT_FOUND), and so stands in no one's way.
      await ledger.append({
        log,
        kind: 'event.redacted',
        entity: `event/${customer.seq}`,
        actor: 'admin:dpo',
        payload: {
          fields: ['email'],
          reason: 'ticket 7',
          target: { hash: 'ab'.repeat(32), seq: customer.seq },
        },
      });
      await redact(log, customer.seq, ['email']);
      expect(await countRowsMentioning(EMAIL, log)).toBe(0);
    });

    it('reports an edited value of a redacted event as FIELD_MISMATCH', async () => {
      const { log, customer } = await freshLog();
      await redact(log, customer.seq, ['email']);
      await tamper(
        database,
        sql`update event_fields set value = '6' where log_id = ${log} and seq = ${customer.seq} and name = 'amount'`,
      );
      const report = await verifyBothWays(database, { log });
      expect(report.failures).toMatchObject([
        { seq: customer.seq, code: 'FIELD_MISMATCH', fields: ['amount'] },
      ]);
    });
  });
});
