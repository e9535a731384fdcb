import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runVouch } from '../testing/cli-io';

// typescript is an optional peer of @vouch/api: a project without it gets a sentence, not a stack.
vi.mock('typescript', () => {
  throw Object.assign(new Error("Cannot find package 'typescript'"), { code: 'ERR_MODULE_NOT_FOUND' });
});

const root = mkdtempSync(join(tmpdir(), 'vouch-execute-path-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('vouch check-execute-path without the typescript package', () => {
  it('exits 2 and says how to install it', async () => {
    writeFileSync(join(root, 'agent.js'), 'export const go = (c) => c.callTool({ name: "x" });\n');
    const { code, out, err } = await runVouch(['check-execute-path'], { cwd: root });
    expect(err).toBe(
      'vouch check-execute-path: this command needs the typescript package for its parser: npm install --save-dev typescript\n',
    );
    expect(out).toBe('');
    expect(code).toBe(2);
  });
});
