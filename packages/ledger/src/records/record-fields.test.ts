import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../database';
import { isLedgerError } from '../errors';
import { createLedger, type Ledger } from '../ledger';
import { redactFields } from '../redaction';
import { proposals } from '../schema/records';
import { testBackends } from '../testing';
import { refund, refundTool } from './__fixtures__/refund';
import { proposalCodec } from './codec';
import { createRecords, type RecordContext, type Records } from './create-records';
import type { ProposalRecord } from './types';

describe.each(testBackends())('proposals written before member-fields/1, on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let records: Records;

  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database);
    records = createRecords(ledger, {});
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  /** A proposal as this version's predecessor wrote it: the whole record in its event and row. */
  async function oldProposal(log: string, record: ProposalRecord): Promise<number> {
    await ledger.transactConcurrently(log, {}, async (tx) => {
      tx.stage(
        { kind: 'proposal', entity: record.id, actor: record.requester, payload: record },
        { table: proposals, values: (link) => proposalCodec.toRow(link, record) },
      );
    });
    const event = (await ledger.events(log)).find((e) => e.entity === record.id)!;
    expect(event.commitment).toBeUndefined();
    return event.seq;
  }

  const code = (error: unknown) => (isLedgerError(error) ? error.code : String(error));

  it('reads and verifies them as before beside new ones, and refuses to erase their arguments', async () => {
    const log = 'mixed';
    const ops: RecordContext = { log, caller: { identity: 'user:ops' } };
    const agent: RecordContext = {
      log,
      caller: { identity: 'agent:billing', scopes: ['payments:write'], environments: ['prod'] },
    };
    await records.registerTool(ops, refundTool());
    const { proposal: fresh } = await records.propose(agent, refund('new-1'));
    const old = { ...fresh, id: 'prop_old1', idempotency_key: 'old-1' };
    const oldSeq = await oldProposal(log, old);

    const told = await records.story(log, old.id);
    expect(told.proposal).toEqual(old);
    expect(told.proposal).not.toHaveProperty('redacted');
    expect((await records.story(log, fresh.id)).proposal).toEqual(fresh);

    const report = await ledger.verifyChain({ log });
    expect(report).toMatchObject({ ok: true, failures: [] });

    const refused = await redactFields(ledger, {
      log,
      seq: oldSeq,
      fields: ['amount'],
      reason: 'erasure request',
      actor: 'user:dpo',
    }).catch(code);
    expect(refused).toBe('EVENT_NOT_REDACTABLE');
    expect((await ledger.events(log)).length).toBe(oldSeq);
  });
});
