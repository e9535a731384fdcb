import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createVerifierRegistry, type JsonObject, runVerifiers } from '@vouch/verifier-sdk';
import { exampleObservation, exampleProposal, VerifierTester } from '@vouch/verifier-sdk/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileVerifier } from './file-verifier';

let base: string;
let root: string;
let outside: string;
const config = '{"name":"app","version":"1.2.0","deps":{"zod":"4.6.7"}}';
const sha = (text: string) => createHash('sha256').update(text).digest('hex');

beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'vouch-file-'));
  root = path.join(base, 'repo');
  outside = path.join(base, 'outside');
  await mkdir(path.join(root, 'src'), { recursive: true });
  await mkdir(outside);
  await writeFile(path.join(root, 'src', 'index.ts'), 'export const answer = 42;\n');
  await writeFile(path.join(root, 'package.json'), config);
  await writeFile(path.join(root, 'notes.json'), 'not json');
  await writeFile(path.join(root, 'big.txt'), 'x'.repeat(2048));
  await writeFile(path.join(outside, 'secret.txt'), 'top secret');
  // Links an agent could plant inside the checkout.
  await symlink(path.join(outside, 'secret.txt'), path.join(root, 'leak.txt'));
  await symlink(outside, path.join(root, 'escape'));
  await symlink(path.join(root, 'src', 'index.ts'), path.join(root, 'alias.ts'));
  await symlink(path.join(outside, 'nothing-here'), path.join(root, 'dangling'));
  execFileSync('mkfifo', [path.join(root, 'pipe')]);
});
afterAll(() => rm(base, { recursive: true, force: true }));

async function verify(options: Record<string, unknown>, args: JsonObject = {}) {
  const registry = createVerifierRegistry([
    {
      verifier: fileVerifier,
      handles: ['file.written'],
      options: { roots: [root], path: '{arguments.path}', ...options },
    },
  ]);
  const outcome = await runVerifiers({
    registry,
    proposal: exampleProposal({ postconditions: [{ name: 'file.written' }], arguments: args }),
    observation: exampleObservation({ server_id: 'fs-mcp' }),
  });
  return { status: outcome.status, check: outcome.checks[0]! };
}

