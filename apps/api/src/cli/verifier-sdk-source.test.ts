import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findVerifierSdk } from './verifier-sdk-source';

let root: string;
const at = (...parts: string[]) => path.join(root, ...parts);
const touch = (...parts: string[]) => {
  mkdirSync(path.dirname(at(...parts)), { recursive: true });
  writeFileSync(at(...parts), '');
};

beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), 'vouch-sdk-source-'));
  // A pack-workspaces DEST, with vouch installed in it.
  touch('dest', 'vouch-verifier-sdk-0.1.0.tgz');
  touch('dest', 'vouch-api-0.1.0.tgz');
  touch('dest', 'node_modules', '@vouch', 'api', 'dist', 'cli.js');
  // The SDK package itself, and a directory holding two versions.
  mkdirSync(at('sdk'));
  writeFileSync(at('sdk', 'package.json'), JSON.stringify({ name: '@vouch/verifier-sdk' }));
  touch('two', 'vouch-verifier-sdk-0.1.0.tgz');
  touch('two', 'vouch-verifier-sdk-0.2.0.tgz');
  mkdirSync(at('empty'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const elsewhere = '/usr/lib/node/vouch.js';

describe('findVerifierSdk', () => {
  describe('when --sdk is given', () => {
    it.each([
      ['a tarball', 'dest/vouch-verifier-sdk-0.1.0.tgz', 'dest/vouch-verifier-sdk-0.1.0.tgz'],
      ['a directory holding one', 'dest', 'dest/vouch-verifier-sdk-0.1.0.tgz'],
      ['the SDK package directory', 'sdk', 'sdk'],
    ])('takes %s', (_what, given, found) => {
      expect(findVerifierSdk({ given, cwd: root, installedFrom: elsewhere })).toBe(at(found));
    });

    it.each([
      ['nothing there', 'nope'],
      ['a file that is not a tarball', 'sdk/package.json'],
      ['a directory with two SDK tarballs', 'two'],
      ['a directory with none', 'empty'],
    ])('refuses %s with a CliError', (_what, given) => {
      expect(() => findVerifierSdk({ given, cwd: root, installedFrom: elsewhere })).toThrow(
        expect.objectContaining({ name: 'CliError' }),
      );
    });
  });

  describe('when --sdk is absent', () => {
    it('takes the tarball of the project this vouch is installed in', () => {
      const installedFrom = at('dest', 'node_modules', '.bin', 'vouch');
      expect(findVerifierSdk({ cwd: at('empty'), installedFrom })).toBe(
        at('dest', 'vouch-verifier-sdk-0.1.0.tgz'),
      );
    });

    it('then the one in the current directory', () => {
      expect(findVerifierSdk({ cwd: at('dest'), installedFrom: elsewhere })).toBe(
        at('dest', 'vouch-verifier-sdk-0.1.0.tgz'),
      );
    });

    it('refuses, saying how to pack the SDK, when there is none', () => {
      expect(() => findVerifierSdk({ cwd: at('empty'), installedFrom: elsewhere })).toThrow(
        /scripts\/pack-workspaces\.mjs/,
      );
    });
  });
});
