import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { runVerifiers, silentLogger, type VerifierRegistry } from '@vouch/verifier-sdk';
import { exampleObservation, exampleProposal } from '@vouch/verifier-sdk/testing';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type LoadedVerifierConfig, loadVerifierConfig } from '../config/load-verifier-config';
import { sendJson, startServer, type TestServer } from '../test-support/http-server';
import { createTestDatabase, hasPostgres, type TestDatabase } from '../test-support/postgres-database';
import { loadIsolatedVerifier } from './isolated-verifier';

const plugins = path.join(import.meta.dirname, 'fixtures', 'hostile-plugins.mjs');
let dir: string;
let server: TestServer;
let loaded: LoadedVerifierConfig | undefined;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'vouch-isolation-'));
  server = await startServer((_req, res) => sendJson(res, 200, { state: 'closed' }));
});
afterEach(async () => {
  await loaded?.close();
  loaded = undefined;
  server.requests.length = 0;
});
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

/** Load one plugin export from the fixture module through a configuration file, as an operator would. */
async function load(
  exportName: string,
  entry: Record<string, unknown> = {},
  connections = {},
): Promise<VerifierRegistry> {
  const file = path.join(dir, `vouch.config.${exportName}.json`);
  const config = {
    connections,
    verifiers: [{ use: plugins, export: exportName, options: { url: server.url }, ...entry }],
  };
  await writeFile(file, JSON.stringify(config));
  loaded = await loadVerifierConfig(file);
  return loaded.registry;
}

function verify(registry: VerifierRegistry, postcondition = 'reached') {
  return runVerifiers({
    registry,
    proposal: exampleProposal({ postconditions: [{ name: postcondition }] }),
    observation: exampleObservation(),
  });
}

describe('a plugin runs in a process with no way to the network of its own', () => {
  it.each([
    ['the global fetch', 'globalFetch', /PLUGIN_NETWORK_DENIED: globalThis\.fetch/],
    ['node:http', 'nodeHttp', /PLUGIN_NETWORK_DENIED: http\.get/],
    ['node:net', 'nodeNet', /PLUGIN_NETWORK_DENIED: net\.connect/],
    ['a child process', 'childProcessFetch', /PLUGIN_PROCESS_DENIED: child_process\.execFileSync/],
  ])(
    'refuses %s: the check is an error, the loopback server saw nothing',
    async (_label, exportName, message) => {
      const outcome = await verify(await load(exportName));
      expect(outcome.status).toBe('inconclusive');
      expect(outcome.checks).toHaveLength(1);
      expect(outcome.checks[0]).toMatchObject({ status: 'error', reason: 'VERIFIER_CRASHED' });
      expect(outcome.checks[0]!.message).toMatch(message);
      expect(server.requests).toEqual([]);
    },
  );

  it('closes every door a plugin might try, with a typed code for each', async () => {
    const outcome = await verify(await load('everyDoor'));
    expect(outcome.checks[0]!.status).toBe('pass');
    const network = 'PLUGIN_NETWORK_DENIED';
    const processes = 'PLUGIN_PROCESS_DENIED';
    expect(outcome.checks[0]!.observed).toEqual({
      'globalThis.fetch': network,
      'net.connect (named ESM import)': network,
      'new net.Socket().connect': network,
      'net.createServer().listen': network,
      'http.request': network,
      'http.Agent createConnection': network,
      'https.get': network,
      'tls.connect': network,
      'dgram.createSocket': network,
      'dns.lookup': network,
      'dns.promises.resolve4': network,
      'process.binding': processes,
      'child_process.spawn': processes,
      'worker_threads.Worker': processes,
      'inspector.Session': processes,
      'module.register': processes,
      'process.kill': processes,
    });
    expect(server.requests).toEqual([]);
  });

  it("starts the process with an empty environment: the server's secrets stay in the server", async () => {
    process.env.VOUCH_ISOLATION_TEST_SECRET = 'hunter2';
    try {
      const outcome = await verify(await load('environment'));
      expect(outcome.checks[0]).toMatchObject({ status: 'pass', observed: [] });
    } finally {
      delete process.env.VOUCH_ISOLATION_TEST_SECRET;
    }
  });
});

