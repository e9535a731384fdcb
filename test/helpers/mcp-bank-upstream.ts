// A real upstream MCP server for end-to-end tests, run as its own process over stdio:
//   node --import tsx test/helpers/mcp-bank-upstream.ts   (BANK_BOOKS=<path to a JSON file>)
// It keeps its state in the BANK_BOOKS file, so the test can read what really happened
// (every call that reached a tool) without asking the gateway or Vouch: the books are the
// independent source.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

/** What the books file holds. */
export interface BankBooks {
  accounts: Record<string, number>;
  /** Every tool call that reached this server, in order (`pid`: the server process that took it). */
  calls: { tool: string; arguments: Record<string, unknown>; pid?: number }[];
}

/** Where the bank keeps one file per open account (`<name>.json`: `{ balance }`), beside the books. */
export function accountsDir(booksPath: string): string {
  return join(dirname(booksPath), 'accounts');
}

/** Write the books and the account files atomically (a reader never sees half a file). */
export function writeBooks(path: string, books: BankBooks): void {
  const accounts = accountsDir(path);
  mkdirSync(accounts, { recursive: true });
  for (const [name, balance] of Object.entries(books.accounts))
    atomicWrite(join(accounts, `${name}.json`), { balance });
  for (const file of readdirSync(accounts)) {
    if (!(file.replace(/\.json$/, '') in books.accounts)) rmSync(join(accounts, file));
  }
  atomicWrite(path, books);
}

function atomicWrite(path: string, value: unknown): void {
  writeFileSync(`${path}.tmp`, JSON.stringify(value, null, 2));
  renameSync(`${path}.tmp`, path);
}

/** Read the books. */
export function readBooks(path: string): BankBooks {
  return JSON.parse(readFileSync(path, 'utf8')) as BankBooks;
}

const account = {
  type: 'object' as const,
  properties: { account: { type: 'string' } },
  required: ['account'],
};

async function main(path: string): Promise<void> {
  const server = new Server({ name: 'bank', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      {
        name: 'get_balance',
        description: 'Read an account balance.',
        inputSchema: account,
        annotations: { readOnlyHint: true },
      },
      {
        name: 'close_account',
        description: 'Close an account for good.',
        inputSchema: account,
        annotations: { destructiveHint: true },
      },
      {
        name: 'wire_transfer',
        description: 'Send a wire from an account. Takes the call, writes it down, and never answers.',
        inputSchema: account,
      },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    if (request.params.name === 'wire_transfer') {
      // A call that is in flight for good: the crash tests stop a process while it waits here.
      const books = readBooks(path);
      books.calls.push({ tool: request.params.name, arguments: args, pid: process.pid });
      writeBooks(path, books);
      return new Promise<CallToolResult>(() => {});
    }
    const arrived = readBooks(path);
    arrived.calls.push({ tool: request.params.name, arguments: args });
    writeBooks(path, arrived);
    // BANK_HOLD_UNTIL=<file>: a call stays in flight until that file exists (tests of stopping mid-call).
    const hold = process.env.BANK_HOLD_UNTIL;
    while (hold && !existsSync(hold)) await new Promise((resolve) => setTimeout(resolve, 20));
    const books = readBooks(path);
    const name = String(args.account);
    let result: CallToolResult;
    if (!(name in books.accounts)) {
      result = { isError: true, content: [{ type: 'text', text: `no account ${name}` }] };
    } else if (request.params.name === 'get_balance') {
      const balance = books.accounts[name]!;
      result = {
        content: [{ type: 'text', text: `${name}: ${balance}` }],
        structuredContent: { account: name, balance },
      };
    } else {
      delete books.accounts[name];
      result = { content: [{ type: 'text', text: `closed ${name}` }], structuredContent: { closed: name } };
    }
    writeBooks(path, books);
    return result;
  });
  await server.connect(new StdioServerTransport());
}

if (process.env.BANK_BOOKS) await main(process.env.BANK_BOOKS);
