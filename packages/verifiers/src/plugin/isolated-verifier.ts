import type { ChildProcess } from 'node:child_process';
import { isDeepStrictEqual } from 'node:util';
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
import { linkOutOfReach, type PluginProcess, type PluginUser, spawnPluginProcess } from './plugin-process';

/** Resident memory a plugin process may use when its configuration names no `memoryMb`. */
export const DEFAULT_PLUGIN_MEMORY_MB = 128;

/** How long a plugin module may take to import and describe itself. */
export const PLUGIN_LOAD_TIMEOUT_MS = 30_000;

/**
 * After a check's deadline, how long its process has to show it is not stuck before it is killed.
 * Short on purpose: a check that arrives meanwhile waits for the answer against its own deadline,
 * and killing a process that was merely slow to answer costs only a restart.
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
  /** The raw options from the configuration, validated by the plugin's own schema in its process. */
  options: unknown;
  /**
   * Resident-memory limit of the plugin's process in MB, off-heap memory (Buffers, native)
   * included (default {@link DEFAULT_PLUGIN_MEMORY_MB}); also its heap limit.
   */
  memoryMb?: number;
  /** Run the plugin's process as this uid/gid (for a server that runs as root). */
  user?: PluginUser;
}

/** A plugin running in its own process, seen by the host as an ordinary verifier. */
export interface IsolatedVerifier {
  /** Register this: its `check` runs the plugin's `check` in the plugin's process. */
  verifier: AnyVerifier;
  /** Stop the process. */
  close(): Promise<void>;
}

/** Why a plugin could not be loaded; `code` is `EXPORT_MISSING`, `LOAD_TIMEOUT`, `LINK_OUT_OF_REACH`, a Node error code, or absent. */
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

type FromPlugin =
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

const LOG_LEVELS: readonly string[] = ['debug', 'info', 'warn', 'error'];

interface RunningCheck {
  child: ChildProcess;
  context: VerifierContext<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * Load a third-party verifier into a process of its own and return a stand-in the host
 * registers like any verifier.
 *
 * The process starts with an empty environment under Node's permission model: it may read the
 * plugin's own folder and nothing else (not `/proc`, the configuration or the data directory),
 * and may not write files, start processes or workers, or load addons. Before the plugin's
 * module is imported, a shim closes what that model leaves open: the network (global `fetch`,
 * `net`, `tls`, `http(s)`, `http2`, `dgram`, `dns`) and every way to signal another process
 * (`process.kill`, `process._kill`, `process._debugProcess`, `os.setPriority`); each throws an
 * error whose code is `PLUGIN_NETWORK_DENIED` or `PLUGIN_PROCESS_DENIED`. What the plugin can
 * reach is what its check's context hands it: `fetch`, `sql` and `redis` are proxies over the
 * IPC channel to the host's grants for the registration (the SSRF guard, the read-only
 * connections), called here in the host.
 *
 * Limits: the process's resident memory is sampled and the process killed past `memoryMb`
 * (its heap and data segment are capped too); the check becomes `VERIFIER_CRASHED`. A check past
 * its deadline is `VERIFIER_TIMEOUT` as for any verifier, and a process still busy after
 * {@link PLUGIN_STUCK_GRACE_MS} (a plugin that spins) is killed. A killed or crashed process is
 * started again for the next check; the server is never affected. See docs/verification.md,
 * "Plugins run outside the server".
 */
