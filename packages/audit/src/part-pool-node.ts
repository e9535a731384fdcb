import { Worker } from 'node:worker_threads';
import type { PartResult, PartTask } from './bundle-part-node';

interface Job {
  task: PartTask;
  resolve: (result: PartResult) => void;
  reject: (error: Error) => void;
}

interface PoolWorker {
  worker: Worker;
  job: Job | undefined;
}

/**
 * The worker threads that verify parts of bundle files, started on first use and kept for
 * later calls (a verifier run twice, a benchmark after its warm-up). An idle pool does not
 * keep the process alive.
 */
class PartPool {
  readonly #workers: PoolWorker[] = [];
  readonly #queue: Job[] = [];
  #nextId = 0;

  /** At least `size` workers. */
  grow(size: number): void {
    while (this.#workers.length < size) this.#workers.push(this.#start());
  }

  run(task: PartTask): Promise<PartResult> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ task, resolve, reject });
      this.#dispatch();
    });
  }

  #dispatch(): void {
    for (const entry of this.#workers) {
      if (this.#queue.length === 0) return;
      if (entry.job !== undefined) continue;
      const job = this.#queue.shift()!;
      entry.job = job;
      entry.worker.ref();
      entry.worker.postMessage({ id: this.#nextId++, task: job.task });
    }
  }

  #start(): PoolWorker {
    const entry: PoolWorker = { worker: startWorker(), job: undefined };
    const settle = (settleJob: (job: Job) => void) => {
      const job = entry.job;
      entry.job = undefined;
      entry.worker.unref();
      if (job !== undefined) settleJob(job);
      this.#dispatch();
    };
    entry.worker.on('message', (message: { result?: PartResult; error?: string }) =>
      settle((job) =>
        message.error === undefined ? job.resolve(message.result!) : job.reject(new Error(message.error)),
      ),
    );
    entry.worker.on('error', (error) => settle((job) => job.reject(error)));
    entry.worker.on('exit', (code) => {
      // A worker that died leaves the pool (the next call starts another); its job fails.
      const index = this.#workers.indexOf(entry);
      if (index >= 0) this.#workers.splice(index, 1);
      settle((job) => job.reject(new Error(`a bundle verification worker exited (code ${code})`)));
    });
    entry.worker.unref();
    return entry;
  }
}

export const partPool = new PartPool();

const FROM_SOURCE = import.meta.url.endsWith('.ts');

function startWorker(): Worker {
  const file = new URL(`./bundle-worker-node.${FROM_SOURCE ? 'ts' : 'js'}`, import.meta.url);
  if (!FROM_SOURCE) return new Worker(file);
  // Run from the repository's TypeScript (tsx, vitest): the worker loads the sources through
  // tsx too, with the "@vouch/source" condition the workspace packages resolve by. A worker
  // does not inherit the loader hooks of the thread that starts it.
  const tsx = import.meta.resolve('tsx/esm/api');
  const condition =
    'export async function resolve(specifier, context, next) { return next(specifier, { ...context, conditions: ["@vouch/source", ...context.conditions] }); }';
  return new Worker(
    `require('node:module').register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(condition)}));
import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(file.href)}); });`,
    { eval: true },
  );
}
