import type { Worker } from 'node:worker_threads';
import type { PartResult, PartTask } from './bundle-part-node';
import { startModuleWorker } from './module-worker-node';

interface Job<Task, Result> {
  task: Task;
  resolve: (result: Result) => void;
  reject: (error: Error) => void;
}

interface PoolWorker<Task, Result> {
  worker: Worker;
  /** Jobs sent to this worker and not answered yet, by message id. */
  jobs: Map<number, Job<Task, Result>>;
}

/**
 * Jobs a worker holds at once: the one it works on and the next, already in its message
 * queue, so it starts on the next without waiting for this thread to hear back and send one
 * (a wait that grows when the machine is busy).
 */
const JOBS_PER_WORKER = 2;

/**
 * Worker threads that take tasks and answer each with a result, started on first use and
 * kept for later calls (a verifier run twice, a benchmark after its warm-up). An idle pool
 * does not keep the process alive.
 *
 * The worker's side: on each `{ id, task }` message, post `{ id, result }` or `{ id, error }`.
 */
export class WorkerPool<Task, Result> {
  readonly #workers: PoolWorker<Task, Result>[] = [];
  readonly #queue: Job<Task, Result>[] = [];
  #nextId = 0;

  /** `start` starts one worker; `what` names them in errors ("a <what> worker exited"). */
  constructor(
    private readonly start: () => Worker,
    private readonly what: string,
  ) {}

  /** At least `size` workers. */
  grow(size: number): void {
    while (this.#workers.length < size) this.#workers.push(this.#start());
  }

  run(task: Task): Promise<Result> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ task, resolve, reject });
      this.#dispatch();
    });
  }

  /** Send `task` to every worker now, beside what they hold (e.g. to release a resource). */
  broadcast(task: Task): Promise<Result[]> {
    return Promise.all(
      this.#workers.map(
        (entry) => new Promise<Result>((resolve, reject) => this.#send(entry, { task, resolve, reject })),
      ),
    );
  }

  #send(entry: PoolWorker<Task, Result>, job: Job<Task, Result>): void {
    const id = this.#nextId++;
    entry.jobs.set(id, job);
    entry.worker.ref();
    entry.worker.postMessage({ id, task: job.task });
  }

  #dispatch(): void {
    // Fill every worker's first slot before any second one, so the work spreads out.
    for (let slots = 1; slots <= JOBS_PER_WORKER; slots++) {
      for (const entry of this.#workers) {
        if (this.#queue.length === 0) return;
        if (entry.jobs.size >= slots) continue;
        this.#send(entry, this.#queue.shift()!);
      }
    }
  }

  #start(): PoolWorker<Task, Result> {
    const entry: PoolWorker<Task, Result> = { worker: this.start(), jobs: new Map() };
    const settle = (ids: Iterable<number>, settleJob: (job: Job<Task, Result>) => void) => {
      for (const id of [...ids]) {
        const job = entry.jobs.get(id);
        entry.jobs.delete(id);
        if (job !== undefined) settleJob(job);
      }
      if (entry.jobs.size === 0) entry.worker.unref();
      this.#dispatch();
    };
    entry.worker.on('message', (message: { id: number; result?: Result; error?: string }) =>
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
        job.reject(new Error(`a ${this.what} worker exited (code ${code})`)),
      );
    });
    entry.worker.unref();
    return entry;
  }
}

/** The worker threads that verify parts of bundle files (see `verifyBundleFile`). */
export const partPool = new WorkerPool<PartTask, PartResult>(
  () => startModuleWorker(import.meta.url, './bundle-worker-node'),
  'bundle verification',
);