describe("a plugin's granted fetch goes through the host's SSRF guard", () => {
  const tickets = { tickets: { type: 'http', allowHosts: ['127.0.0.1'] } };

  it('reaches a host the connection allows', async () => {
    const registry = await load('grantedFetch', { connection: 'tickets' }, tickets);
    const outcome = await verify(registry, 'ticket.closed');
    expect(outcome.status).toBe('passed');
    expect(outcome.checks[0]).toMatchObject({
      status: 'pass',
      source: 'tickets',
      observed: { state: 'closed' },
    });
    expect(server.requests.map((r) => [r.method, r.url, r.headers.accept])).toEqual([
      ['GET', '/ticket', 'application/json'],
    ]);
  });

  it('is refused an internal address the connection does not allow', async () => {
    const registry = await load('grantedFetch', { connection: 'tickets' }, tickets);
    const outcome = await verify(registry, 'internal');
    expect(outcome.status).toBe('inconclusive');
    expect(outcome.checks[0]).toMatchObject({ status: 'error', reason: 'SOURCE_FORBIDDEN' });
    expect(outcome.checks[0]!.message).toMatch(/169\.254\.169\.254/);
  });

  it('with no http connection named, gets the default guard: public addresses only', async () => {
    const outcome = await verify(await load('grantedFetch'), 'ticket.closed');
    expect(outcome.checks[0]).toMatchObject({ status: 'error', reason: 'SOURCE_FORBIDDEN' });
    expect(server.requests).toEqual([]);
  });
});

describe.skipIf(!hasPostgres)(
  "a plugin's sql grant is the host's read-only connection (needs DATABASE_URL)",
  () => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await createTestDatabase();
      await db.sql`create table tickets (id int primary key, state text not null)`;
      await db.sql`insert into tickets values (1, 'closed')`;
    });
    afterAll(async () => {
      await db?.drop();
    });
    const ledger = () => ({ ledger: { type: 'postgres', url: db.url } });

    it('reads a row through it', async () => {
      const outcome = await verify(
        await load('sqlReader', { connection: 'ledger' }, ledger()),
        'ticket.closed',
      );
      expect(outcome.checks[0]).toMatchObject({
        status: 'pass',
        source: 'ledger',
        observed: [{ state: 'closed' }],
      });
    });

    it('cannot write through it: the check is an error and the table is unchanged', async () => {
      const outcome = await verify(await load('sqlReader', { connection: 'ledger' }, ledger()), 'write');
      expect(outcome.checks[0]).toMatchObject({ status: 'error', reason: 'SOURCE_FORBIDDEN' });
      expect(await db.sql`select id from tickets order by id`).toEqual([{ id: 1 }]);
    });
  },
);

describe("a plugin's redis grant is the host's read-only connection, under its prefix", () => {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const prefix = `vouch-isolation-${randomBytes(4).toString('hex')}:`;
  let owner: Redis;
  beforeAll(async () => {
    owner = new Redis(redisUrl);
    await owner.set(`${prefix}ticket`, 'closed');
  });
  afterAll(async () => {
    await owner.del(`${prefix}ticket`);
    owner.disconnect();
  });

  it('reads the key under the configured prefix', async () => {
    const cache = { cache: { type: 'redis', url: redisUrl, keyPrefix: prefix } };
    const outcome = await verify(await load('redisReader', { connection: 'cache' }, cache), 'ticket.closed');
    expect(outcome.checks[0]).toMatchObject({ status: 'pass', source: 'cache', observed: 'closed' });
  });
});

describe('limits', () => {
  it('stops a plugin that spins past its deadline; the check is VERIFIER_TIMEOUT and the next one runs', async () => {
    // Long enough for the next check to include starting a replacement worker on a busy machine.
    const registry = await load('spinner', { timeoutMs: 2_000 });
    const started = performance.now();
    const spun = await verify(registry, 'spin');
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(spun.status).toBe('inconclusive');
    expect(spun.checks[0]).toMatchObject({ status: 'error', reason: 'VERIFIER_TIMEOUT' });
    const next = await verify(registry, 'after');
    expect(next.checks[0]).toMatchObject({ status: 'pass', observed: 'answered' });
  });

  it('stops waiting for a plugin that ignores its signal once it is aborted; its process, still alive, answers the next check', async () => {
    const registry = await load('hangs');
    const entry = registry.entries[0]!;
    const controller = new AbortController();
    const pending = entry.verifier.check({
      verifier: { id: entry.verifier.id, version: entry.verifier.version, name: entry.name },
      phase: 'post',
      proposal: exampleProposal(),
      observation: exampleObservation(),
      postcondition: { name: 'hang' },
      options: entry.options,
      signal: controller.signal,
      timeoutMs: 1_000,
      logger: silentLogger,
      now: () => new Date(),
    });
    setTimeout(() => controller.abort(new Error('the deadline passed')), 100);
    await expect(pending).rejects.toThrow('the deadline passed');
    const next = await verify(registry, 'after');
    expect(next.checks[0]).toMatchObject({ status: 'pass', observed: 'answered' });
  });

  it('stops a plugin that allocates past its memory limit; the check is VERIFIER_CRASHED and the next one runs', async () => {
    const registry = await load('memoryHog', { memoryMb: 64, timeoutMs: 30_000 });
    const hog = await verify(registry, 'hog');
    expect(hog.status).toBe('inconclusive');
    expect(hog.checks[0]).toMatchObject({ status: 'error', reason: 'VERIFIER_CRASHED' });
    expect(hog.checks[0]!.message).toMatch(/out of memory .*64 MB/);
    const next = await verify(registry, 'after');
    expect(next.checks[0]).toMatchObject({ status: 'pass', observed: 'answered' });
  });
});

