import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runVouch } from '../testing/cli-io';

const temporary: string[] = [];
afterEach(() => {
  for (const dir of temporary.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A project directory holding `files` (path → text). */
function project(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'vouch-execute-path-'));
  temporary.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

async function check(root: string, ...args: string[]) {
  return runVouch(['check-execute-path', ...args], { cwd: root });
}

/** `file:line RULE` of each violation the command reports as JSON. */
async function found(root: string, ...args: string[]): Promise<string[]> {
  const { code, out } = await check(root, '--json', ...args);
  const report = JSON.parse(out) as { violations: Array<{ file: string; line: number; rule: string }> };
  expect(code).toBe(report.violations.length === 0 ? 0 : 1);
  return report.violations.map((v) => `${v.file}:${v.line} ${v.rule}`);
}

// The documented pattern: the tool call is the invoke of vouch.execute, inline.
const GOVERNED = `export async function governed(vouch, mcp, action) {
  return vouch.execute(action, () => mcp.callTool({ name: 'close_account' }));
}
`;

describe('vouch check-execute-path', () => {
  describe('when every tool call is the invoke of vouch.execute()', () => {
    it('accepts the documented inline pattern, in every flavour, and exits 0', async () => {
      const root = project({
        'src/agent.ts': GOVERNED,
        'src/agent.mjs': GOVERNED,
        'src/this-vouch.ts': `export class Host {
  async run(action) {
    return this.vouch.execute(action, async (context) => {
      const method = 'tools/' + 'call';
      return this.mcp.request({ method, params: context.proposal }, CallToolResultSchema);
    });
  }
}
`,
        // Comments and types cannot call anything.
        'src/types.ts': `// callTool and tools/call in a comment\nimport type { CallToolResultSchema } from 'sdk';\nexport type R = typeof CallToolResultSchema;\n`,
      });
      const { code, err } = await check(root);
      expect(err).toContain('4 file(s), every upstream tool call goes through execute()');
      expect(code).toBe(0);
    });
  });

  describe('when code calls a tool outside execute()', () => {
    it.each([
      ['bypass.js', 'module.exports = (client) => client.callTool({ name: "x" });\n'],
      ['bypass.mjs', 'export default (client) => client.callTool({ name: "x" });\n'],
      ['bypass.cjs', 'exports.go = (client) => client.callToolStream({ name: "x" });\n'],
      [
        'bypass.tsx',
        'export const Button = ({ c }) => <button onClick={() => c.callTool({ name: "x" })} />;\n',
      ],
      [
        'bypass.jsx',
        'export const Button = ({ c }) => <button onClick={() => c.callTool({ name: "x" })} />;\n',
      ],
      ['bypass.ts', 'export const go = (c: any) => c.request({ method: "tools/call" }, S);\n'],
    ])('flags %s', async (file, text) => {
      const root = project({ [file]: text });
      expect(await found(root)).toEqual([`${file}:1 UPSTREAM_CALL_OUTSIDE_EXECUTE`]);
    });

    it('reports file:line:column: rule: message and exits 1', async () => {
      const root = project({ 'src/ok.ts': GOVERNED, 'src/go.js': '\n  client.callTool({ name: "x" });\n' });
      const { code, out } = await check(root);
      expect(out).toBe(
        'src/go.js:2:10: UPSTREAM_CALL_OUTSIDE_EXECUTE: callTool outside the invoke of vouch.execute(): an upstream tool call must go through Vouch\n',
      );
      expect(code).toBe(1);
    });

    it('catches names computed at run time', async () => {
      const root = project({
        'computed.ts': `export async function go(client, name, other) {
  await client['call' + 'Tool']({ name: 'x' });
  await client[\`call\${'Tool'}\`]({ name: 'x' });
  const verb = 'call';
  await client[verb.concat('Tool')]({ name: 'x' });
  await client[name]({ name: 'x' });
  await client[name].call(client, { name: 'x' });
  await Reflect.get(client, name)({ name: 'x' });
  await client.request({ method: ['tools', 'call'].join('/') }, S);
  await client.request({ method: other }, S);
  await client.request(other, ResultSchema);
  return [client[0], client[name], client[name.length - 1]];
}
`,
      });
      expect(await found(root)).toEqual([
        'computed.ts:2 UPSTREAM_CALL_OUTSIDE_EXECUTE', // 'call' + 'Tool'
        'computed.ts:3 UPSTREAM_CALL_OUTSIDE_EXECUTE', // `call${'Tool'}`
        'computed.ts:5 UPSTREAM_CALL_OUTSIDE_EXECUTE', // verb.concat('Tool')
        'computed.ts:6 COMPUTED_MEMBER_CALL', // client[name]()
        'computed.ts:7 COMPUTED_MEMBER_CALL', // client[name].call()
        'computed.ts:8 COMPUTED_MEMBER_CALL', // Reflect.get(client, name)
        'computed.ts:9 UPSTREAM_CALL_OUTSIDE_EXECUTE', // ['tools', 'call'].join('/')
        'computed.ts:10 COMPUTED_MEMBER_CALL', // method: other
        'computed.ts:11 COMPUTED_MEMBER_CALL', // request(other, ResultSchema)
      ]);
    });

    it('flags every computed member read with computedMembers "all"', async () => {
      const root = project({
        'read.ts': 'export const pick = (client, name) => client[name];\n',
        '.vouch-execute-path.json': JSON.stringify({ computedMembers: 'all' }),
      });
      expect(await found(root)).toEqual(['read.ts:1 COMPUTED_MEMBER_CALL']);
    });

    it('flags an execute() that is not the Vouch client, and an alias of callTool', async () => {
      const root = project({
        'lookalike.ts': `export async function go(queue, client, action) {
  await queue.execute(action, () => client.callTool({ name: 'x' }));
  const { callTool: later } = client;
  return later;
}
`,
      });
      expect(await found(root)).toEqual([
        'lookalike.ts:2 UPSTREAM_CALL_OUTSIDE_EXECUTE',
        'lookalike.ts:3 UPSTREAM_CALL_OUTSIDE_EXECUTE',
      ]);
    });
  });

  describe('when code reaches a tool call without naming it (issue #40)', () => {
    it('flags an execute() that is not the Vouch client: a local fake, a class, a binding', async () => {
      const root = project({
        'fake.ts': `import { createVouchClient } from '@vouch/client';
const vouch = { execute: (action, invoke) => invoke({ proposal: action }) };
export const viaLiteral = (mcp, a) => vouch.execute(a, () => mcp.callTool({ name: 'x' }));
class Runner {
  execute(action, invoke) { return invoke({ proposal: action }); }
}
export function viaClass(mcp, a) {
  const vouch = new Runner();
  return vouch.execute(a, () => mcp.callTool({ name: 'x' }));
}
export const viaAssignment = (host) => { host.vouch.execute = (a, invoke) => invoke(a); };
export const viaString = (host, f) => Object.defineProperty(host, 'exec' + 'ute', { value: f });
export const real = createVouchClient({ baseUrl: 'http://127.0.0.1:8787', apiKey: 'k' });
export const host = { vouch: createVouchClient({ baseUrl: 'http://127.0.0.1:8787', apiKey: 'k' }) };
export const passedOn = (deps) => { const vouch = deps.vouch; return vouch; };
`,
        'testing.ts':
          "import { createFakeVouch } from '@vouch/client/testing';\nexport const fake = createFakeVouch;\n",
      });
      expect(await found(root)).toEqual([
        'fake.ts:2 UNTRUSTED_EXECUTE', // const vouch = { execute: … }
        'fake.ts:5 UNTRUSTED_EXECUTE', // class Runner { execute() }
        'fake.ts:8 UNTRUSTED_EXECUTE', // const vouch = new Runner()
        'fake.ts:11 UNTRUSTED_EXECUTE', // host.vouch.execute = …
        'fake.ts:12 UNTRUSTED_EXECUTE', // 'exec' + 'ute'
        'testing.ts:1 UNTRUSTED_EXECUTE', // the in-memory fake outside tests
      ]);
    });

    it('flags a dynamic import whose method is found at run time and called through its descriptor', async () => {
      const root = project({
        'descriptor.mjs': `export async function viaDescriptor(client, spec) {
  const sdk = await import('@modelcontextprotocol/sdk/client/index.js');
  const proto = sdk.Client.prototype;
  const name = Object.getOwnPropertyNames(proto).find((k) => k.startsWith('call') && k.endsWith('Tool'));
  const descriptor = Object.getOwnPropertyDescriptor(proto, name);
  await descriptor.value.call(client, { name: 'x' });
  const all = Object.getOwnPropertyDescriptors(Object.getPrototypeOf(client));
  const keys = Reflect.ownKeys(proto);
  const other = await import(spec);
  const code = eval(spec);
  return [all, keys, other, code, Object.getOwnPropertyDescriptor(proto, 'constructor')];
}
`,
      });
      expect(await found(root)).toEqual([
        'descriptor.mjs:3 COMPUTED_MEMBER_CALL', // a prototype kept whole
        'descriptor.mjs:4 COMPUTED_MEMBER_CALL', // getOwnPropertyNames
        'descriptor.mjs:5 COMPUTED_MEMBER_CALL', // getOwnPropertyDescriptor(proto, name)
        'descriptor.mjs:7 COMPUTED_MEMBER_CALL', // getOwnPropertyDescriptors
        'descriptor.mjs:8 COMPUTED_MEMBER_CALL', // Reflect.ownKeys
        'descriptor.mjs:9 COMPUTED_MEMBER_CALL', // import(spec)
        'descriptor.mjs:10 COMPUTED_MEMBER_CALL', // eval
        'descriptor.mjs:11 COMPUTED_MEMBER_CALL', // the namespace other, handed on
      ]);
    });

    it('flags a raw JSON-RPC message whose method the file does not fix, and a raw transport send', async () => {
      const root = project({
        'raw.js': `export async function raw(upstream, verb, message, socket, res) {
  await upstream.client.transport.send({ jsonrpc: '2.0', id: 7, method: \`tools/\${verb}\`, params: {} });
  await upstream.client.transport.send(message);
  socket.write(JSON.stringify({ jsonrpc: '2.0', id: 8, method: verb, params: {} }));
  await upstream.transport.send({ ...message, jsonrpc: '2.0', id: 9 });
  await upstream.client.transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  await fetch('http://127.0.0.1:1/', { method: verb });
  res.send(message);
}
`,
      });
      expect(await found(root)).toEqual([
        'raw.js:2 COMPUTED_MEMBER_CALL', // method: tools/${verb}
        'raw.js:3 COMPUTED_MEMBER_CALL', // transport.send(message)
        'raw.js:4 COMPUTED_MEMBER_CALL', // a message for any channel
        'raw.js:5 COMPUTED_MEMBER_CALL', // the method comes from a spread
      ]);
    });

    it('flags a module namespace or a prototype used other than through a fixed name', async () => {
      const root = project({
        'namespace.ts': `import * as upstreamCall from './upstream-call';
import * as path from 'node:path';
export const viaValues = (u, c) => Object.values(upstreamCall)[0](u, c);
export const viaSpread = (u, c) => ({ ...upstreamCall }).callUpstreamTool(u, c);
export const handedOn = () => pick(upstreamCall);
export async function viaDynamic(u, c) {
  const mod = await import('./upstream-call');
  for (const key in mod) await mod[key](u, c);
  return import('./upstream-call').then((m) => Object.entries(m));
}
export const viaPrototype = (Client) => Object.values(Client.prototype);
export const fine = path.join('a', 'b');
`,
      });
      expect(await found(root)).toEqual([
        'namespace.ts:3 COMPUTED_MEMBER_CALL', // Object.values(upstreamCall)
        'namespace.ts:4 COMPUTED_MEMBER_CALL', // { ...upstreamCall }
        'namespace.ts:5 COMPUTED_MEMBER_CALL', // pick(upstreamCall)
        'namespace.ts:8 COMPUTED_MEMBER_CALL', // for (key in mod), mod[key]()
        'namespace.ts:9 COMPUTED_MEMBER_CALL', // Object.entries(m)
        'namespace.ts:11 COMPUTED_MEMBER_CALL', // Object.values(Client.prototype)
      ]);
    });
    it('applies the same rules to other shapes of each bypass', async () => {
      const root = project({
        'shapes.ts': `export class Field { execute = (a, invoke) => invoke(a); }
export class Getter { get execute() { return (a, invoke) => invoke(a); } }
export const entries = (f) => Object.fromEntries([['execute', f]]);
export const proxy = new Proxy({}, { get: () => (a, invoke) => invoke(a) });
export const loaded = (spec) => require(spec);
export const applied = (f, client) => Reflect.apply(f, client, []);
export class Host { constructor(runner) { this.vouch = runner.spread ? { ...runner } : runner; } }
export const global = (Runner) => { globalThis.vouch = new Runner(); };
export const legacy = (proto, k) => proto.__lookupGetter__(k);
export const raw = (client, m) => client['transport'].send(m);
export const held = (upstream, m) => { const t = upstream.client.transport; return t.send(m); };
export const whole = async () => Object.values(await import('./upstream-call'));
export const lazy = async () => (await import('./upstream-call')).viaName;
`,
      });
      expect(await found(root)).toEqual([
        'shapes.ts:1 UNTRUSTED_EXECUTE', // a class field
        'shapes.ts:2 UNTRUSTED_EXECUTE', // a getter
        'shapes.ts:3 UNTRUSTED_EXECUTE', // the string 'execute'
        'shapes.ts:4 COMPUTED_MEMBER_CALL', // a Proxy
        'shapes.ts:5 COMPUTED_MEMBER_CALL', // require(spec)
        'shapes.ts:6 COMPUTED_MEMBER_CALL', // Reflect.apply
        'shapes.ts:7 UNTRUSTED_EXECUTE', // this.vouch = { ...runner }
        'shapes.ts:8 UNTRUSTED_EXECUTE', // globalThis.vouch = new Runner()
        'shapes.ts:9 COMPUTED_MEMBER_CALL', // __lookupGetter__(k)
        'shapes.ts:10 COMPUTED_MEMBER_CALL', // client['transport'].send(m)
        'shapes.ts:11 COMPUTED_MEMBER_CALL', // t = upstream.client.transport; t.send(m)
        'shapes.ts:12 COMPUTED_MEMBER_CALL', // Object.values(await import(…))
      ]);
    });

    it('flags an import of code it does not read: an excluded file, or one outside the directory', async () => {
      const root = project({
        'host/src/agent.ts': `import { vouch } from './__mocks__/vouch';
import { helper } from './agent.test';
import { shared } from '../../shared/upstream';
import { logger } from './logger.js';
import config from './config.json';
import type { Types } from './types';
export const go = (mcp, a) => vouch.execute(a, () => mcp.callTool({ name: 'x' }));
export const other = async () => (await import('./__mocks__/vouch')).vouch;
`,
        'host/src/__mocks__/vouch.ts': 'export const vouch = { execute: (a, invoke) => invoke(a) };\n',
        'host/src/agent.test.ts': 'export const helper = 1;\n',
        'host/src/logger.ts': 'export const logger = console;\n',
        'host/src/config.json': '{}',
        'host/src/types.d.ts': 'export type Types = string;\n',
        'shared/upstream.ts': 'export const shared = (c) => c.callTool({ name: "x" });\n',
      });
      const { code, out } = await check(join(root, 'host'), '--json');
      const report = JSON.parse(out) as { violations: Array<{ file: string; line: number; rule: string }> };
      expect(report.violations.map((v) => `${v.file}:${v.line} ${v.rule}`)).toEqual([
        'src/agent.ts:1 UNSCANNED_IMPORT', // an excluded mock, with a fake execute
        'src/agent.ts:2 UNSCANNED_IMPORT', // a test file
        'src/agent.ts:3 UNSCANNED_IMPORT', // outside the directory
        'src/agent.ts:8 UNSCANNED_IMPORT', // import() of the mock
      ]);
      expect(code).toBe(1);
    });

    it('leaves ordinary code alone, and trusts the factories the configuration names', async () => {
      const root = project({
        'ordinary.ts': `import * as path from 'node:path';
import { makeVouch } from './vouch';
const vouch = makeVouch();
export const config = { vouch: { url: 'http://127.0.0.1:8787' } };
export const schema = { vouch: z.strictObject({ url: z.url() }) };
export const run = (db, sql) => db.execute(sql);
export const pairs = (o) => Object.entries(o).concat(Object.keys(o)).concat(Object.values(o));
export const http = (verb) => fetch('http://127.0.0.1:1/', { method: verb });
export const reply = (res, body) => res.send(body);
export const errorReply = { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'x' } };
export const logEntry = (req, id) => ({ id, method: req.method, url: req.url });
export const own = Object.getOwnPropertyDescriptor(Object, 'keys');
export const iterate = (source) => source[Symbol.asyncIterator]();
export const joined = path.join('a', 'b');
export const governed = (mcp, a) => vouch.execute(a, () => mcp.callTool({ name: 'x' }));
`,
        '.vouch-execute-path.json': JSON.stringify({ factories: ['makeVouch'] }),
      });
      expect(await found(root)).toEqual([]);
    });
  });

  describe('what it scans', () => {
    it('skips node_modules, dist, tests and declarations by default', async () => {
      const bypass = 'export const go = (c) => c.callTool({ name: "x" });\n';
      const root = project({
        'node_modules/sdk/index.js': bypass,
        'dist/agent.js': bypass,
        'src/agent.test.ts': bypass,
        'src/__tests__/agent.ts': bypass,
        'src/agent.d.ts': 'export declare function callTool(): void;\n',
        'src/agent.ts': GOVERNED,
      });
      expect(await found(root)).toEqual([]);
    });

    it('takes include and exclude from the configuration and the command line', async () => {
      const bypass = 'export const go = (c) => c.callTool({ name: "x" });\n';
      const root = project({
        'gateway/a.ts': bypass,
        'gateway/generated/b.ts': bypass,
        'scripts/c.ts': bypass,
        '.vouch-execute-path.json': JSON.stringify({ include: ['gateway/**'] }),
      });
      expect(await found(root)).toEqual([
        'gateway/a.ts:1 UPSTREAM_CALL_OUTSIDE_EXECUTE',
        'gateway/generated/b.ts:1 UPSTREAM_CALL_OUTSIDE_EXECUTE',
      ]);
      expect(await found(root, '--exclude', 'gateway/generated/')).toEqual([
        'gateway/a.ts:1 UPSTREAM_CALL_OUTSIDE_EXECUTE',
      ]);
    });

    it('scans the directory it is given, and the receivers the configuration names', async () => {
      const root = project({
        'host/agent.ts': `export const go = (guard, c, a) => guard.execute(a, () => c.callTool({ name: 'x' }));\n`,
        'host/.vouch-execute-path.json': JSON.stringify({ receivers: ['guard'] }),
      });
      const { code, err } = await runVouch(['check-execute-path', 'host'], { cwd: root });
      expect(err).toContain('1 file(s), every upstream tool call goes through execute()');
      expect(code).toBe(0);
    });
  });

  describe('the allow-list', () => {
    const files = {
      'src/upstream.ts': `export async function callUpstream(client, context) {
  return client.callTool({ name: context.proposal.tool_name });
}
export const leak = (client) => client.callTool({ name: 'x' });
`,
      'src/handler.ts': `import { callUpstream } from './upstream';
export async function handle(vouch, client, action, forged) {
  await vouch.execute(action, (context) => callUpstream(client, context));
  return callUpstream(client, forged);
}
`,
      'src/forward.ts':
        'export const forward = (client, request) => client.request(request, ResultSchema);\n',
      'src/reexport.ts':
        "export { callUpstream } from './upstream';\nexport type { Context } from './upstream';\n",
    };
    const allow = [
      { file: 'src/upstream.ts', function: 'callUpstream', reason: 'the one upstream call' },
      { file: 'src/forward.ts', rule: 'COMPUTED_MEMBER_CALL', reason: 'forwards everything but tools/call' },
    ];

    it('honours each entry, and guards an allowed function like callTool', async () => {
      const root = project({ ...files, '.vouch-execute-path.json': JSON.stringify({ allow }) });
      expect(await found(root)).toEqual([
        'src/handler.ts:4 UPSTREAM_CALL_OUTSIDE_EXECUTE', // callUpstream with a forged context
        'src/reexport.ts:1 UPSTREAM_CALL_OUTSIDE_EXECUTE', // handing callUpstream to anyone
        'src/upstream.ts:4 UPSTREAM_CALL_OUTSIDE_EXECUTE', // outside the allowed function
      ]);
    });

    it('flags the same code without it', async () => {
      const root = project(files);
      expect(await found(root)).toEqual([
        'src/forward.ts:1 COMPUTED_MEMBER_CALL',
        'src/upstream.ts:2 UPSTREAM_CALL_OUTSIDE_EXECUTE',
        'src/upstream.ts:4 UPSTREAM_CALL_OUTSIDE_EXECUTE',
      ]);
    });

    it('reads --config from anywhere', async () => {
      const root = project({ ...files, 'ci/guard.json': JSON.stringify({ allow }) });
      expect(await found(root, '--config', 'ci/guard.json')).toHaveLength(3);
    });
  });

  describe('the configuration the client README shows', () => {
    it('is one the command accepts', async () => {
      const readme = readFileSync(new URL('../../../../packages/client/README.md', import.meta.url), 'utf8');
      const example = /```json\n(\{\n {2}"include"[\s\S]*?)```/.exec(readme)?.[1];
      expect(example).toBeDefined();
      const root = project({ 'src/agent.ts': GOVERNED, '.vouch-execute-path.json': example! });
      expect(await found(root)).toEqual([]);
    });
  });

  describe('when the input is wrong', () => {
    it.each([
      ['{ "allow": [ { "file": "a.ts" } ] }', /invalid configuration at \/allow\/0\/reason/],
      ['{ "allow": [ { "file": "a.ts", "rule": "NOPE", "reason": "x" } ] }', /\/allow\/0\/rule/],
      ['{ "recievers": ["vouch"] }', /invalid configuration at \/: .*recievers/],
      ['{ "allow": ', /is not JSON/],
    ])('exits 2 naming the fault for %s', async (config, message) => {
      const root = project({ 'a.ts': GOVERNED, '.vouch-execute-path.json': config });
      const { code, out, err } = await check(root);
      expect(err).toMatch(message);
      expect(out).toBe('');
      expect(code).toBe(2);
    });

    it('exits 2 for a missing directory, config file or option value', async () => {
      const root = project({ 'a.ts': GOVERNED });
      for (const args of [['nowhere'], ['--config', 'missing.json'], ['--include']]) {
        const { code, err } = await check(root, ...args);
        expect(err).toMatch(/not a directory|cannot read the configuration file|argument missing/);
        expect(code).toBe(2);
      }
    });
  });
});
