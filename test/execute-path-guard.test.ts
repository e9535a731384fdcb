import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkExecutePath, formatViolations } from '../scripts/check-execute-path';

const repo = join(import.meta.dirname, '..');
const gatewaySource = join(repo, 'apps', 'mcp-gateway', 'src');
const fixture = join(repo, 'scripts', 'fixtures', 'execute-path-violation');

const temporary: string[] = [];
afterEach(() => {
  for (const dir of temporary.splice(0)) rmSync(dir, { recursive: true, force: true });
});

// This test is how `npm test` runs the CI guard: it fails when the gateway itself can reach
// an upstream tool call outside execute(), and it proves the guard would notice one.
describe('checkExecutePath', () => {
  describe('when run on the MCP gateway sources', () => {
    it('finds every upstream tool call inside execute()', () => {
      const violations = checkExecutePath({ sourceDir: gatewaySource });
      expect(violations, formatViolations(violations)).toEqual([]);
    });
  });

  describe('when run on the deliberate-violation fixture', () => {
    it('flags exactly the planted lines, each with its rule', () => {
      const found = checkExecutePath({ sourceDir: fixture }).map((v) => `${v.file}:${v.line} ${v.rule}`);
      expect(found).toEqual([
        'bypass.ts:2 UPSTREAM_CALL_OUTSIDE_MODULE', // import of CallToolResultSchema
        'bypass.ts:3 CALL_FUNCTION_ESCAPES', // value import of the call function
        'bypass.ts:6 UPSTREAM_CALL_OUTSIDE_MODULE', // upstream.client.callTool(...)
        'bypass.ts:7 UPSTREAM_CALL_OUTSIDE_MODULE', // request({ method: 'tools/call' })
        'bypass.ts:7 UPSTREAM_CALL_OUTSIDE_MODULE', // ... parsed with CallToolResultSchema
        'bypass.ts:9 UPSTREAM_CALL_OUTSIDE_MODULE', // client['callTool']
        'bypass.ts:10 CALL_FUNCTION_ESCAPES', // import('./upstream-call')
        'call-tool.ts:7 CALL_OUTSIDE_EXECUTE', // called with a forged context
        'call-tool.ts:9 CALL_OUTSIDE_EXECUTE', // aliased
        'call-tool.ts:11 CALL_OUTSIDE_EXECUTE', // inside an execute() that is not vouch's
        'reexport.ts:3 CALL_FUNCTION_ESCAPES', // export { callUpstreamTool } from
        'upstream-call.ts:15 UPSTREAM_CALL_OUTSIDE_MODULE', // a second exported caller in the call module
      ]);
    });

    it('leaves type-only imports, comments and tests alone', () => {
      const files = new Set(checkExecutePath({ sourceDir: fixture }).map((v) => v.file));
      expect(files.has('allowed.ts')).toBe(false);
      expect(files.has('agent.test.ts')).toBe(false);
    });
  });

  describe('when a bypass is added to a copy of the gateway', () => {
    it('flags the new file', () => {
      const copy = mkdtempSync(join(tmpdir(), 'vouch-guard-'));
      temporary.push(copy);
      cpSync(gatewaySource, copy, { recursive: true });
      writeFileSync(
        join(copy, 'shortcut.ts'),
        "import type { Upstream } from './upstream-call';\n" +
          'export const shortcut = (u: Upstream) => u.client.callTool({ name: "close_account" });\n',
      );
      expect(checkExecutePath({ sourceDir: copy }).map((v) => `${v.file}:${v.line} ${v.rule}`)).toEqual([
        'shortcut.ts:2 UPSTREAM_CALL_OUTSIDE_MODULE',
      ]);
    });
  });
});