describe("a plugin's process reaches none of the server's secrets", () => {
  it('publishes no secret of the environment, /proc, the configuration or a key file in its result, and writes nothing', async () => {
    process.env.VOUCH_ISOLATION_TEST_SECRET = 'hunter2-env';
    const data = path.join(dir, 'data');
    await mkdir(data, { recursive: true });
    const keyFile = path.join(data, 'log-signing.key');
    await writeFile(keyFile, 'hunter2-key');
    const configFile = path.join(dir, 'vouch.config.secrets.json');
    try {
      const registry = await load('secrets', { options: { url: server.url, files: [configFile, keyFile] } });
      const outcome = await verify(registry);
      expect(outcome.checks[0]!.status).toBe('pass');
      const published = JSON.stringify(outcome.checks[0]!.observed);
      expect(published).not.toMatch(/hunter2|VOUCH_|PATH/);
      expect(outcome.checks[0]!.observed).toEqual({
        env: {},
        selfEnviron: 'denied: ERR_ACCESS_DENIED',
        parentEnviron: 'denied: ERR_ACCESS_DENIED',
        parentCmdline: 'denied: ERR_ACCESS_DENIED',
        initEnviron: 'denied: ERR_ACCESS_DENIED',
        files: { [configFile]: 'denied: ERR_ACCESS_DENIED', [keyFile]: 'denied: ERR_ACCESS_DENIED' },
        write: 'denied: ERR_ACCESS_DENIED',
      });
    } finally {
      delete process.env.VOUCH_ISOLATION_TEST_SECRET;
    }
  });
});

