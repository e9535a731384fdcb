import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { newAdminKey } from './helpers/server';

// `npm start` runs `vouch serve` through a shell: npm → sh → node. npm passes SIGTERM to its
// child, the shell; unless the shell execs the server, the shell dies and the server keeps
// running, orphaned, holding the port and the data directory.

const repoRoot = fileURLToPath(new URL('..', import.meta.url));

/** The pids of every process below `pid`, read from /proc (Linux). */
function descendantsOf(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The parent pid is the 4th field, after the command name in parentheses.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // The process ended while we looked.
    }
  }
  const found: number[] = [];
  const visit = (parent: number) => {
    for (const child of parents.get(parent) ?? []) {
      found.push(child);
      visit(child);
    }
  };
  visit(pid);
  return found;
}

const commandLine = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
};

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe.runIf(process.platform === 'linux')('npm start', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vouch-npm-start-'));
  let started: number[] = [];
  afterAll(() => {
    // Nothing the test started (an orphaned server above all) may outlive it.
    for (const pid of started.reverse()) if (alive(pid)) process.kill(pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves the console, and stops vouch serve gracefully when npm gets SIGTERM', async () => {
    const npm = spawn('npm', ['start'], {
      cwd: repoRoot,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        npm_config_update_notifier: 'false',
        VOUCH_DATA_DIR: join(dir, 'data'),
        PORT: '0',
        VOUCH_ADMIN_KEY: newAdminKey(),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    started = [npm.pid!];
    let stdout = '';
    const listening = new Promise<void>((resolve, reject) => {
      npm.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk;
        if (stdout.includes('"msg":"listening"')) resolve();
      });
      npm.once('exit', (code) => reject(new Error(`npm start exited with ${code} before listening`)));
    });
    const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
    await listening;
    // `npm start` builds the console first (prestart) and the server serves it.
    const line = stdout.split('\n').find((l) => l.includes('"msg":"listening"'))!;
    const url = (JSON.parse(line) as { url: string }).url;
    const page = await fetch(`${url}/ui/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    const below = descendantsOf(npm.pid!);
    started = [npm.pid!, ...below];
    // The server, and the shell in front of it if any; not helper processes the TypeScript
    // loader may start, which end on their own once their parent has gone.
    const servers = below.filter((pid) => commandLine(pid).includes('vouch serve'));
    expect(servers.length).toBeGreaterThan(0);

    npm.kill('SIGTERM');
    await exited;
    // 'exit' can come before the last of stdout is read: wait for its end (bounded).
    if (npm.stdout.readableEnded === false) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 5_000);
        npm.stdout.once('end', () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    expect(servers.filter(alive)).toEqual([]);
    expect(stdout).toContain('"msg":"stopped"');
  }, 120_000);
});
