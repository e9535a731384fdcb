// End-to-end support: run the `vouch` CLI as a child process.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';

/** The `vouch` launcher, exactly as `npx --no-install vouch` runs it (tsx over the TypeScript sources). */
export const VOUCH_BIN = fileURLToPath(new URL('../../apps/api/bin/vouch.js', import.meta.url));

/**
 * What the helpers run by default: the same CLI from the same sources, bundled once for the
 * run by test/global-setup.ts, which starts in a fraction of the launcher's CPU time. Without
 * that setup (another config), the launcher. Tests of the launcher itself pass {@link VOUCH_BIN}.
 */
export function vouchCli(): string {
  return inject('vouchTestCli') ?? VOUCH_BIN;
}

/** Where a test server keeps its data: a PGlite directory or a Postgres URL. */
export type StorageEnv = { VOUCH_DATA_DIR: string } | { DATABASE_URL: string };

/** A running `vouch serve` child process. */
export interface VouchServer {
  url: string;
  adminKey: string;
  /** Structured log lines written so far (parsed JSON). */
  logs: Array<Record<string, unknown>>;
  stderr(): string;
  /** `fetch` against the server with a bearer key and an optional JSON body. */
  call(
    method: string,
    path: string,
    options?: { key?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<Response>;
  /** SIGTERM, then wait for the exit code. */
  stop(): Promise<number | null>;
  child: ChildProcess;
}

function baseEnv(storage: StorageEnv): NodeJS.ProcessEnv {
  // Only what the server needs: nothing from the test runner's own environment leaks in.
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, ...storage };
  if (!('DATABASE_URL' in storage)) delete env.DATABASE_URL;
  // Tests connect as the server's superuser: let serve migrate and run as that owner role.
  // The runtime role has its own tests (apps/api/src/auth/database-role.test.ts).
  else Object.assign(env, { VOUCH_MIGRATE: '1', VOUCH_ALLOW_OWNER_ROLE: '1' });
  return env;
}

/** A fresh admin secret, at least as long as `VOUCH_ADMIN_KEY` requires. */
export function newAdminKey(): string {
  return `vch_${randomBytes(32).toString('base64url')}`;
}

/**
 * Start `vouch serve` on a free loopback port and resolve once it logs `listening`; reject
 * if it exits first (with its stderr, so a failing test says why).
 */
export async function startVouchServer(options: {
  storage: StorageEnv;
  cwd: string;
  adminKey?: string;
  env?: Record<string, string>;
  /** The `vouch` entry to run (default: {@link vouchCli}). */
  bin?: string;
}): Promise<VouchServer> {
  const adminKey = options.adminKey ?? newAdminKey();
  const child = spawn(process.execPath, [options.bin ?? vouchCli(), 'serve'], {
    cwd: options.cwd,
    env: {
      ...baseEnv(options.storage),
      PORT: '0',
      HOST: '127.0.0.1',
      VOUCH_ADMIN_KEY: adminKey,
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    let buffered = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      let newline = buffered.indexOf('\n');
      while (newline >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        newline = buffered.indexOf('\n');
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          logs.push(entry);
          if (entry.msg === 'listening') resolve(String(entry.url));
        } catch {
          logs.push({ unparsed: line });
        }
      }
    });
    void exited.then((code) =>
      reject(new Error(`vouch serve exited with ${code} before listening:\n${stderr}`)),
    );
  });
  return {
    url,
    adminKey,
    logs,
    stderr: () => stderr,
    child,
    call(method, path, { key, body, headers = {} } = {}) {
      const init: RequestInit = { method, headers: { ...headers } };
      if (key !== undefined) (init.headers as Record<string, string>).authorization = `Bearer ${key}`;
      if (body !== undefined) {
        (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
        init.body = typeof body === 'string' ? body : JSON.stringify(body);
      }
      return fetch(`${url}${path}`, init);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** Run a `vouch` command to completion. */
export function runVouch(
  args: string[],
  options: { storage: StorageEnv; cwd: string },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return spawnVouch(args, baseEnv(options.storage), options.cwd);
}

/**
 * Run a `vouch` command to completion with exactly this environment (plus PATH and HOME); `bin`
 * is the entry to run (default: {@link vouchCli}).
 */
export function runVouchWithEnv(
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  bin: string = vouchCli(),
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return spawnVouch(args, { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, cwd, bin);
}

function spawnVouch(
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  bin: string = vouchCli(),
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
    });
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
