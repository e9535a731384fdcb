// Internal test support for @vouch/api (not exported): one app over a fresh database.
import {
  createLedger,
  createRecords,
  type Database,
  type Ledger,
  OPERATOR_ACTOR,
  type RecordsOptions,
} from '@vouch/ledger';
import { tableRowCounts, testBackends } from '@vouch/ledger/testing';
import { type AppOptions, createApp, type VouchApp } from '../app';
import { createKeyStore, type KeyStore } from '../auth/key-store';
import type { Role } from '../auth/roles';
import { createMemoryLogger } from '../logger';

export interface Harness {
  app: VouchApp;
  database: Database;
  ledger: Ledger;
  keys: KeyStore;
  logger: ReturnType<typeof createMemoryLogger>;
  /** Issue a key and return its secret. */
  keyFor(
    identity: string,
    roles: Role[],
    limits?: { environments?: string[]; logs?: string[]; scopes?: string[] },
  ): Promise<string>;
  /** `app.request` with a bearer key and a JSON body. */
  call(
    method: string,
    path: string,
    options?: { key?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<Response>;
  /** {@link Harness.call} with a key, and the answer's status and parsed JSON body. */
  // biome-ignore lint/suspicious/noExplicitAny: tests read answers of every shape
  json(method: string, path: string, key: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** Rows in each table that a request could write to. */
  rowCounts(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

/** A harness on PGlite (in memory); pass `open` to use another backend. */
export async function createHarness(
  options: Partial<Omit<AppOptions, 'ledger'>> & {
    open?: () => Promise<Database>;
    /** The app's records service over the harness's ledger, with these options. */
    recordsOptions?: RecordsOptions;
  } = {},
): Promise<Harness> {
  const open = options.open ?? testBackends()[0]!.open;
  const database = await open();
  // Batches are counted into the app's metrics when the test passes its own.
  const ledger = createLedger(database, options.metrics ? { onBatch: options.metrics.observeBatch } : {});
  const keys = options.keys ?? createKeyStore(ledger);
  const logger = createMemoryLogger();
  const { recordsOptions, ...appOptions } = options;
  const records = recordsOptions ? { records: createRecords(ledger, recordsOptions) } : {};
  const app = createApp({ logger, ...appOptions, ...records, ledger, keys });
  const harness: Harness = {
    app,
    database,
    ledger,
    keys,
    logger,
    async keyFor(identity, roles, limits = {}) {
      const { secret } = await keys.create({
        identity,
        roles,
        scopes: limits.scopes ?? [],
        environments: limits.environments ?? null,
        logs: limits.logs ?? null,
        createdBy: OPERATOR_ACTOR,
        // Tests build the keys they need, separated roles included (to prove the other defences).
        allowRoleCombination: true,
      });
      return secret;
    },
    call(method, path, { key, body, headers = {} } = {}) {
      const init: RequestInit = { method, headers: { ...headers } };
      if (key !== undefined) (init.headers as Record<string, string>).authorization = `Bearer ${key}`;
      if (body !== undefined) {
        (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
        init.body = typeof body === 'string' ? body : JSON.stringify(body);
      }
      return Promise.resolve(app.request(path, init));
    },
    async json(method, path, key, body) {
      const response = await harness.call(method, path, { key, ...(body === undefined ? {} : { body }) });
      return { status: response.status, body: await response.json() };
    },
    rowCounts: () => tableRowCounts(database),
    async close() {
      await ledger.close();
      await database.close();
    },
  };
  return harness;
}
