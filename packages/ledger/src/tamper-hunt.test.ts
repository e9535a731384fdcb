import { randomBytes } from 'node:crypto';
import { generateNoteKeys, parseSignerKey } from '@vouch/audit';
import { type SQL, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logOrigin, signLogCheckpoint } from './checkpoints/sign-log-checkpoint';
import type { Database } from './database';
import { issueApiKey, revokeApiKey } from './keys/api-keys';
import { OPERATOR_ACTOR } from './keys/key-history';
import { createLedger, type Ledger } from './ledger';
import { refund, refundTool } from './records/__fixtures__/refund';
import { createRecords, type Records } from './records/create-records';
import { verifyBothWays } from './tamper-testing';
import { tamper, testBackends } from './testing';
import type { LogVerificationReport } from './verify-chain';

const PREFIX = 'vouch.test/hunt';
const logKey = generateNoteKeys(PREFIX);
const signers = [parseSignerKey(logKey.signerKey)];
const origin = (log: string) => logOrigin(PREFIX, log);
const checkpointKeys = (log: string) => ({ verifiers: [logKey.verifierKey], origin: origin(log) });

/**
 * Edits of the rows the server reads, by someone holding the owner's rights (triggers off):
 * each must leave `verifyChain` failing, with the failure on the row that was changed.
 */
