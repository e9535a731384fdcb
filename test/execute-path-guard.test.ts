import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';

const repo = join(import.meta.dirname, '..');
const gateway = join(repo, 'apps', 'mcp-gateway');
const vouch = join(repo, 'apps', 'api', 'bin', 'vouch.js');

const temporary: string[] = [];
afterEach(() => {
  for (const dir of temporary.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** `vouch check-execute-path DIR`, as CI runs it: the exit code and what it printed. */
async function guard(dir: string): Promise<{ code: number; out: string; err: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [
      vouch,
      'check-execute-path',
      dir,
    ]);
    return { code: 0, out: stdout, err: stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, out: failed.stdout, err: failed.stderr };
  }
}

/** A copy of the gateway's sources and its allow-list, to plant bypasses in. */
function gatewayCopy(): string {
  const copy = mkdtempSync(join(tmpdir(), 'vouch-guard-'));
  temporary.push(copy);
  cpSync(join(gateway, 'src'), join(copy, 'src'), { recursive: true });
  cpSync(join(gateway, '.vouch-execute-path.json'), join(copy, '.vouch-execute-path.json'));
  return copy;
}

// This test is how `npm test` runs the CI guard on this repository's own gateway (with the
// allow-list in apps/mcp-gateway/.vouch-execute-path.json), and proves it would notice a bypass.
describe('vouch check-execute-path on the MCP gateway', () => {
  it('finds every upstream tool call inside execute()', async () => {
    const { code, out, err } = await guard(gateway);
    expect(out, err).toBe('');
    expect(err).toMatch(/\d+ file\(s\), every upstream tool call goes through execute\(\)/);
    expect(code).toBe(0);
  }, 30_000);

  it('flags a bypass added to a copy of the gateway', async () => {
    const copy = gatewayCopy();
    writeFileSync(
      join(copy, 'src', 'shortcut.js'),
      'export const shortcut = (u) => u.client.callTool({ name: "close_account" });\n' +
        "export const sneaky = (u, v) => u.client['call' + 'Tool']({ name: v });\n",
    );
    writeFileSync(
      join(copy, 'src', 'forged.ts'),
      "import { callUpstreamTool } from './upstream-call';\n" +
        'export const forged = (u: never, c: never) => callUpstreamTool(u, c);\n',
    );
    const { code, out } = await guard(copy);
    // Each line: FILE:LINE:COLUMN: RULE: message.
    expect(
      out
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split(': ').slice(0, 2).join(' ')),
    ).toEqual([
      'src/forged.ts:2:47 UPSTREAM_CALL_OUTSIDE_EXECUTE', // the allowed wrapper, with a forged context
      'src/shortcut.js:1:41 UPSTREAM_CALL_OUTSIDE_EXECUTE', // callTool in a .js file
      'src/shortcut.js:2:42 UPSTREAM_CALL_OUTSIDE_EXECUTE', // 'call' + 'Tool'
    ]);
    expect(code).toBe(1);
  }, 30_000);

  // The four bypasses issue #40 found: each reaches the upstream without a name the guard knew.
  it('flags a fake vouch, a descriptor call, a raw transport send and a namespace lookup', async () => {
    const copy = gatewayCopy();
    writeFileSync(
      join(copy, 'src', 'bypasses.ts'),
      [
        "import * as upstreamCall from './upstream-call';",
        'import type { Upstream } from "./upstream-call";',
        'const vouch = { execute: (a: never, invoke: (c: never) => unknown) => invoke(a) };',
        'export const fake = (u: Upstream, a: never) => vouch.execute(a, (c) => upstreamCall.callUpstreamTool(u, c));',
        'export async function descriptor(u: Upstream) {',
        "  const sdk = await import('@modelcontextprotocol/sdk/client/index.js');",
        "  const key = Object.getOwnPropertyNames(sdk.Client.prototype).find((k) => k.endsWith('Tool'))!;",
        '  return Object.getOwnPropertyDescriptor(sdk.Client.prototype, key)!.value.call(u.client, { name: "x" });',
        '}',
        'export const raw = (u: Upstream, verb: string) =>',
        "  u.client.transport!.send({ jsonrpc: '2.0', id: 1, method: 'tools/' + verb, params: { name: 'x' } });",
        'export const lookup = (u: never, c: never) =>',
        "  (Object.values(upstreamCall).find((f) => f.name.endsWith('UpstreamTool')) as (u: never, c: never) => unknown)(u, c);",
        '',
      ].join('\n'),
    );
    const { code, out } = await guard(copy);
    expect(
      out
        .split('\n')
        .filter(Boolean)
        .map((line) => {
          const [where, rule] = line.split(': ');
          return `${where!.split(':').slice(0, 2).join(':')} ${rule}`;
        }),
    ).toEqual([
      'src/bypasses.ts:3 UNTRUSTED_EXECUTE', // a local fake vouch
      'src/bypasses.ts:7 COMPUTED_MEMBER_CALL', // a method found at run time…
      'src/bypasses.ts:8 COMPUTED_MEMBER_CALL', // …called through its descriptor
      'src/bypasses.ts:11 COMPUTED_MEMBER_CALL', // a raw transport send of 'tools/' + verb
      'src/bypasses.ts:13 COMPUTED_MEMBER_CALL', // the allowed helper through Object.values
    ]);
    expect(code).toBe(1);
  }, 30_000);
});
