import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { memoryGateway } from './testing/memory-gateway';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** An upstream serving `template` and the fixed resource `listed`, recording every URI it reads. */
function upstream(name: string, template: string, listed: string) {
  const server = new McpServer({ name, version: '0.0.0' });
  const reads: string[] = [];
  const read = (uri: URL) => {
    reads.push(uri.href);
    return { contents: [{ uri: uri.href, text: `${name} has ${uri.href}` }] };
  };
  server.registerResource('any', new ResourceTemplate(template, { list: undefined }), {}, read);
  server.registerResource('fixed', listed, {}, read);
  return { server, reads };
}

async function setup() {
  // notes serves every file URI; files governs reads of its secrets (any governance would do:
  // a read routed to notes would never meet it).
  const notes = upstream('notes', 'file:///{+path}', 'file:///shared.txt');
  const files = upstream('files', 'file:///secret/{name}', 'file:///shared.txt');
  const { agent, close } = await memoryGateway([
    { name: 'notes', server: notes.server },
    {
      name: 'files',
      server: files.server,
      governed: [{ method: 'resources/read', match: 'file:///secret/**' }],
    },
  ]);
  closers.push(close);
  return { agent, notes, files };
}

describe('a resource URI several upstreams claim', () => {
  it("matched by two upstreams' templates, is refused and read by neither", async () => {
    const { agent, notes, files } = await setup();
    const error = await agent.readResource({ uri: 'file:///secret/key' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: -32602, message: expect.stringContaining('notes, files') });
    expect(notes.reads).toEqual([]);
    expect(files.reads).toEqual([]);
  });

  it('listed by two upstreams, is refused and read by neither', async () => {
    const { agent, notes, files } = await setup();
    const { resources } = await agent.listResources();
    expect(resources.filter((resource) => resource.uri === 'file:///shared.txt')).toHaveLength(2);
    await expect(agent.readResource({ uri: 'file:///shared.txt' })).rejects.toMatchObject({ code: -32602 });
    expect([...notes.reads, ...files.reads]).toEqual([]);
  });

  it('goes to the one upstream whose template alone matches', async () => {
    const { agent, notes, files } = await setup();
    const { contents } = await agent.readResource({ uri: 'file:///public/readme' });
    expect(contents[0]).toMatchObject({ text: 'notes has file:///public/readme' });
    expect(notes.reads).toEqual(['file:///public/readme']);
    expect(files.reads).toEqual([]);
  });
});

describe('a completion of a resource template several upstreams list', () => {
  it('is refused and asked of neither', async () => {
    const asked: string[] = [];
    const withTemplate = (name: string) => {
      const server = new McpServer({ name, version: '0.0.0' });
      const template = new ResourceTemplate('file:///{name}', {
        list: undefined,
        complete: {
          name: (value) => {
            asked.push(name);
            return [`${value}-${name}`];
          },
        },
      });
      server.registerResource('any', template, {}, (uri) => ({ contents: [{ uri: uri.href, text: '' }] }));
      return server;
    };
    const { agent, close } = await memoryGateway([
      { name: 'notes', server: withTemplate('notes') },
      { name: 'files', server: withTemplate('files') },
    ]);
    closers.push(close);
    const error = await agent
      .complete({
        ref: { type: 'ref/resource', uri: 'file:///{name}' },
        argument: { name: 'name', value: 'a' },
      })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: -32602, message: expect.stringContaining('notes, files') });
    expect(asked).toEqual([]);
  });
});