describe('file verifier', () => {
  describe('when the file is there', () => {
    it('passes exists and records the size and hash', async () => {
      const { status, check } = await verify({}, { path: 'src/index.ts' });
      expect(status).toBe('passed');
      expect(check).toMatchObject({
        source: 'filesystem',
        evidence: { path: path.join('src', 'index.ts'), type: 'file', size: 26 },
      });
    });

    it.each([
      ['the right SHA-256', { op: 'sha256', value: sha('export const answer = 42;\n') }, 'pass'],
      ['a SHA-256 taken from the proposal', { op: 'sha256', from: 'arguments.sha' }, 'pass'],
      ['another SHA-256', { op: 'sha256', value: sha('other') }, 'fail'],
      ['a text it contains', { op: 'contains', text: 'answer = 42' }, 'pass'],
      ['a text it lacks', { op: 'contains', text: 'answer = 41' }, 'fail'],
      ['a matching pattern', { op: 'matches', pattern: '^export const \\w+ = \\d+;$', flags: 'm' }, 'pass'],
      ['a pattern that does not match', { op: 'matches', pattern: '^import' }, 'fail'],
      ['absent', { op: 'absent' }, 'fail'],
    ])('checks %s', async (_label, assertion, status) => {
      const { check } = await verify(
        { assertions: [assertion] },
        { path: 'src/index.ts', sha: sha('export const answer = 42;\n') },
      );
      expect(check.status).toBe(status);
    });

    it('checks a JSON value by pointer', async () => {
      const holds = await verify(
        {
          assertions: [
            { op: 'json', assert: { op: 'equals', pointer: '/deps/zod', from: 'arguments.version' } },
          ],
        },
        { path: 'package.json', version: '4.6.7' },
      );
      expect(holds.check).toMatchObject({ status: 'pass', observed: ['4.6.7'] });
      const differs = await verify(
        { assertions: [{ op: 'json', assert: { op: 'equals', pointer: '/version', value: '2.0.0' } }] },
        { path: 'package.json' },
      );
      expect(differs.check.status).toBe('fail');
    });

    it('fails a JSON assertion on a file that is not JSON', async () => {
      const { check } = await verify(
        { assertions: [{ op: 'json', assert: { op: 'exists', pointer: '/a' } }] },
        { path: 'notes.json' },
      );
      expect(check.status).toBe('fail');
    });

    it('follows a symlink that stays under the root', async () => {
      const { check } = await verify({ assertions: [{ op: 'contains', text: '42' }] }, { path: 'alias.ts' });
      expect(check).toMatchObject({ status: 'pass', evidence: { path: path.join('src', 'index.ts') } });
    });

    it('accepts an absolute path under the root', async () => {
      expect((await verify({}, { path: path.join(root, 'package.json') })).check.status).toBe('pass');
    });
  });

  describe('when the file is missing', () => {
    it('fails exists and passes absent', async () => {
      expect((await verify({}, { path: 'src/missing.ts' })).check.status).toBe('fail');
      expect(
        (await verify({ assertions: [{ op: 'absent' }] }, { path: 'src/missing.ts' })).check.status,
      ).toBe('pass');
      expect(
        (await verify({ assertions: [{ op: 'absent' }] }, { path: 'no/such/dir/x.ts' })).check.status,
      ).toBe('pass');
    });

    it('fails exists on a directory', async () => {
      expect((await verify({}, { path: 'src' })).check).toMatchObject({
        status: 'fail',
        evidence: { type: 'directory' },
      });
    });
  });

  describe('when the path escapes the roots', () => {
    it.each([
      ['a .. path', '../outside/secret.txt'],
      ['an absolute path elsewhere', '/etc/hostname'],
      ['a symlink to a file outside', 'leak.txt'],
      ['a path through a symlinked directory', 'escape/secret.txt'],
      ['a missing file under a symlinked directory (no existence oracle)', 'escape/none.txt'],
      ['a dangling symlink', 'dangling'],
      ['a NUL byte', 'src/index.ts\u0000.png'],
    ])('refuses %s with SOURCE_FORBIDDEN, never fail', async (_label, requested) => {
      const { status, check } = await verify({ assertions: [{ op: 'absent' }] }, { path: requested });
      expect(status).toBe('inconclusive');
      expect(check).toMatchObject({ status: 'error', reason: 'SOURCE_FORBIDDEN' });
    });
  });

  describe('when the file cannot be judged', () => {
    it('is inconclusive over maxBytes', async () => {
      const { check } = await verify(
        { maxBytes: 1024, assertions: [{ op: 'contains', text: 'x' }] },
        { path: 'big.txt' },
      );
      expect(check).toMatchObject({ status: 'inconclusive', reason: 'FILE_TOO_LARGE' });
    });

    it('still hashes a file over maxBytes', async () => {
      const { check } = await verify(
        { maxBytes: 1024, assertions: [{ op: 'sha256', value: sha('x'.repeat(2048)) }] },
        { path: 'big.txt' },
      );
      expect(check.status).toBe('pass');
    });

    it('is inconclusive when the path is not in the proposal', async () => {
      expect((await verify({}, {})).check).toMatchObject({
        status: 'inconclusive',
        reason: 'TEMPLATE_VALUE_MISSING',
      });
    });

    it('records SOURCE_UNAVAILABLE when a root is gone', async () => {
      const registry = createVerifierRegistry([
        { verifier: fileVerifier, handles: ['f'], options: { roots: [path.join(base, 'gone')], path: 'x' } },
      ]);
      const outcome = await runVerifiers({
        registry,
        proposal: exampleProposal({ postconditions: [{ name: 'f' }] }),
        observation: exampleObservation(),
      });
      expect(outcome.checks[0]).toMatchObject({ status: 'error', reason: 'SOURCE_UNAVAILABLE' });
    });

    it('does not hang on a FIFO an agent planted', async () => {
      const { check } = await verify({ assertions: [{ op: 'contains', text: 'x' }] }, { path: 'pipe' });
      expect(check).toMatchObject({ status: 'fail', evidence: { type: 'other' } });
    });
  });

  describe('under the VerifierTester', () => {
    new VerifierTester({ describe, it }).run('file', fileVerifier, {
      pass: [
        {
          name: 'a written file',
          get options() {
            return { roots: [root], path: '{arguments.path}' };
          },
          proposal: { arguments: { path: 'src/index.ts' } },
        },
      ],
      fail: [
        {
          name: 'a missing file',
          get options() {
            return { roots: [root], path: '{arguments.path}' };
          },
          proposal: { arguments: { path: 'src/nope.ts' } },
        },
      ],
      inconclusive: [
        {
          name: 'an escape',
          reason: 'SOURCE_FORBIDDEN',
          get options() {
            return { roots: [root], path: '{arguments.path}' };
          },
          proposal: { arguments: { path: '../outside/secret.txt' } },
        },
      ],
      invalidOptions: [
        { name: 'no roots', options: { roots: [] }, field: '/options/roots' },
        { name: 'a relative root', options: { roots: ['repo'] }, field: '/options/roots/0' },
        {
          name: 'a bad hash',
          options: { roots: ['/r'], assertions: [{ op: 'sha256', value: 'abc' }] },
          field: '/options/assertions/0/value',
        },
        {
          name: 'sha256 with nothing to compare',
          options: { roots: ['/r'], assertions: [{ op: 'sha256' }] },
          field: '/options/assertions/0/value',
        },
        {
          name: 'a json equals without a value',
          options: { roots: ['/r'], assertions: [{ op: 'json', assert: { op: 'equals', pointer: '/a' } }] },
          field: '/options/assertions/0/assert/value',
        },
        { name: 'a bad placeholder', options: { roots: ['/r'], path: '{HOME}/x' }, field: '/options/path' },
      ],
    });
  });
});
