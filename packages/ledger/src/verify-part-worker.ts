import { parentPort } from 'node:worker_threads';
import { type Database, openDatabase } from './database';
import { type EventRangeTask, verifyEventRange } from './verify-part';

/** A message to a part-verification worker: a part of a run, or the end of a run. */
export type PartWorkerTask =
  | { kind: 'part'; run: number; url: string; part: EventRangeTask }
  | { kind: 'end'; run: number };

// A worker thread of parallel `verifyChain` (see verify-chain-parts.ts): each run reads
// through its own connection, opened on its first part and closed when the run ends, so a
// run never holds a connection past its return. Parts are verified one at a time, in the
// order they came (the pool sends the next before this one is done).
const databases = new Map<number, Promise<Database>>();
let previous: Promise<void> = Promise.resolve();

parentPort!.on('message', ({ id, task }: { id: number; task: PartWorkerTask }) => {
  previous = previous.then(async () => {
    try {
      if (task.kind === 'end') {
        const database = databases.get(task.run);
        databases.delete(task.run);
        // A connection that never opened has nothing to close.
        if (database !== undefined) await (await database.catch(() => null))?.close();
        parentPort!.postMessage({ id, result: null });
        return;
      }
      let database = databases.get(task.run);
      if (database === undefined) {
        database = openDatabase({ url: task.url, maxConnections: 2, readOnly: true });
        database.catch(() => {});
        databases.set(task.run, database);
      }
      parentPort!.postMessage({ id, result: await verifyEventRange(await database, task.part) });
    } catch (error) {
      parentPort!.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
    }
  });
});
