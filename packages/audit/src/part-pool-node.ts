import { Worker } from 'node:worker_threads';
import type { PartResult, PartTask } from './bundle-part-node';

interface Job {
  task: PartTask;
  resolve: (result: PartResult) => void;
  reject: (error: Error) => void;
}

interface PoolWorker {
  worker: Worker;
  /** Jobs sent to this worker and not answered yet, by message id. */
  jobs: Map<number, Job>;
}

/**
 * Jobs a worker holds at once: the one it verifies and the next, already in its message
 * queue, so it starts on the next part without waiting for this thread to hear back and
 * send one (a wait that grows when the machine is busy).
 */
const JOBS_PER_WORKER = 2;

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
    // Fill every worker's first slot before any second one, so the work spreads out.
    for (let slots = 1; slots <= JOBS_PER_WORKER; slots++) {
      for (const entry of this.#workers) {
        if (this.#queue.length === 0) return;
        if (entry.jobs.size >= slots) continue;
        const job = this.#queue.shift()!;
        const id = this.#nextId++;
        entry.jobs.set(id, job);
        entry.worker.ref();
        entry.worker.postMessage({ id, task: job.task });
      }
    }
  }

  #start(): PoolWorker {
    const entry: PoolWorker = { worker: startWorker(), jobs: new Map() };
    const settle = (ids: Iterable<number>, settleJob: (job: Job) => void) => {
      for (const id of [...ids]) {
        const job = entry.jobs.get(id);
        entry.jobs.delete(id);
        if (job !== undefined) settleJob(job);
      }
      if (entry.jobs.size === 0) entry.worker.unref();
      this.#dispatch();
    };
    entry.worker.on('message', (message: { id: number; result?: PartResult; error?: string }) =>
      settle([message.id], (job) =>
        message.error === undefined ? job.resolve(message.result!) : job.reject(new Error(message.error)),
      ),
    );
    entry.worker.on('error', (error) => settle(entry.jobs.keys(), (job) => job.reject(error)));
    entry.worker.on('exit', (code) => {
      // A worker that died leaves the pool (the next call starts another); its jobs fail.
      const index = this.#workers.indexOf(entry);
      if (index >= 0) this.#workers.splice(index, 1);
      settle(entry.jobs.keys(), (job) =>
        job.reject(new Error(`a bundle verification worker exited (code ${code})`)),
      );
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
