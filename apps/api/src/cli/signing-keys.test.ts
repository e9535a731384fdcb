import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { authorKeyId, parseAuthorPrivateKey, parseAuthorPublicKey } from '@vouch/audit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runVouch } from '../testing/cli-io';

let root: string;
const run = (argv: string[]) => runVouch(argv, { env: { VOUCH_DATA_DIR: join(root, 'data') }, cwd: root });
interface Listed {
  signatures_required: boolean;
  keys: Array<{ key_id: string; identity: string; public_key: string; revoked_at: string | null }>;
}
const list = async () => JSON.parse((await run(['signing-keys', 'list', '--json'])).out) as Listed;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'vouch-signing-keys-'));
  expect((await run(['migrate'])).code).toBe(0);
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

describe('vouch signing-keys', () => {
  it('generate --out writes the private key (mode 0600) and prints its public key and key id', async () => {
    const { code, out } = await run(['signing-keys', 'generate', '--out', 'ops.key']);
    expect(code).toBe(0);
    const file = join(root, 'ops.key');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const key = parseAuthorPrivateKey(readFileSync(file, 'utf8').trim());
    const [, keyId, publicKey] = /^key_id (\S+)\npublic_key (\S+)\n$/.exec(out)!;
    expect(keyId).toBe(key.keyId);
    expect(authorKeyId(parseAuthorPublicKey(publicKey)!)).toBe(key.keyId);
  });

  it('generate never overwrites a file (exit 2)', async () => {
    writeFileSync(join(root, 'taken.key'), 'mine\n');
    const { code, err } = await run(['signing-keys', 'generate', '--out', 'taken.key']);
    expect(code).toBe(2);
    expect(err).toContain('exists');
    expect(readFileSync(join(root, 'taken.key'), 'utf8')).toBe('mine\n');
  });

  it('enroll as the operator, list, revoke', async () => {
    const made = JSON.parse((await run(['signing-keys', 'generate', '--json'])).out) as {
      key_id: string;
      public_key: string;
      private_key: string;
    };
    const enrolled = await run([
      'signing-keys',
      'enroll',
      '--identity',
      'user:ops',
      '--public-key',
      made.public_key,
    ]);
    expect(enrolled).toMatchObject({ code: 0, out: `enrolled ${made.key_id} for user:ops\n` });
    expect((await list()).keys).toEqual([
      expect.objectContaining({ key_id: made.key_id, identity: 'user:ops', revoked_at: null }),
    ]);
    expect(await run(['signing-keys', 'revoke', made.key_id])).toMatchObject({ code: 0 });
    expect((await list()).keys[0]!.revoked_at).not.toBeNull();
    // Once revoked, again: nothing to do, said so.
    const again = await run(['signing-keys', 'revoke', made.key_id]);
    expect(again.code).toBe(2);
    expect(again.err).toContain('revoked');
  });

  it('a malformed public key or an unknown key id is refused (exit 2) and nothing is recorded', async () => {
    const before = (await list()).keys.length;
    const bad = await run(['signing-keys', 'enroll', '--identity', 'user:x', '--public-key', 'ed25519:AAAA']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('PUBLIC_KEY_INVALID');
    const unknown = await run(['signing-keys', 'revoke', 'ab'.repeat(32)]);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('no enrolled signing key');
    expect((await list()).keys.length).toBe(before);
  });

  it('enroll without --public-key is a usage error with help', async () => {
    const { code, err } = await run(['signing-keys', 'enroll', '--identity', 'user:ops']);
    expect(code).toBe(2);
    expect(err).toContain('--public-key');
    expect((await run(['signing-keys', '--help'])).out).toContain('require');
  });

  it("enroll-server enrols the server's key, derived from the log signing key, once", async () => {
    const first = await run(['signing-keys', 'enroll-server', '--json']);
    expect(first.code, first.err).toBe(0);
    const shown = JSON.parse(first.out) as { key_id: string; enrolled: boolean };
    expect(shown.enrolled).toBe(true);
    expect((await list()).keys).toContainEqual(
      expect.objectContaining({ key_id: shown.key_id, identity: 'vouch:server', revoked_at: null }),
    );
    expect(await run(['signing-keys', 'enroll-server'])).toMatchObject({
      code: 0,
      out: `enrolled already ${shown.key_id} for vouch:server\n`,
    });
    const twice = await run([
      'signing-keys',
      'enroll',
      '--identity',
      'user:y',
      '--public-key',
      (await list()).keys.find((k) => k.key_id === shown.key_id)!.public_key,
    ]);
    expect(twice.code).toBe(2);
    expect(twice.err).toContain('SIGNING_KEY_ENROLLED');
  });

  it('require records signatures.required once', async () => {
    expect((await list()).signatures_required).toBe(false);
    expect(await run(['signing-keys', 'require'])).toMatchObject({
      code: 0,
      out: expect.stringContaining('required'),
    });
    expect((await list()).signatures_required).toBe(true);
    expect(await run(['signing-keys', 'require'])).toMatchObject({
      code: 0,
      out: 'signatures are required already\n',
    });
    const verified = await run(['verify', '--log', 'system']);
    expect(verified.code, verified.err + verified.out).toBe(0);
  });
});
