import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type Database, openDatabase } from '@vouch/ledger';

const run = promisify(execFile);

/** Where Debian puts the Postgres 15 server programs (`initdb`, `pg_ctl`, `pg_basebackup`). */
export const POSTGRES_BIN = process.env.VOUCH_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** A primary and a hot standby streaming from it, in a temp directory of their own, for tests. */
export interface StreamingReplica {
  /** Superuser URLs on loopback. */
  primaryUrl: string;
  standbyUrl: string;
  /** Stop the standby's replay (`pg_wal_replay_pause()`): it keeps answering, but lags from here on. */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** Wait until the standby has replayed everything the primary has written so far. */
  caughtUp(): Promise<void>;
  /** Stop the standby server (it no longer answers). */
  stopStandby(): Promise<void>;
  /** Stop both servers and delete their directories. */
  close(): Promise<void>;
}

/**
 * `initdb` a primary and `pg_basebackup -R` a standby from it, each on a free loopback port,
 * both started with `pg_ctl`. Postgres refuses to run as root, so under root the servers run
 * as the `postgres` user (`runuser`), which then owns the temp directory.
 */
export async function startStreamingReplica(): Promise<StreamingReplica> {
  const root = mkdtempSync(join(tmpdir(), 'vouch-replica-'));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(root, Number(stdout.trim()), Number(gid.trim()));
  }
  const pg = (program: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', join(POSTGRES_BIN, program), ...args], { cwd: root })
      : run(join(POSTGRES_BIN, program), args, { cwd: root });
  const primaryDir = join(root, 'primary');
  const standbyDir = join(root, 'standby');
  const [primaryPort, standbyPort] = [await freePort(), await freePort()];
  const serverOptions = (port: number) =>
    `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_wal_senders=4 -c hot_standby=on`;
  const started: string[] = [];
  const stop = async (dir: string) => {
    await pg('pg_ctl', ['-D', dir, '-m', 'immediate', '-w', 'stop']).catch(() => {});
  };
  const handles: Database[] = [];
  const close = async () => {
    for (const handle of handles.splice(0)) await handle.close().catch(() => {});
    for (const dir of started.reverse()) await stop(dir);
    started.length = 0;
    rmSync(root, { recursive: true, force: true });
  };
  const primaryUrl = `postgres://postgres@127.0.0.1:${primaryPort}/postgres`;
  const standbyUrl = `postgres://postgres@127.0.0.1:${standbyPort}/postgres`;
  try {
    await pg('initdb', [
      '-D',
      primaryDir,
      '-U',
      'postgres',
      '--auth=trust',
      '--no-sync',
      '-E',
      'UTF8',
      '--locale=C',
    ]);
    await pg('pg_ctl', [
      '-D',
      primaryDir,
      '-l',
      join(root, 'primary.log'),
      '-o',
      serverOptions(primaryPort),
      '-w',
      'start',
    ]);
    started.push(primaryDir);
    await pg('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primaryPort),
      '-U',
      'postgres',
      '-D',
      standbyDir,
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
      '--no-sync',
    ]);
    await pg('pg_ctl', [
      '-D',
      standbyDir,
      '-l',
      join(root, 'standby.log'),
      '-o',
      serverOptions(standbyPort),
      '-w',
      'start',
    ]);
    started.push(standbyDir);
  } catch (error) {
    await close();
    throw error;
  }
  const connect = async (url: string) => {
    const database = await openDatabase({ url, maxConnections: 1 });
    handles.push(database);
    return database.driver.client as unknown as { unsafe<T>(query: string): Promise<T[]> };
  };
  const primary = await connect(primaryUrl);
  const standby = await connect(standbyUrl);
  const primaryPosition = async () =>
    (await primary.unsafe<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn'))[0]!.lsn;
  return {
    primaryUrl,
    standbyUrl,
    pauseReplay: async () => {
      await standby.unsafe('select pg_wal_replay_pause()');
      // Pausing takes effect at the next record: wait until the standby says it is paused.
      for (;;) {
        const rows = await standby.unsafe<{ state: string }>(
          'select pg_get_wal_replay_pause_state() as state',
        );
        if (rows[0]?.state === 'paused') return;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    resumeReplay: async () => {
      await standby.unsafe('select pg_wal_replay_resume()');
    },
    caughtUp: async () => {
      const lsn = await primaryPosition();
      for (;;) {
        const rows = await standby.unsafe<{ done: boolean }>(
          `select pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn as done`,
        );
        if (rows[0]?.done) return;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    stopStandby: async () => {
      await handles.pop()?.close();
      await stop(standbyDir);
      started.splice(started.indexOf(standbyDir), 1);
    },
    close,
  };
}

/** A TCP port nothing listens on right now (the OS picks it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
