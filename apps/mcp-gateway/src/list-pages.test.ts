import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ListPromptsRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { allPages, MAX_LIST_PAGES } from './list-pages';
import { createExampleUpstream } from './testing/example-upstream';
import { memoryGateway } from './testing/memory-gateway';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** An upstream whose tools and prompts lists never end: every page points to `cursor(n)`. */
function pagingForever(cursor: (page: number) => string) {
  const server = new Server({ name: 'loop', version: '0.0.0' }, { capabilities: { tools: {}, prompts: {} } });
  let pages = 0;
  const page = () => ({ nextCursor: cursor(pages++) });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [], ...page() }));
  server.setRequestHandler(ListPromptsRequestSchema, () => ({ prompts: [], ...page() }));
  return { server, pages: () => pages };
}

async function gatewayWith(loop: Server) {
  const { agent, close } = await memoryGateway([
    { name: 'bank', server: createExampleUpstream().server },
    { name: 'loop', server: loop },
  ]);
  closers.push(close);
  return agent;
}

describe('lists of an upstream that pages forever', () => {
  it('end at a repeated cursor: its tools are left out, the others listed', async () => {
    const loop = pagingForever(() => 'again');
    const agent = await gatewayWith(loop.server);
    const { tools } = await agent.listTools();
    expect(tools.map((tool) => tool.name)).toContain('bank__close_account');
    expect(tools.some((tool) => tool.name.startsWith('loop__'))).toBe(false);
    await expect(agent.listPrompts()).rejects.toThrow(/repeats the cursor/);
  });

  it(`end after ${MAX_LIST_PAGES} pages of fresh cursors`, async () => {
    const loop = pagingForever((n) => `page-${n}`);
    const agent = await gatewayWith(loop.server);
    await expect(agent.listPrompts()).rejects.toThrow(/more than 1000 pages/);
    expect(loop.pages()).toBe(MAX_LIST_PAGES);
  });
});

describe('allPages', () => {
  it('gathers every page in order until one has no next cursor', async () => {
    const book: Record<string, { items: number[]; nextCursor?: string }> = {
      start: { items: [1, 2], nextCursor: 'b' },
      b: { items: [3], nextCursor: 'c' },
      c: { items: [] },
    };
    expect(await allPages('the list', async (cursor) => book[cursor ?? 'start']!)).toEqual([1, 2, 3]);
  });
});
