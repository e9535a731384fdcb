import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runVouch } from '../testing/cli-io';

let root: string;
const run = (argv: string[]) => runVouch(argv, { env: { VOUCH_DATA_DIR: join(root, 'data') }, cwd: root });
const keyList = async () =>
  JSON.parse((await run(['keys', 'list', '--json'])).out).keys as Array<{
    id: string;
    identity: string;
    roles: string[];
    scopes: string[];
    environments: string[] | null;
    revoked_at: string | null;
  }>;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'vouch-keys-'));
  expect((await run(['migrate'])).code).toBe(0);
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

describe('vouch keys', () => {
  describe('when a key would hold roles that must stay apart', () => {
    it('create refuses it (exit 2, ROLE_COMBINATION_FORBIDDEN) and stores nothing', async () => {
      const { code, err } = await run([
        'keys',
        'create',
        '--identity',
        'user:both',
        '--role',
        'gateway',
        '--role',
        'approver',
      ]);
      expect(code).toBe(2);
      expect(err).toContain('ROLE_COMBINATION_FORBIDDEN');
      expect((await keyList()).filter((key) => key.identity === 'user:both')).toEqual([]);
    });

    it('create issues it with --allow-role-combination', async () => {
      const { code, out } = await run([
        'keys',
        'create',
        '--identity',
        'user:both',
        '--role',
        'admin',
        '--role',
        'approver',
        '--allow-role-combination',
      ]);
      expect(code).toBe(0);
      expect(out.trim()).toMatch(/^vch_/);
    });
  });

  describe('when a key is rotated', () => {
    it('issues a key with the same identity, roles and limits, and revokes the old one', async () => {
      const created = await run([
        'keys',
        'create',
        '--identity',
        'agent:gw',
        '--role',
        'gateway',
        '--scope',
        'pay:write',
        '--env',
        'staging',
        '--json',
      ]);
      const old = JSON.parse(created.out) as { key: { id: string }; secret: string };
      const rotated = await run(['keys', 'rotate', old.key.id, '--json']);
      expect(rotated.code).toBe(0);
      const replacement = JSON.parse(rotated.out) as {
        key: { id: string };
        secret: string;
        replaces: string;
      };
      expect(replacement.replaces).toBe(old.key.id);
      expect(replacement.secret).not.toBe(old.secret);
      const keys = await keyList();
      const before = keys.find((key) => key.id === old.key.id)!;
      const after = keys.find((key) => key.id === replacement.key.id)!;
      expect(before.revoked_at).not.toBeNull();
      expect(after).toMatchObject({
        identity: 'agent:gw',
        roles: ['gateway'],
        scopes: ['pay:write'],
        environments: ['staging'],
        revoked_at: null,
      });
    });

    it('leaves the old key valid with --keep-old', async () => {
      const created = await run([
        'keys',
        'create',
        '--identity',
        'agent:slow',
        '--role',
        'gateway',
        '--json',
      ]);
      const oldId = (JSON.parse(created.out) as { key: { id: string } }).key.id;
      const rotated = await run(['keys', 'rotate', oldId, '--keep-old']);
      expect(rotated.code).toBe(0);
      expect(rotated.out.trim()).toMatch(/^vch_/);
      expect(rotated.err).toContain('still valid');
      const keys = (await keyList()).filter((key) => key.identity === 'agent:slow');
      expect(keys.map((key) => key.revoked_at)).toEqual([null, null]);
    });

    it('refuses an unknown or revoked key id with exit 2', async () => {
      expect((await run(['keys', 'rotate', 'key_nope'])).code).toBe(2);
      const revoked = (await keyList()).find((key) => key.revoked_at !== null)!;
      const again = await run(['keys', 'rotate', revoked.id]);
      expect(again.code).toBe(2);
      expect(again.err).toContain('revoked already');
    });
  });
});
