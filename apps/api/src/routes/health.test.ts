import type { Database } from '@vouch/ledger';
import { describe, expect, it } from 'vitest';
import { databaseReadiness } from './health';

/** A database whose statements never come back, as a frozen server's would not. */
function silentDatabase(): Database {
  return {
    kind: 'postgres',
    location: 'postgres://silent',
    rows: () => new Promise(() => {}),
  } as unknown as Database;
}

describe('databaseReadiness', () => {
  it('answers DATABASE_UNAVAILABLE by its own deadline when the database does not answer', async () => {
    const report = await databaseReadiness(silentDatabase(), 50);
    expect(report).toEqual({
      ready: false,
      code: 'DATABASE_UNAVAILABLE',
      database: { ok: false, kind: 'postgres', error: 'database did not answer within 50 ms' },
      migrations: { ok: false },
    });
  });

  it('answers DATABASE_UNAVAILABLE when a statement fails', async () => {
    const failing = { ...silentDatabase(), rows: () => Promise.reject(new Error('connection refused')) };
    expect(await databaseReadiness(failing as Database, 1_000)).toMatchObject({
      ready: false,
      code: 'DATABASE_UNAVAILABLE',
      database: { ok: false, error: 'database unreachable' },
    });
  });
});