export async function loadIsolatedVerifier(options: IsolatedVerifierOptions): Promise<IsolatedVerifier> {
  const link = linkOutOfReach(options.url);
  if (link !== undefined) {
    throw new PluginLoadError(
      `${link} is a symbolic link out of the plugin's folder, which the plugin could read through: replace it with the file it points to`,
      'LINK_OUT_OF_REACH',
    );
  }
  const plugin = new PluginHost(options);
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
 * The plugin's schema lives in its process; it validated the configured options there. The
 * registry validates them again against this stand-in, which answers with that result.
 */
function replayedSchema(raw: unknown, validated: NonNullable<Descriptor['options']>) {
  return {
    '~standard': {
      version: 1 as const,
      vendor: 'vouch-plugin-process',
      validate(value: unknown) {
        if (!isDeepStrictEqual(value, raw ?? {})) {
          return {
            issues: [{ message: 'options of a plugin are validated in its process, once, as configured' }],
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
class PluginHost {
  private child: ChildProcess | null = null;
  private starting: Promise<Descriptor> | null = null;
  private closed = false;
  private nextCheck = 0;
  private readonly checks = new Map<number, RunningCheck>();
  /** Grant calls in flight, by process and the process's call id. */
  private readonly calls = new Map<ChildProcess, Map<number, AbortController>>();
  private readonly watched = new WeakMap<ChildProcess, PluginProcess>();
  private awaitingPong: (() => void)[] = [];
  /** Set while a process past a deadline is asked whether it still answers: new checks wait for the answer. */
  private probing: Promise<void> | null = null;

  constructor(private readonly options: IsolatedVerifierOptions) {}

  private get memoryMb(): number {
    return this.options.memoryMb ?? DEFAULT_PLUGIN_MEMORY_MB;
  }

  /** Start the process (again) and wait until the plugin is imported. */
  start(): Promise<Descriptor> {
    this.starting ??= this.spawn().catch((error: unknown) => {
      this.starting = null;
      throw error;
    });
    return this.starting;
  }

  async check(context: VerifierContext<unknown>): Promise<unknown> {
    if (this.closed) throw new VerifierError('VERIFIER_CRASHED', 'the plugin was closed');
    // Aborted already: its abort event has fired, and the plugin would never hear of it.
    context.signal.throwIfAborted();
    while (this.probing) await this.probing;
    await this.start();
    const child = this.child;
    if (child === null)
      throw new VerifierError('VERIFIER_CRASHED', "the plugin's process stopped as it started");
    const id = ++this.nextCheck;
    const result = new Promise<unknown>((resolve, reject) => {
      this.checks.set(id, { child, context, resolve, reject });
    });
    this.watched.get(child)?.hold(true);
    const onAbort = () => {
      this.abort(id, child, context.signal.reason);
      // Stop waiting: a plugin that ignores its signal must not keep this check (and the process's
      // reference on the event loop) open. Whatever it answers later is dropped.
      this.checks.get(id)?.reject(context.signal.reason);
    };
    context.signal.addEventListener('abort', onAbort, { once: true });
    try {
      this.send(child, { type: 'check', id, context: checkInput(context) });
      return await result;
    } finally {
      context.signal.removeEventListener('abort', onAbort);
      this.checks.delete(id);
      if (this.checks.size === 0 && this.child === child) this.watched.get(child)?.hold(false);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const child = this.child;
    this.child = null;
    this.starting = null;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      // An idle process is unreferenced so it never keeps the server alive; whoever closes it
      // waits for its exit, so hold the loop open until then (a CLI would otherwise end first).
      this.watched.get(child)?.hold(true);
      child.kill('SIGKILL');
      await exited;
    }
  }

  /** Send if the channel is open; a closed one means the process is gone, which `exit` reports. */
  private send(child: ChildProcess, message: Record<string, unknown>): void {
    this.watched.get(child)?.send(message);
  }

  private spawn(): Promise<Descriptor> {
    const plugin = spawnPluginProcess({
      url: this.options.url,
      memoryMb: this.memoryMb,
      ...(this.options.user ? { user: this.options.user } : {}),
    });
    const { child } = plugin;
    this.child = child;
    this.watched.set(child, plugin);
    return new Promise<Descriptor>((resolve, reject) => {
      let loaded = false;
      const timer = setTimeout(() => {
        reject(new PluginLoadError(`it did not load within ${PLUGIN_LOAD_TIMEOUT_MS} ms`, 'LOAD_TIMEOUT'));
        child.kill('SIGKILL');
      }, PLUGIN_LOAD_TIMEOUT_MS);
      let died: Error | undefined;
      plugin.onMessage((raw) => {
        const message = raw as FromPlugin;
        if (message.type === 'ready') {
          loaded = true;
          clearTimeout(timer);
          plugin.hold(false);
          resolve(message.descriptor);
        } else if (message.type === 'load-failed') {
          clearTimeout(timer);
          reject(new PluginLoadError(message.error.message, message.error.code));
          child.kill('SIGKILL');
        } else {
          this.onMessage(child, message);
        }
      });
      child.on('error', (error) => {
        died ??= error;
      });
      child.on('exit', (code, signal) => {
        clearTimeout(timer);
        if (this.child === child) {
          this.child = null;
          this.starting = null;
        }
        if (!loaded) reject(loadFailure(plugin, died, code, signal));
        this.failRunning(plugin, died, code, signal);
        // Warm a replacement for the next check (its import counts against that check's deadline
        // otherwise). Once: a replacement that fails to load is retried by the next check.
        if (loaded && !this.closed && this.child === null) this.start().catch(() => undefined);
      });
      this.send(child, {
        type: 'load',
        url: this.options.url,
        exportName: this.options.exportName,
        options: this.options.options,
      });
    });
  }

  private onMessage(child: ChildProcess, message: FromPlugin): void {
    switch (message.type) {
      case 'result': {
        const check = this.checks.get(message.id);
        if (check === undefined || check.child !== child) return;
        if (message.ok) check.resolve(message.value);
        else check.reject(fromPluginError(message.error));
        return;
      }
      case 'call':
        this.onCall(child, message);
        return;
      case 'abort-call':
        this.calls.get(child)?.get(message.id)?.abort(new Error('the plugin aborted the call'));
        return;
      case 'log': {
        const check = this.checks.get(message.checkId);
        if (check?.child === child && LOG_LEVELS.includes(message.level)) {
          check.context.logger[message.level](String(message.message), message.fields);
        }
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

  private onCall(child: ChildProcess, message: Extract<FromPlugin, { type: 'call' }>): void {
    const check = this.checks.get(message.checkId);
    const controller = new AbortController();
    const calls = this.calls.get(child) ?? new Map<number, AbortController>();
    this.calls.set(child, calls.set(message.id, controller));
    const reply = (answer: Record<string, unknown>) => {
      calls.delete(message.id);
      if (this.child === child) this.send(child, { type: 'reply', id: message.id, ...answer });
    };
    // A plugin answers only for its own checks: a call naming another process's check is refused.
    if (check === undefined || check.child !== child) {
      reply({ ok: false, error: { name: 'Error', message: 'the check this call belongs to has ended' } });
      return;
    }
    const signal = AbortSignal.any([check.context.signal, controller.signal]);
    callGrant(check.context, message.grant, message.args, signal).then(
      ({ value }) => reply({ ok: true, value }),
      (error: unknown) => reply({ ok: false, error: toErrorShape(error) }),
    );
  }

  /** Pass the deadline (or cancellation) on; kill the process when it does not even answer a ping. */
  private abort(id: number, child: ChildProcess, reason: unknown): void {
    if (this.child !== child) return;
    this.send(child, { type: 'abort', id, reason: toErrorShape(reason) });
    if (this.probing) return;
    this.probing = new Promise<void>((settled) => {
      const timer = setTimeout(() => {
        this.awaitingPong = [];
        if (this.child === child) {
          this.child = null;
          this.starting = null;
          this.watched.get(child)?.killStuck();
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
    this.send(child, { type: 'ping' });
  }

  private failRunning(
    plugin: PluginProcess,
    died: Error | undefined,
    code: number | null,
    signal: NodeJS.Signals | null,
  ): void {
    const { child } = plugin;
    for (const controller of this.calls.get(child)?.values() ?? []) {
      controller.abort(new Error("the plugin's process stopped"));
    }
    this.calls.delete(child);
    const error = crashError(plugin, this.memoryMb, died, code, signal);
    // Only checks of this process: a replacement may already be running others.
    for (const check of this.checks.values()) if (check.child === child) check.reject(error);
  }
}

/** What a check hands the plugin's process: plain data, and which grants it may call back. */
function checkInput(context: VerifierContext<unknown>): Record<string, unknown> {
  return {
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
  };
}

/** Why a process that had not loaded the plugin yet is gone. */
function loadFailure(
  plugin: PluginProcess,
  died: Error | undefined,
  code: number | null,
  signal: NodeJS.Signals | null,
): PluginLoadError {
  if (died) return new PluginLoadError(died.message, (died as NodeJS.ErrnoException).code);
  if (code === 97)
    return new PluginLoadError('its process could not be given its data limit', 'LIMIT_FAILED');
  const stderr = plugin.stderrTail().trim();
  return new PluginLoadError(
    `its process stopped while loading (${signal ?? `exit code ${code}`})${stderr ? `: ${stderr.slice(-500)}` : ''}`,
    undefined,
  );
}

/** The error the checks of a killed or crashed process become (`VERIFIER_CRASHED`, with why). */
function crashError(
  plugin: PluginProcess,
  memoryMb: number,
  died: Error | undefined,
  code: number | null,
  signal: NodeJS.Signals | null,
): VerifierError {
  const killed = plugin.killedFor();
  const heapOut = /JavaScript heap out of memory|Allocation failed/.test(plugin.stderrTail());
  if (killed?.cause === 'memory' || heapOut) {
    const used = killed?.cause === 'memory' ? `, ${killed.rssMb} MB resident` : '';
    return new VerifierError(
      'VERIFIER_CRASHED',
      `the plugin ran out of memory (its process's limit is ${memoryMb} MB${used}); the process was killed`,
      {
        evidence: {
          process: 'out-of-memory',
          memoryMb,
          ...(killed?.cause === 'memory' ? { rssMb: killed.rssMb } : {}),
        },
      },
    );
  }
  if (killed?.cause === 'protocol') {
    return new VerifierError(
      'VERIFIER_CRASHED',
      `the plugin's process was killed: it wrote to the channel what is not a message (${killed.message})`,
      { evidence: { process: 'protocol' } },
    );
  }
  if (killed?.cause === 'stuck') {
    return new VerifierError(
      'VERIFIER_CRASHED',
      "the plugin's process was killed: a check kept it busy past its deadline",
      { evidence: { process: 'stuck' } },
    );
  }
  const how = died ? died.message : signal ? `killed by ${signal}` : `exit code ${code}`;
  return new VerifierError('VERIFIER_CRASHED', `the plugin's process stopped (${how})`, {
    evidence: { process: 'crashed', ...(signal ? { signal } : { exitCode: code }) },
  });
}

async function callGrant(
  context: VerifierContext<unknown>,
  grant: 'fetch' | 'sql' | 'redis',
  args: unknown[],
  signal: AbortSignal,
): Promise<{ value: unknown }> {
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
    return {
      value: {
        status: response.status,
        statusText: response.statusText,
        headers: [...response.headers],
        url: response.url || url,
        redirected: response.redirected,
        body,
      },
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

function fromPluginError(shape: ErrorShape): Error {
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
