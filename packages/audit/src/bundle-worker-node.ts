import { parentPort } from 'node:worker_threads';
import { type PartTask, verifyPart } from './bundle-part-node';

// A worker thread of `verifyBundleFile`: verifies the parts it is sent, one at a time, in
// the order they came (the pool sends the next before this one is done).
let previous: Promise<void> = Promise.resolve();
parentPort!.on('message', ({ id, task }: { id: number; task: PartTask }) => {
  previous = previous.then(async () => {
    try {
      parentPort!.postMessage({ id, result: await verifyPart(task) });
    } catch (error) {
      parentPort!.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
    }
  });
});