describe.each(testBackends())('verifyChain against edits beside the chain, on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let records: Records;
  let n = 0;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database);
    records = createRecords(ledger);
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  /** A log: the refund tool, one proposal of it (its arguments committed key by key), signed. */
  async function recordLog() {
    const log = `hunt-${++n}`;
    const ops = { log, caller: { identity: 'user:ops' } };
    const agent = {
      log,
      caller: { identity: 'agent:billing', scopes: ['payments:write'], environments: ['prod'] },
    };
    await records.registerTool(ops, refundTool());
    const { proposal } = await records.propose(agent, refund(`k${n}`));
    await signLogCheckpoint(database, { log, origin, signers });
    const events = await ledger.events(log);
    const proposalSeq = events.find((e) => e.entity === proposal.id)!.seq;
    return { log, proposal, proposalSeq, size: events.length };
  }

  const verify = (log: string) => verifyBothWays(database, { log, checkpointKeys: checkpointKeys(log) });
  const found = (report: LogVerificationReport) =>
    report.failures.map((f) => `${f.code}${f.table ? `@${f.table}` : ''}`);

  async function expectCaught(log: string, edit: SQL[], code: string) {
    expect((await verify(log)).failures).toEqual([]);
    await tamper(database, ...edit);
    const report = await verify(log);
    expect(report.ok).toBe(false);
    expect(found(report)).toContain(code);
  }

  describe('the field content of a proposal (event_fields)', () => {
    it('a salt re-spelled in upper case is FIELD_MISMATCH', async () => {
      const { log, proposalSeq } = await recordLog();
      await expectCaught(
        log,
        [
          sql`update event_fields set salt = upper(salt)
              where log_id = ${log} and seq = ${proposalSeq} and name = 'amount'`,
        ],
        'FIELD_MISMATCH',
      );
    });

    it('a value edited is FIELD_MISMATCH', async () => {
      const { log, proposalSeq } = await recordLog();
      await expectCaught(
        log,
        [
          sql`update event_fields set value = '500' where log_id = ${log} and seq = ${proposalSeq} and name = 'amount'`,
        ],
        'FIELD_MISMATCH',
      );
    });

    it('a field added that the event does not commit to is FIELD_MISMATCH', async () => {
      const { log, proposalSeq } = await recordLog();
      await expectCaught(
        log,
        [
          sql`insert into event_fields (log_id, seq, name, salt, value)
              values (${log}, ${proposalSeq}, 'note', ${'00'.repeat(16)}, '"x"')`,
        ],
        'FIELD_MISMATCH',
      );
    });

    it("a row of the same seq in another log, moved here, is FIELD_MISMATCH (the other log's content)", async () => {
      const a = await recordLog();
      const b = await recordLog();
      expect(a.proposalSeq).toBe(b.proposalSeq);
      await expectCaught(
        b.log,
        [
          sql`update event_fields set value = (select value from event_fields
                where log_id = ${a.log} and seq = ${a.proposalSeq} and name = 'currency')
              where log_id = ${b.log} and seq = ${b.proposalSeq} and name = 'currency'`,
          sql`update event_fields set salt = (select salt from event_fields
                where log_id = ${a.log} and seq = ${a.proposalSeq} and name = 'currency')
              where log_id = ${b.log} and seq = ${b.proposalSeq} and name = 'currency'`,
        ],
        'FIELD_MISMATCH',
      );
    });

    it('a row deleted is REDACTION_UNAUTHORIZED', async () => {
      const { log, proposalSeq } = await recordLog();
      await expectCaught(
        log,
        [sql`delete from event_fields where log_id = ${log} and seq = ${proposalSeq} and name = 'amount'`],
        'REDACTION_UNAUTHORIZED',
      );
    });
  });

  describe('the chain and what is built on it', () => {
    it('two recorded_at swapped is HASH_MISMATCH', async () => {
      const { log } = await recordLog();
      await expectCaught(
        log,
        [
          sql`update audit_events set recorded_at = case seq when 1 then (select recorded_at from audit_events where log_id = ${log} and seq = 2)
                                                      else (select recorded_at from audit_events where log_id = ${log} and seq = 1) end
              where log_id = ${log} and seq in (1, 2)`,
        ],
        'HASH_MISMATCH',
      );
    });

    it('an event hash re-spelled in upper case is HASH_MISMATCH', async () => {
      const { log, size } = await recordLog();
      await expectCaught(
        log,
        [sql`update audit_events set hash = upper(hash) where log_id = ${log} and seq = ${size}`],
        'HASH_MISMATCH',
      );
    });

    it('a payload with whitespace added is PAYLOAD_HASH_MISMATCH', async () => {
      const { log } = await recordLog();
      await expectCaught(
        log,
        [sql`update audit_events set payload = payload || ' ' where log_id = ${log} and seq = 1`],
        'PAYLOAD_HASH_MISMATCH',
      );
    });

    it("a proposal's commitment column cleared is HASH_MISMATCH", async () => {
      const { log, proposalSeq } = await recordLog();
      await expectCaught(
        log,
        [sql`update audit_events set commitment = null where log_id = ${log} and seq = ${proposalSeq}`],
        'HASH_MISMATCH',
      );
    });

    it("a checkpoint's root re-spelled in upper case is CHECKPOINT_MISMATCH", async () => {
      const { log, size } = await recordLog();
      await expectCaught(
        log,
        [
          sql`update checkpoints set root_hash = upper(root_hash) where log_id = ${log} and tree_size = ${size}`,
        ],
        'CHECKPOINT_MISMATCH@checkpoints',
      );
    });

    it('a stored Merkle node re-spelled in upper case is MERKLE_MISMATCH', async () => {
      // The same bytes, but not the lowercase hex every hash is stored as, and served as in proofs.
      const { log } = await recordLog();
      await expectCaught(
        log,
        [sql`update merkle_nodes set hash = upper(hash) where log_id = ${log} and level = 1 and idx = 0`],
        'MERKLE_MISMATCH@merkle_nodes',
      );
    });

    it('a stored Merkle node of 64 characters that are not all hex digits is MERKLE_MISMATCH', async () => {
      // Right length, so only the check that the block is hex (not its size) can refuse it.
      const { log } = await recordLog();
      await expectCaught(
        log,
        [
          sql`update merkle_nodes set hash = overlay(hash placing 'zz' from 31 for 2) where log_id = ${log} and level = 1 and idx = 0`,
        ],
        'MERKLE_MISMATCH@merkle_nodes',
      );
    });

    it('a checkpoint copied to another size is CHECKPOINT_MISMATCH', async () => {
      const { log, size } = await recordLog();
      await expectCaught(
        log,
        [
          sql`insert into checkpoints (log_id, tree_size, root_hash, note, created_at)
              select log_id, 1, root_hash, note, created_at from checkpoints where log_id = ${log} and tree_size = ${size}`,
        ],
        'CHECKPOINT_MISMATCH@checkpoints',
      );
    });
  });

  describe('the tool registry and the record rows', () => {
    it("a tool's required scopes dropped is RECORD_MISMATCH", async () => {
      const { log } = await recordLog();
      await expectCaught(
        log,
        [sql`update tools set required_scopes = '[]' where log_id = ${log}`],
        'RECORD_MISMATCH@tools',
      );
    });

    it("another log's tool row swapped in for this log's (same seq, other event) is RECORD_WITHOUT_EVENT", async () => {
      const a = await recordLog();
      const b = await recordLog();
      await expectCaught(
        b.log,
        [
          sql`create temp table moved on commit drop as select * from tools where log_id = ${a.log}`,
          sql`update moved set log_id = ${b.log}`,
          sql`delete from tools where log_id = ${b.log}`,
          sql`insert into tools select * from moved`,
        ],
        'RECORD_WITHOUT_EVENT@tools',
      );
    });

    it("a proposal's id re-spelled in upper case is RECORD_WITHOUT_EVENT", async () => {
      const { log, proposal } = await recordLog();
      await expectCaught(
        log,
        [sql`update proposals set id = upper(id) where log_id = ${log} and id = ${proposal.id}`],
        'RECORD_WITHOUT_EVENT@proposals',
      );
    });
  });

  describe('the key tables', () => {
    async function freshKey(logs: string[] | null = null) {
      const id = `key_hunt_${++n}`;
      await issueApiKey(ledger, {
        id,
        identity: `user:hunt-${n}`,
        roles: ['auditor'],
        scopes: [],
        environments: null,
        logs,
        createdBy: OPERATOR_ACTOR,
        keyHash: randomBytes(32).toString('hex'),
      });
      return id;
    }
    const keyFailures = async (id: string) =>
      (await verifyBothWays(database, { log: 'system' })).failures
        .filter((f) => f.id === id)
        .map((f) => `${f.code}@${f.table}`);

    it.each([
      ['its key hash re-spelled in upper case', sql`key_hash = upper(key_hash)`],
      ['another role added', sql`roles = '["auditor","admin"]'`],
      ['its log limit lifted', sql`logs = null`],
      ['its environments set to none', sql`environments = '[]'`],
      ['its created_at moved', sql`created_at = '2020-01-01T00:00:00.000Z'`],
    ])('a key row with %s is KEY_MISMATCH', async (_what, set) => {
      const id = await freshKey(['somewhere']);
      expect(await keyFailures(id)).toEqual([]);
      await tamper(database, sql`update api_keys set ${set} where id = ${id}`);
      expect(await keyFailures(id)).toEqual(['KEY_MISMATCH@api_keys']);
    });

    it("a key row copied under another id, bound to the key's revocation event, is KEY_WITHOUT_EVENT", async () => {
      const id = await freshKey();
      await revokeApiKey(ledger, id, OPERATOR_ACTOR);
      await tamper(
        database,
        sql`insert into api_keys (id, identity, roles, scopes, environments, logs, key_hash, created_by, created_at, event_seq)
            select ${`${id}_copy`}, identity, roles, scopes, environments, logs, ${randomBytes(32).toString('hex')}, created_by, created_at,
                   (select event_seq from api_key_revocations where key_id = ${id})
            from api_keys where id = ${id}`,
      );
      expect(await keyFailures(`${id}_copy`)).toEqual(['KEY_WITHOUT_EVENT@api_keys']);
    });

    it('a revocation row deleted is REVOCATION_MISMATCH, and one moved in time too', async () => {
      const gone = await freshKey();
      const moved = await freshKey();
      await revokeApiKey(ledger, gone, OPERATOR_ACTOR);
      await revokeApiKey(ledger, moved, OPERATOR_ACTOR);
      await tamper(
        database,
        sql`delete from api_key_revocations where key_id = ${gone}`,
        sql`update api_key_revocations set revoked_at = '2999-01-01T00:00:00.000Z' where key_id = ${moved}`,
      );
      expect(await keyFailures(gone)).toEqual(['REVOCATION_MISMATCH@api_key_revocations']);
      expect(await keyFailures(moved)).toEqual(['REVOCATION_MISMATCH@api_key_revocations']);
    });
  });
});
