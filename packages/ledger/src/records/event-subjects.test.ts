import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../database';
import { createLedger, type Ledger } from '../ledger';
import { testBackends } from '../testing';
import { eventsWithoutRows } from './event-subjects';

// The subject index reads the proposal (or request) out of the canonical payload in SQL: any
// payload the ledger can store must index, and be found by what it names.
describe.each(testBackends())('the events without rows, by subject, on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  beforeAll(async () => {
    database = await open();
    ledger = createLedger(database);
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  it('finds events of each kind by the proposal or request they name, whatever else the payload holds', async () => {
    const log = 'subjects';
    // NUL (which the json type refuses to read around), escaped backslashes and quotes beside the subject.
    const awkward = {
      a: 'x\u0000y',
      b: '\\u0000',
      c: '\\',
      d: '"proposal_id":"prop_2"',
      e: { proposal_id: 'nested' },
    };
    const observation = await ledger.append({
      log,
      kind: 'observation',
      entity: 'obs_1',
      actor: 'agent:a',
      payload: { ...awkward, id: 'obs_1', proposal_id: 'prop_1' },
    });
    const claim = await ledger.append({
      log,
      kind: 'execution_claim',
      entity: 'clm_1',
      actor: 'agent:a',
      payload: { id: 'clm_1', proposal_id: 'prop_1' },
    });
    const use = await ledger.append({
      log,
      kind: 'approval_use',
      entity: 'use_1',
      actor: 'agent:a',
      payload: { id: 'use_1', proposal_id: 'prop_1', request_id: 'req_1' },
    });
    // Not of a guarded kind: never found.
    await ledger.append({
      log,
      kind: 'proposal',
      entity: 'prop_1',
      actor: 'agent:a',
      payload: { proposal_id: 'prop_1' },
    });
    const found = await eventsWithoutRows(database.db, log, ['prop_1', 'req_1', 'prop_2', 'nested']);
    expect(
      found.map(({ kind, subject, seq, entity, table }) => ({ kind, subject, seq, entity, table })),
    ).toEqual(
      expect.arrayContaining([
        {
          kind: 'observation',
          subject: 'prop_1',
          seq: observation.seq,
          entity: 'obs_1',
          table: 'observations',
        },
        {
          kind: 'execution_claim',
          subject: 'prop_1',
          seq: claim.seq,
          entity: 'clm_1',
          table: 'execution_claims',
        },
        { kind: 'approval_use', subject: 'req_1', seq: use.seq, entity: 'use_1', table: 'approval_uses' },
      ]),
    );
    expect(found).toHaveLength(3);
    expect(await eventsWithoutRows(database.db, 'another-log', ['prop_1'])).toEqual([]);
  });
});
