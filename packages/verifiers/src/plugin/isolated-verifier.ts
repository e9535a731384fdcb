import { isDeepStrictEqual } from 'node:util';
import { Worker } from 'node:worker_threads';
import {
  type AnyVerifier,
  type FetchGrant,
  isVerifierError,
  type RedisGrant,
  type RedisReadCommand,
  type SqlGrant,
  type SqlParam,
  sourceUnavailable,
  VERIFIER_ERROR_CODES,
  type VerifierContext,
  VerifierError,
  type VerifierErrorCode,
} from '@vouch/verifier-sdk';
import { readCapped } from '../shared/read-capped';
import { PLUGIN_WORKER_SCRIPT } from './plugin-worker-script';

/** Old-generation heap a plugin worker gets when its configuration names no `memoryMb`. */
export const DEFAULT_PLUGIN_MEMORY_MB = 128;

/** How long a plugin module may take to import and describe itself. */
export const PLUGIN_LOAD_TIMEOUT_MS = 30_000;

/**
 * After a check's deadline, how long its worker has to show it is not stuck before it is stopped.
 * Short on purpose: a check that arrives meanwhile waits for the answer against its own deadline,
 * and stopping a worker that was merely slow to answer costs only a restart.
 */
export const PLUGIN_STUCK_GRACE_MS = 250;

/** The largest response body a plugin's `fetch` hands across (the whole body is read by the host). */
export const PLUGIN_FETCH_MAX_BYTES = 16 * 1024 * 1024;

/** Options for {@link loadIsolatedVerifier}. */
export interface IsolatedVerifierOptions {
  /** The plugin module, as a `file:` URL. */
  url: string;
  /** The export that holds the verifier. */
  exportName: string;
  /** The raw options from the configuration, validated by the plugin's own schema in its worker. */
  options: unknown;
  /** Old-generation heap limit of the worker (default {@link DEFAULT_PLUGIN_MEMORY_MB}). */
  memoryMb?: number;
}

/** A plugin running in its own worker, seen by the host as an ordinary verifier. */
export interface IsolatedVerifier {
  /** Register this: its `check` runs the plugin's `check` in the worker. */
  verifier: AnyVerifier;
  /** Stop the worker. */
  close(): Promise<void>;
}

/** Why a plugin could not be loaded; `code` is `EXPORT_MISSING`, `LOAD_TIMEOUT`, a Node error code, or absent. */
export class PluginLoadError extends Error {
  override readonly name = 'PluginLoadError';
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

interface ErrorShape {
  name: string;
  message: string;
  code?: string;
  evidence?: Record<string, unknown>;
}

interface Descriptor extends Record<string, unknown> {
  checkType: string;
  options?:
    | { value: unknown }
    | { issues: { message: string; path: PropertyKey[] }[] }
    | { async: true }
    | { notSchema: true };
}

type FromWorker =
  | { type: 'ready'; descriptor: Descriptor }
  | { type: 'load-failed'; error: ErrorShape }
  | { type: 'result'; id: number; ok: true; value: unknown }
  | { type: 'result'; id: number; ok: false; error: ErrorShape }
  | { type: 'call'; id: number; checkId: number; grant: 'fetch' | 'sql' | 'redis'; args: unknown[] }
  | { type: 'abort-call'; id: number }
  | {
      type: 'log';
      checkId: number;
      level: 'debug' | 'info' | 'warn' | 'error';
      message: string;
      fields?: Record<string, unknown>;
    }
  | { type: 'pong' };

interface RunningCheck {
  worker: Worker;
  context: VerifierContext<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * Load a third-party verifier into a worker thread of its own and return a stand-in the host
 * registers like any verifier.
 *
 * Before the plugin's module is imported, the worker closes the network (global `fetch`,
 * `net`, `tls`, `http(s)`, `http2`, `dgram`, `dns`) and other processes and threads
 * (`child_process`, `worker_threads`, `inspector`, `process.binding`): each throws an error
 * whose code is `PLUGIN_NETWORK_DENIED` or `PLUGIN_PROCESS_DENIED`. The worker starts with an
 * empty environment. What the plugin can reach is what its check's context hands it: `fetch`,
 * `sql` and `redis` are proxies to the host's grants for the registration (the SSRF guard, the
 * read-only connections), called here in the host.
 *
 * Limits: the worker's heap is capped (`memoryMb`); running out stops the worker and the check
 * becomes `VERIFIER_CRASHED`. A check past its deadline is `VERIFIER_TIMEOUT` as for any
 * verifier, and a worker that is still busy after {@link PLUGIN_STUCK_GRACE_MS} (a plugin that
 * spins) is stopped. A stopped or crashed worker is started again for the next check; the host
 * process is never affected.
 *
 * This is defence in depth inside one OS process, not a sandbox for hostile native code: see
 * docs/verification.md, "Plugin isolation".
 */