describe("a plugin's process cannot signal another process", () => {
  it('every way to kill, debug or renice a process is refused; the target lives on, its priority unchanged', async () => {
    // A stand-in for the server, so that a signal that got through fails this test, not the run.
    const target = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      const niceness = () => readFileSync(`/proc/${target.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[16];
      const before = niceness();
      const registry = await load('signals', { options: { url: server.url, pid: target.pid } });
      const outcome = await verify(registry);
      expect(outcome.checks[0]!.observed).toEqual({
        'process.kill': 'PLUGIN_PROCESS_DENIED',
        'process.kill (named ESM import)': 'PLUGIN_PROCESS_DENIED',
        'process._kill': 'PLUGIN_PROCESS_DENIED',
        "process.binding('process_methods')._kill": 'PLUGIN_PROCESS_DENIED',
        'process._debugProcess': 'PLUGIN_PROCESS_DENIED',
        'os.setPriority': 'PLUGIN_PROCESS_DENIED',
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect({ exitCode: target.exitCode, signal: target.signalCode }).toEqual({
        exitCode: null,
        signal: null,
      });
      expect(niceness()).toBe(before);
    } finally {
      target.kill('SIGKILL');
    }
  });
});

describe("a plugin's memory limit counts off-heap memory", () => {
  it('a 2 GB Buffer does not land anywhere: the check is an error with a reason and the server does not grow', async () => {
    const registry = await load('bigBuffer', { memoryMb: 64 });
    const before = process.memoryUsage().rss;
    const big = await verify(registry, 'big');
    expect(process.memoryUsage().rss - before).toBeLessThan(256 * 1024 * 1024);
    expect(big.status).toBe('inconclusive');
    expect(big.checks[0]).toMatchObject({ status: 'error', reason: 'VERIFIER_CRASHED' });
    const next = await verify(registry, 'after');
    expect(next.checks[0]).toMatchObject({ status: 'pass', observed: 'answered' });
  });

  it('a process whose Buffers pass memoryMb is killed: VERIFIER_CRASHED, out of memory, and the next check runs', async () => {
    const registry = await load('bufferHog', { memoryMb: 96, timeoutMs: 30_000 });
    const hog = await verify(registry, 'hog');
    expect(hog.status).toBe('inconclusive');
    // The host records the message of a crashed verifier (not its evidence): it says why.
    expect(hog.checks[0]).toMatchObject({ status: 'error', reason: 'VERIFIER_CRASHED' });
    expect(hog.checks[0]!.message).toMatch(/out of memory \(its process's limit is 96 MB, \d+ MB resident\)/);
    const next = await verify(registry, 'after');
    expect(next.checks[0]).toMatchObject({ status: 'pass', observed: 'answered' });
  });
});

describe('a crashed plugin is replaced', () => {
  it.each([
    ['aborts', 'abort', /process stopped \(killed by SIGABRT\)/],
    ['exits', 'exit', /process stopped \(exit code 3\)/],
  ])(
    'a plugin that %s: its check is VERIFIER_CRASHED, the server goes on, the next check runs in a new process',
    async (_label, postcondition, message) => {
      const registry = await load('crasher');
      const crashed = await verify(registry, postcondition);
      expect(crashed.status).toBe('inconclusive');
      expect(crashed.checks[0]).toMatchObject({ status: 'error', reason: 'VERIFIER_CRASHED' });
      expect(crashed.checks[0]!.message).toMatch(message);
      const next = await verify(registry, 'after');
      expect(next.checks[0]).toMatchObject({ status: 'pass', observed: 'answered' });
    },
  );
});

describe("a plugin's process as another user", () => {
  // Switching users needs root; a server that is not root already runs plugins as itself, no more.
  it.skipIf(process.getuid?.() !== 0)(
    'runs as the configured uid and gid, not as the root server',
    async () => {
      const registry = await load('identity', { user: { uid: 65534, gid: 65534 } });
      const outcome = await verify(registry);
      expect(outcome.checks[0]).toMatchObject({ status: 'pass', observed: { uid: 65534, gid: 65534 } });
      const asServer = await verify(await load('identity'));
      expect(asServer.checks[0]!.observed).toEqual({ uid: 0, gid: 0 });
    },
  );
});

describe("a plugin's channel to the server", () => {
  it('a plugin that writes garbage to it is killed; the check is VERIFIER_CRASHED, the server goes on, the next check runs', async () => {
    const registry = await load('channelGarbage');
    const garbage = await verify(registry, 'garbage');
    expect(garbage.checks[0]).toMatchObject({ status: 'error', reason: 'VERIFIER_CRASHED' });
    expect(garbage.checks[0]!.message).toMatch(/wrote to the channel what is not a message/);
    const next = await verify(registry, 'after');
    expect(next.checks[0]).toMatchObject({ status: 'pass', observed: 'answered' });
  });

  it('well-framed messages with nonsense fields do not reach the server: its check still answers', async () => {
    const outcome = await verify(await load('forgedMessages'));
    expect(outcome.checks[0]).toMatchObject({ status: 'pass', observed: 'forged' });
  });
});

describe("a plugin's folder", () => {
  it('is refused when a symbolic link in it leads out of it (the permission model checks the path, not the target)', async () => {
    const folder = await mkdtemp(path.join(dir, 'linked-'));
    await copyFile(plugins, path.join(folder, 'plugin.mjs'));
    await writeFile(path.join(dir, 'outside.key'), 'hunter2-key');
    await symlink(path.join(dir, 'outside.key'), path.join(folder, 'config.key'));
    const url = pathToFileURL(path.join(folder, 'plugin.mjs')).href;
    const load = () => loadIsolatedVerifier({ url, exportName: 'secrets', options: { url: server.url } });
    await expect(load()).rejects.toMatchObject({ code: 'LINK_OUT_OF_REACH' });
    // A link that stays inside the folder is fine.
    await rm(path.join(folder, 'config.key'));
    await writeFile(path.join(folder, 'inside.txt'), 'x');
    await symlink(path.join(folder, 'inside.txt'), path.join(folder, 'also-inside.txt'));
    const plugin = await load();
    await plugin.close();
  });
});
