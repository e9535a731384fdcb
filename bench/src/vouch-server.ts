// The Vouch HTTP app in its own process (children/http-server.ts), and the few HTTP calls the
// scenarios make to it over keep-alive connections.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { type Agent, request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { processCpuMs } from './stats';

const child = fileURLToPath(new URL('./children/http-server.ts', import.meta.url));

export interface Server {
  port: number;
  gateway: string;
  auditor: string;
  verifier: string;
  /** The server's processes: one, or the cluster primary and its workers. */
  pids: number[];
  /** CPU time (user + system, ms) the server's processes have used so far; null off Linux. */
  cpuMs(): number | null;
  stop(): Promise<void>;
}

export async function startServer(
  url: string | undefined,
  profileDir: string | null,
  logs: readonly string[],
  workers = 1,
): Promise<Server> {
  const proc = spawn(
    process.execPath,
    [
      ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
      '--import',
      'tsx',
      '--conditions=@vouch/source',
      child,
      '--logs',
      logs.join(','),
      ...(url ? ['--url', url] : []),
      '--workers',
      String(workers),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  let buffered = '';
  proc.stdout!.setEncoding('utf8');
  for await (const chunk of proc.stdout!) {
    buffered += chunk;
    if (buffered.includes('\n')) break;
  }
  const info = JSON.parse(buffered.split('\n')[0]!) as Omit<Server, 'stop' | 'cpuMs'>;
  return {
    ...info,
    cpuMs: () => {
      const each = info.pids.map((pid) => processCpuMs(pid));
      return each.some((ms) => ms === null) ? null : each.reduce<number>((sum, ms) => sum + ms!, 0);
    },
    stop: async () => {
      proc.stdin!.end();
      await once(proc, 'close');
    },
  };
}

/** One HTTP/1.1 request over a keep-alive agent; resolves with the status and body. */
export function call(
  agent: Agent,
  port: number,
  options: { method: string; path: string; key: string; body?: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: '127.0.0.1',
        port,
        method: options.method,
        path: options.path,
        headers: {
          authorization: `Bearer ${options.key}`,
          ...(options.body ? { 'content-type': 'application/json' } : {}),
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A POST with a JSON body whose 2xx JSON answer is returned; anything else throws. */
export async function post<T>(
  agent: Agent,
  server: Server,
  path: string,
  key: string,
  body: unknown,
): Promise<T> {
  const res = await call(agent, server.port, { method: 'POST', path, key, body: JSON.stringify(body) });
  if (res.status >= 300) throw new Error(`POST ${path}: ${res.status} ${res.body.slice(0, 300)}`);
  return JSON.parse(res.body) as T;
}

export async function headSeq(agent: Agent, server: Server, log: string): Promise<number> {
  const res = await call(agent, server.port, {
    method: 'GET',
    path: `/v1/logs/${log}/head`,
    key: server.auditor,
  });
  if (res.status !== 200) throw new Error(`head: ${res.status} ${res.body}`);
  return (JSON.parse(res.body) as { head: { seq: number } | null }).head?.seq ?? 0;
}