export async function loadIsolatedVerifier(options: IsolatedVerifierOptions): Promise<IsolatedVerifier> {
  const plugin = new PluginWorker(options);
  const descriptor = await plugin.start();
  const { checkType, options: validated, ...definition } = descriptor;
  const verifier: Record<string, unknown> = { ...definition };
  if (validated !== undefined) verifier.options = replayedSchema(options.options, validated);
  if (checkType === 'function') {
    verifier.check = (context: VerifierContext<unknown>) => plugin.check(context);
  } else {
    verifier.check = checkType === 'undefined' ? undefined : checkType;
  }
  return { verifier: verifier as unknown as AnyVerifier, close: () => plugin.close() };
}

/**
 * The plugin's schema lives in its worker; it validated the configured options there. The
 * registry validates them again against this stand-in, which answers with that result.
 */
function replayedSchema(raw: unknown, validated: NonNullable<Descriptor['options']>) {
  return {
    '~standard': {
      version: 1 as const,
      vendor: 'vouch-plugin-worker',
      validate(value: unknown) {
        if (!isDeepStrictEqual(value, raw ?? {})) {
          return {
            issues: [{ message: 'options of a plugin are validated in its worker, once, as configured' }],
          };
        }
        if ('async' in validated) return Promise.resolve({ value });
        if ('notSchema' in validated)
          return { issues: [{ message: 'options must be a Standard Schema (e.g. zod)' }] };
        if ('issues' in validated) return { issues: validated.issues };
        return { value: validated.value };
      },
    },
  };
}

class PluginWorker {
  private worker: Worker | null = null;
  private starting: Promise<Descriptor> | null = null;
  private closed = false;
  private nextCheck = 0;
  private readonly checks = new Map<number, RunningCheck>();
  /** Grant calls in flight, by worker and the worker's call id. */
  private readonly calls = new Map<Worker, Map<number, AbortController>>();
  /** Workers stopped because they did not answer after a deadline. */
  private readonly stuck = new WeakSet<Worker>();
  private awaitingPong: (() => void)[] = [];
  /** Set while a worker past a deadline is asked whether it still answers: new checks wait for the answer. */
  private probing: Promise<void> | null = null;

  constructor(private readonly options: IsolatedVerifierOptions) {}

  /** Start the worker (again) and wait until the plugin is imported. */
  start(): Promise<Descriptor> {
    this.starting ??= this.spawn().catch((error: unknown) => {
      this.starting = null;
      throw error;
    });
    return this.starting;
  }

