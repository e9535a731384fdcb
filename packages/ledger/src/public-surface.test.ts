import { is, Table } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import * as ledger from './index';
import * as testing from './testing';

// The main entry is what the apps build on; the tables and the units the ledger is built from
// stay inside it (docs/ARCHITECTURE.md, "The records service and the ledger's surface").
describe('@vouch/ledger', () => {
  it('exports no table', () => {
    const tables = Object.entries(ledger)
      .filter(([, value]) => is(value, Table))
      .map(([name]) => name);
    expect(tables).toEqual([]);
  });

  it('exports none of the units the append path and the records service are built from', () => {
    const internals = [
      'BatchRun',
      'GroupCommit',
      'batchedReads',
      'logReads',
      'anyOf',
      'insertRows',
      'insertTables',
      'commitInOneStatement',
      'MerkleFrontiers',
      'selectRows',
    ];
    expect(Object.keys(ledger).filter((name) => internals.includes(name))).toEqual([]);
  });

  it('keeps test helpers in @vouch/ledger/testing', () => {
    expect(Object.keys(ledger)).not.toContain('tamper');
    expect(Object.keys(testing)).toEqual(
      expect.arrayContaining(['tamper', 'tableRowCounts', 'testBackends']),
    );
  });
});
