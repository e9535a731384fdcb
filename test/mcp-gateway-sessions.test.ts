// HTTP sessions that agents leave behind (the SDK's `client.close()` sends no DELETE) do not
// keep their upstream processes: the idle timeout closes each session, and its stdio
// upstream's process ends with it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Database } from '@vouch/ledger';
import type { AgentHttpServer } from '@vouch/mcp-gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BankBooks, writeBooks } from './helpers/mcp-bank-upstream';
import { bankUpstream } from './helpers/mcp-gateway-process';
import { connectHttpAgent, inProcessVouch, startAgentGateway } from './helpers/mcp-vouch-app';

const TOKEN = 'agent-token-that-leaves';
let dir: string;
let booksPath: string;
let database: Database;
let gateway: AgentHttpServer;

/** The bank upstream processes this test process started (through the in-process gateway). */
function upstreamProcesses(): number {
  return execFileSync('ps', ['-eo', 'ppid=,args='], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.trim().startsWith(`${process.pid} `) && line.includes('mcp-bank-upstream')).length;
}

async function eventually(done: () => boolean): Promise<void> {
  for (let i = 0; i < 150 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 100));
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vouch-mcp-sessions-'));
  booksPath = join(dir, 'books.json');
  writeBooks(booksPath, { accounts: { 'acct-1': 1 }, calls: [] } satisfies BankBooks);
  const vouch = await inProcessVouch();
  ({ database } = vouch);
  gateway = await startAgentGateway(
    vouch,
    {
      upstream: bankUpstream(booksPath),
      serverId: 'bank',
      environment: 'production',
    },
    [{ name: 'leaver', token: TOKEN, apiKey: await vouch.secretOf('agent:leaver', ['gateway']) }],
    { sessionIdleTimeoutMs: 1_000 },
  );
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await database?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('HTTP sessions an agent leaves behind', () => {
  it('are closed when idle, and their stdio upstream processes end with them', async () => {
    const before = upstreamProcesses();
    const agents = [];
    for (let i = 0; i < 5; i++) agents.push(await connectHttpAgent(gateway, TOKEN));
    expect(gateway.sessions()).toHaveLength(5);
    expect(upstreamProcesses()).toBe(before + 5);
    // Left without a DELETE, as the SDK's close does.
    for (const agent of agents) await agent.close();
    await eventually(() => gateway.sessions().length === 0 && upstreamProcesses() === before);
    expect(gateway.sessions()).toHaveLength(0);
    expect(upstreamProcesses()).toBe(before);
  }, 60_000);
});