  async check(context: VerifierContext<unknown>): Promise<unknown> {
    if (this.closed) throw new VerifierError('VERIFIER_CRASHED', 'the plugin was closed');
    while (this.probing) await this.probing;
    await this.start();
    const worker = this.worker;
    if (worker === null)
      throw new VerifierError('VERIFIER_CRASHED', "the plugin's worker stopped as it started");
    const id = ++this.nextCheck;
    const result = new Promise<unknown>((resolve, reject) => {
      this.checks.set(id, { worker, context, resolve, reject });
    });
    worker.ref();
    const onAbort = () => {
      this.abort(id, worker, context.signal.reason);
      // Stop waiting: a plugin that ignores its signal must not keep this check (and the worker's
      // reference on the event loop) open. Whatever it answers later is dropped.
      this.checks.get(id)?.reject(context.signal.reason);
    };
    context.signal.addEventListener('abort', onAbort, { once: true });
    try {
      worker.postMessage({
        type: 'check',
        id,
        context: {
          verifier: context.verifier,
          phase: context.phase,
          proposal: context.proposal,
          observation: context.observation,
          postcondition: context.postcondition,
          options: context.options,
          timeoutMs: context.timeoutMs,
          now: context.now().getTime(),
          grants: {
            fetch: context.fetch !== undefined,
            sql: context.sql?.name ?? null,
            redis: context.redis?.name ?? null,
          },
        },
      });
      return await result;
    } finally {
      context.signal.removeEventListener('abort', onAbort);
      this.checks.delete(id);
      if (this.checks.size === 0 && this.worker === worker) worker.unref();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = null;
    this.starting = null;
    if (worker) await worker.terminate();
  }

  private spawn(): Promise<Descriptor> {
    const memoryMb = this.options.memoryMb ?? DEFAULT_PLUGIN_MEMORY_MB;
    const worker = new Worker(PLUGIN_WORKER_SCRIPT, {
      eval: true,
      workerData: {
        url: this.options.url,
        exportName: this.options.exportName,
        options: this.options.options,
      },
      env: {},
      // Plain Node, whatever flags the server runs with (a TypeScript loader, export conditions):
      // a plugin is built JavaScript and resolves its own imports as it would anywhere.
      execArgv: [],
      resourceLimits: {
        maxOldGenerationSizeMb: memoryMb,
        maxYoungGenerationSizeMb: Math.min(16, memoryMb / 4),
      },
    });
    this.worker = worker;
    return new Promise<Descriptor>((resolve, reject) => {
      let loaded = false;
      const timer = setTimeout(() => {
        reject(new PluginLoadError(`it did not load within ${PLUGIN_LOAD_TIMEOUT_MS} ms`, 'LOAD_TIMEOUT'));
        void worker.terminate();
      }, PLUGIN_LOAD_TIMEOUT_MS);
      let died: Error | undefined;
      worker.on('message', (message: FromWorker) => {
        if (message.type === 'ready') {
          loaded = true;
          clearTimeout(timer);
          worker.unref();
          resolve(message.descriptor);
        } else if (message.type === 'load-failed') {
          clearTimeout(timer);
          reject(new PluginLoadError(message.error.message, message.error.code));
          void worker.terminate();
        } else {
          this.onMessage(worker, message);
        }
      });
      worker.on('error', (error) => {
        died = error;
      });
      worker.on('exit', () => {
        clearTimeout(timer);
        if (this.worker === worker) {
          this.worker = null;
          this.starting = null;
        }
        if (!loaded) {
          reject(
            new PluginLoadError(
              died ? died.message : 'its worker stopped while loading',
              (died as NodeJS.ErrnoException | undefined)?.code,
            ),
          );
        }
        this.failRunning(worker, died, memoryMb);
        // Warm a replacement for the next check (its import counts against that check's deadline
        // otherwise). Once: a replacement that fails to load is retried by the next check.
        if (loaded && !this.closed && this.worker === null) this.start().catch(() => undefined);
      });
    });
  }

  private onMessage(worker: Worker, message: FromWorker): void {
    switch (message.type) {
      case 'result': {
        const check = this.checks.get(message.id);
        if (check === undefined) return;
        if (message.ok) check.resolve(message.value);
        else check.reject(fromWorkerError(message.error));
        return;
      }
      case 'call': {
        const check = this.checks.get(message.checkId);
        const controller = new AbortController();
        const calls = this.calls.get(worker) ?? new Map<number, AbortController>();
        this.calls.set(worker, calls.set(message.id, controller));
        const reply = (answer: Record<string, unknown>, transfer: ArrayBuffer[] = []) => {
          calls.delete(message.id);
          if (this.worker === worker)
            worker.postMessage({ type: 'reply', id: message.id, ...answer }, transfer);
        };
        if (check === undefined) {
          reply({ ok: false, error: { name: 'Error', message: 'the check this call belongs to has ended' } });
          return;
        }
        const signal = AbortSignal.any([check.context.signal, controller.signal]);
        callGrant(check.context, message.grant, message.args, signal).then(
          ({ value, transfer }) => reply({ ok: true, value }, transfer),
          (error: unknown) => reply({ ok: false, error: toErrorShape(error) }),
        );
        return;
      }
      case 'abort-call':
        this.calls.get(worker)?.get(message.id)?.abort(new Error('the plugin aborted the call'));
        return;
      case 'log': {
        const check = this.checks.get(message.checkId);
        check?.context.logger[message.level]?.(message.message, message.fields);
        return;
      }
      case 'pong': {
        const waiting = this.awaitingPong;
        this.awaitingPong = [];
        for (const answered of waiting) answered();
        return;
      }
    }
  }

  /** Pass the deadline (or cancellation) on; stop the worker when it does not even answer a ping. */
  private abort(id: number, worker: Worker, reason: unknown): void {
    if (this.worker !== worker) return;
    worker.postMessage({ type: 'abort', id, reason: toErrorShape(reason) });
    if (this.probing) return;
    this.probing = new Promise<void>((settled) => {
      const timer = setTimeout(() => {
        this.awaitingPong = [];
        if (this.worker === worker) {
          this.worker = null;
          this.starting = null;
          this.stuck.add(worker);
          void worker.terminate();
        }
        this.probing = null;
        settled();
      }, PLUGIN_STUCK_GRACE_MS);
      this.awaitingPong.push(() => {
        clearTimeout(timer);
        this.probing = null;
        settled();
      });
    });
    worker.postMessage({ type: 'ping' });
  }

  private failRunning(worker: Worker, died: Error | undefined, memoryMb: number): void {
    for (const controller of this.calls.get(worker)?.values() ?? []) {
      controller.abort(new Error("the plugin's worker stopped"));
    }
    this.calls.delete(worker);
    const outOfMemory = (died as NodeJS.ErrnoException | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY';
    const error = new VerifierError(
      'VERIFIER_CRASHED',
      outOfMemory
        ? `the plugin ran out of memory (its worker's limit is ${memoryMb} MB); the worker was stopped`
        : this.stuck.has(worker)
          ? "the plugin's worker was stopped: a check kept it busy past its deadline"
          : `the plugin's worker stopped${died ? `: ${died.message}` : ''}`,
      { evidence: { worker: outOfMemory ? 'out-of-memory' : this.stuck.has(worker) ? 'stuck' : 'stopped' } },
    );
    // Only checks of this worker: a replacement may already be running others.
    for (const check of this.checks.values()) if (check.worker === worker) check.reject(error);
  }
}

async function callGrant(
  context: VerifierContext<unknown>,
  grant: 'fetch' | 'sql' | 'redis',
  args: unknown[],
  signal: AbortSignal,
): Promise<{ value: unknown; transfer?: ArrayBuffer[] }> {
  if (grant === 'fetch') {
    const fetch: FetchGrant | undefined = context.fetch;
    if (fetch === undefined) throw new VerifierError('GRANT_MISSING', 'the host did not grant fetch');
    const [url, init] = args as [
      string,
      { method: string; headers: [string, string][]; body?: Uint8Array; redirect?: RequestInit['redirect'] },
    ];
    const response = await fetch(url, { ...init, signal });
    const body = [101, 204, 205, 304].includes(response.status)
      ? null
      : await readCapped(response, PLUGIN_FETCH_MAX_BYTES);
    if (body === null && ![101, 204, 205, 304].includes(response.status)) {
      throw sourceUnavailable(`the response is larger than ${PLUGIN_FETCH_MAX_BYTES} bytes`, {
        evidence: { maxBytes: PLUGIN_FETCH_MAX_BYTES },
      });
    }
    const buffer = body === null ? null : (body.buffer as ArrayBuffer);
    return {
      value: {
        status: response.status,
        statusText: response.statusText,
        headers: [...response.headers],
        url: response.url || url,
        redirected: response.redirected,
        body: buffer,
      },
      ...(buffer ? { transfer: [buffer] } : {}),
    };
  }
  if (grant === 'sql') {
    const sql: SqlGrant | undefined = context.sql;
    if (sql === undefined) throw new VerifierError('GRANT_MISSING', 'the host did not grant sql');
    const [text, params, options] = args as [string, SqlParam[], { timeoutMs?: number; maxRows?: number }];
    const timeoutMs = Math.min(options.timeoutMs ?? context.timeoutMs, context.timeoutMs);
    const value = await sql.query(text, params, {
      signal,
      timeoutMs,
      ...(options.maxRows !== undefined ? { maxRows: options.maxRows } : {}),
    });
    return { value };
  }
  const redis: RedisGrant | undefined = context.redis;
  if (redis === undefined) throw new VerifierError('GRANT_MISSING', 'the host did not grant redis');
  const [name, commandArgs, options] = args as [
    RedisReadCommand,
    (string | number)[],
    { timeoutMs?: number },
  ];
  const timeoutMs = Math.min(options.timeoutMs ?? context.timeoutMs, context.timeoutMs);
  return { value: await redis.command(name, commandArgs, { signal, timeoutMs }) };
}

function toErrorShape(error: unknown): ErrorShape {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const shape: ErrorShape = { name: error.name, message: error.message };
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') shape.code = code;
  if (isVerifierError(error) && error.evidence !== undefined) {
    try {
      shape.evidence = structuredClone(error.evidence);
    } catch {
      // Evidence that cannot be copied stays behind; the message still says what happened.
    }
  }
  return shape;
}

function fromWorkerError(shape: ErrorShape): Error {
  if (
    shape.name === 'VerifierError' &&
    (VERIFIER_ERROR_CODES as readonly string[]).includes(shape.code ?? '')
  ) {
    return new VerifierError(
      shape.code as VerifierErrorCode,
      shape.message,
      shape.evidence ? { evidence: shape.evidence } : undefined,
    );
  }
  const error = new Error(shape.message);
  error.name = shape.name;
  return error;
}
