import { parentPort } from 'node:worker_threads';
import { type PartTask, verifyPart } from './bundle-part-node';

// A worker thread of `verifyBundleFile`: verifies the parts it is sent, one at a time.
parentPort!.on('message', async ({ id, task }: { id: number; task: PartTask }) => {
  try {
    parentPort!.postMessage({ id, result: await verifyPart(task) });
  } catch (error) {
    parentPort!.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
  }
});
