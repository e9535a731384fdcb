import {
  eventLeafHash,
  generateCosignerKeys,
  generateNoteKeys,
  openCheckpoint,
  parseCosignerSignerKey,
  parseSignerKey,
  type StoredEvent,
  splitLines,
  verifyBundle,
  verifyConsistency,
  verifyCosignatures,
  verifyInclusion,
  verifySystemPart,
} from '@vouch/audit';
import {
  createLedger,
  type Database,
  type Ledger,
  logOrigin,
  merkleAppendHook,
  OPERATOR_ACTOR,
  signLogCheckpoint,
  storeCosignatures,
} from '@vouch/ledger';
import { testBackends } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from '../app';
import { createKeyStore } from '../auth/key-store';

const keys = generateNoteKeys('vouch.test');
const witness = generateCosignerKeys('witness.test/w1');
const stranger = generateCosignerKeys('witness.test/stranger');
const signing = {
  origin: (log: string) => logOrigin('vouch.test', log),
  signers: [parseSignerKey(keys.signerKey)],
};

let database: Database;
let ledger: Ledger;
let app: VouchApp;
let auditor: string;
let gateway: string;
let limited: string;
let ordersOnly: string;
const events: StoredEvent[] = [];

const hexBytes = (hex: string) => Uint8Array.from(Buffer.from(hex, 'hex'));

// biome-ignore lint/suspicious/noExplicitAny: test reads of JSON answers of several shapes
type Answer = any;

async function get(path: string, key: string, headers: Record<string, string> = {}) {
  const response = await app.request(path, { headers: { authorization: `Bearer ${key}`, ...headers } });
  return {
    status: response.status,
    response,
    body: (await response
      .clone()
      .json()
      .catch(() => null)) as Answer,
  };
}

beforeAll(async () => {
  database = await testBackends()[0]!.open();
  ledger = createLedger(database, { afterAppend: [merkleAppendHook] });
  const store = createKeyStore(ledger);
  app = createApp({ ledger, keys: store, witnessKeys: [witness.verifierKey] });
  const issue = async (roles: ('auditor' | 'gateway')[], logs: string[] | null = null) =>
    (await store.create({ identity: 'user:t', roles, logs, createdBy: OPERATOR_ACTOR })).secret;
  auditor = await issue(['auditor']);
  gateway = await issue(['gateway']);
  limited = await issue(['auditor'], ['other']);
  ordersOnly = await issue(['auditor'], ['orders']);
  for (let i = 1; i <= 7; i++) {
    events.push(
      await ledger.append({ log: 'orders', kind: 'note', entity: `n${i}`, actor: 'agent:a', payload: { i } }),
    );
    if (i === 3 || i === 7) await signLogCheckpoint(database, { log: 'orders', ...signing });
  }
});
afterAll(async () => {
  await ledger.close();
  await database.close();
});

describe('transparency routes', () => {
  describe('GET /v1/logs/{log}/checkpoint', () => {
    it('answers the latest checkpoint, whose note verifies under the log key', async () => {
      const { status, body } = await get('/v1/logs/orders/checkpoint', auditor);
      expect(status).toBe(200);
      expect(body).toMatchObject({ log: 'orders', origin: 'vouch.test/orders', tree_size: 7 });
      const opened = openCheckpoint(body.note, {
        verifiers: [keys.verifierKey],
        origin: 'vouch.test/orders',
      });
      expect(opened.ok && Buffer.from(opened.checkpoint.rootHash).toString('hex')).toBe(body.root_hash);
    });

    it('answers the bare signed note for Accept: text/plain', async () => {
      const { response } = await get('/v1/logs/orders/checkpoint', auditor, { accept: 'text/plain' });
      expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
      const note = await response.text();
      expect(openCheckpoint(note, { verifiers: [keys.verifierKey] }).ok).toBe(true);
    });

    it('answers 404 NOT_FOUND for a log without checkpoints', async () => {
      await ledger.append({ log: 'unsigned', kind: 'note', entity: 'x', actor: 'user:t', payload: {} });
      const { status, body } = await get('/v1/logs/unsigned/checkpoint', auditor);
      expect([status, body.error.code]).toEqual([404, 'NOT_FOUND']);
    });

    it.each([
      '/v1/logs/no-such-log/checkpoint',
      '/v1/logs/no-such-log/checkpoints/3',
      '/v1/logs/no-such-log/proofs/inclusion?seq=1',
      '/v1/logs/no-such-log/proofs/inclusion?seq=1&tree_size=2',
      '/v1/logs/no-such-log/proofs/consistency?first=1&second=2',
    ])('answers 404 LOG_NOT_FOUND for a log id nothing is stored under: %s', async (path) => {
      const { status, body } = await get(path, auditor);
      expect([status, body.error.code]).toEqual([404, 'LOG_NOT_FOUND']);
    });

    it('refuses a key without the auditor role with 403 ROLE_FORBIDDEN', async () => {
      const { status, body } = await get('/v1/logs/orders/checkpoint', gateway);
      expect([status, body.error.code]).toEqual([403, 'ROLE_FORBIDDEN']);
    });

    it('refuses a key limited to other logs with 403 LOG_FORBIDDEN', async () => {
      const { status, body } = await get('/v1/logs/orders/checkpoint', limited);
      expect([status, body.error.code]).toEqual([403, 'LOG_FORBIDDEN']);
    });
  });

  describe('GET /v1/logs/{log}/checkpoints/{tree_size}', () => {
    it('answers the checkpoint at that size, or 404 NOT_FOUND', async () => {
      const { body } = await get('/v1/logs/orders/checkpoints/3', auditor);
      expect(body).toMatchObject({ tree_size: 3 });
      const missing = await get('/v1/logs/orders/checkpoints/4', auditor);
      expect([missing.status, missing.body.error.code]).toEqual([404, 'NOT_FOUND']);
    });
  });

  describe('GET /v1/logs/{log}/proofs/inclusion', () => {
    it('answers a proof that verifies against the latest checkpoint by default', async () => {
      const checkpoint = (await get('/v1/logs/orders/checkpoint', auditor)).body;
      for (const event of events) {
        const { body } = await get(`/v1/logs/orders/proofs/inclusion?seq=${event.seq}`, auditor);
        expect(body).toMatchObject({ seq: event.seq, leaf_index: event.seq - 1, tree_size: 7 });
        const proof = (body.proof as string[]).map(hexBytes);
        expect(
          verifyInclusion(eventLeafHash(event.hash), event.seq - 1, 7, proof, hexBytes(checkpoint.root_hash)),
        ).toBe(true);
      }
    });

    it('answers a proof in an older tree given its size', async () => {
      const old = (await get('/v1/logs/orders/checkpoints/3', auditor)).body;
      const { body } = await get('/v1/logs/orders/proofs/inclusion?seq=2&tree_size=3', auditor);
      const proof = (body.proof as string[]).map(hexBytes);
      expect(verifyInclusion(eventLeafHash(events[1]!.hash), 1, 3, proof, hexBytes(old.root_hash))).toBe(
        true,
      );
    });

    it.each([
      ['seq=8&tree_size=7', 400, 'INVALID_REQUEST'],
      ['seq=0', 400, 'INVALID_REQUEST'],
      ['seq=2&tree_size=9', 404, 'NOT_FOUND'],
      ['tree_size=3', 400, 'INVALID_REQUEST'],
    ])('answers %s with %i %s', async (query, status, code) => {
      const answer = await get(`/v1/logs/orders/proofs/inclusion?${query}`, auditor);
      expect([answer.status, answer.body.error.code]).toEqual([status, code]);
    });
  });

  describe('GET /v1/logs/{log}/proofs/consistency', () => {
    it('answers a proof that the latest tree extends an older checkpoint', async () => {
      const old = (await get('/v1/logs/orders/checkpoints/3', auditor)).body;
      const now = (await get('/v1/logs/orders/checkpoint', auditor)).body;
      const { body } = await get('/v1/logs/orders/proofs/consistency?first=3', auditor);
      expect(body).toMatchObject({ first: 3, second: 7 });
      const proof = (body.proof as string[]).map(hexBytes);
      expect(verifyConsistency(3, 7, proof, hexBytes(old.root_hash), hexBytes(now.root_hash))).toBe(true);
    });

    it.each([
      ['first=5&second=4', 400, 'INVALID_REQUEST'],
      ['first=0&second=4', 400, 'INVALID_REQUEST'],
      ['first=2&second=8', 404, 'NOT_FOUND'],
    ])('answers %s with %i %s', async (query, status, code) => {
      const answer = await get(`/v1/logs/orders/proofs/consistency?${query}`, auditor);
      expect([answer.status, answer.body.error.code]).toEqual([status, code]);
    });
  });
});

describe('POST /v1/logs/{log}/checkpoints/{tree_size}/cosignatures', () => {
  const post = (path: string, key: string, body: unknown) =>
    app.request(path, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const noteAt = async (size: number) =>
    ((await get(`/v1/logs/orders/checkpoints/${size}`, auditor)).body as Answer).note as string;

  describe('when a configured witness cosigns the checkpoint at that size', () => {
    it('keeps the line and serves it with the checkpoint from then on, as JSON and as text', async () => {
      const note = await noteAt(3);
      const line = parseCosignerSignerKey(witness.signerKey).cosign(note, 1_700_000_000);
      const response = await post('/v1/logs/orders/checkpoints/3/cosignatures', auditor, {
        cosignatures: [line],
      });
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ accepted: 1, stored: 1, note: note + line });
      const served = await noteAt(3);
      expect(verifyCosignatures(served, { witnesses: [witness.verifierKey], threshold: 1 }).ok).toBe(true);
      expect(openCheckpoint(served, { verifiers: [keys.verifierKey] }).ok).toBe(true);
      const text = await get('/v1/logs/orders/checkpoints/3', auditor, { accept: 'text/plain' });
      expect(await text.response.text()).toBe(note + line);
      // Handing it in again keeps one copy.
      const again = await post('/v1/logs/orders/checkpoints/3/cosignatures', auditor, {
        cosignatures: [line],
      });
      expect(await again.json()).toMatchObject({ accepted: 1, stored: 0 });
    });
  });

  describe('when a line is not by a configured witness, or is for another checkpoint', () => {
    it('refuses the request with 400 INVALID_REQUEST, says which line, and keeps nothing', async () => {
      const note = await noteAt(7);
      const unknown = parseCosignerSignerKey(stranger.signerKey).cosign(note, 5);
      const moved = parseCosignerSignerKey(witness.signerKey).cosign(await noteAt(3), 5);
      const good = parseCosignerSignerKey(witness.signerKey).cosign(note, 5);
      const response = await post('/v1/logs/orders/checkpoints/7/cosignatures', auditor, {
        cosignatures: [good, unknown, moved],
      });
      expect(response.status).toBe(400);
      const body = (await response.json()) as Answer;
      expect(body.error.code).toBe('INVALID_REQUEST');
      expect(body.error.details.refused.map((r: Answer) => r.index)).toEqual([1, 2]);
      // Not even the good line was kept: the served checkpoint is the one signed by the log alone.
      expect(await noteAt(7)).toBe(note);
    });
  });

  describe('when the caller may not hand in cosignatures for that log', () => {
    it('refuses a gateway key (403) and an auditor key limited to other logs', async () => {
      const note = await noteAt(7);
      const line = parseCosignerSignerKey(witness.signerKey).cosign(note, 5);
      expect(
        (await post('/v1/logs/orders/checkpoints/7/cosignatures', gateway, { cosignatures: [line] })).status,
      ).toBe(403);
      expect(
        (await post('/v1/logs/orders/checkpoints/7/cosignatures', limited, { cosignatures: [line] })).status,
      ).toBe(403);
    });
  });

  describe('when there is no checkpoint at that size', () => {
    it('answers 404 NOT_FOUND', async () => {
      const response = await post('/v1/logs/orders/checkpoints/5/cosignatures', auditor, {
        cosignatures: ['\u2014 x y'],
      });
      expect(response.status).toBe(404);
    });
  });
});

describe('GET /v1/logs/{log}/bundle', () => {
  const bundleOf = async (path: string, key = auditor) => {
    const response = await app.request(path, { headers: { authorization: `Bearer ${key}` } });
    return { status: response.status, text: await response.text() };
  };
  const lines = (text: string) =>
    (async function* () {
      yield* splitLines(
        (async function* () {
          yield text;
        })(),
      );
    })();

  describe('when an auditor asks for the bundle up to a stored checkpoint', () => {
    it('streams a vouch-bundle that verifies offline, ending at that checkpoint with its cosignatures', async () => {
      const { status, text } = await bundleOf('/v1/logs/orders/bundle?tree_size=3');
      expect(status).toBe(200);
      const report = await verifyBundle(lines(text), { verifiers: [keys.verifierKey] });
      expect(report).toMatchObject({ ok: true, checked: 3, checkpoint: { treeSize: 3 } });
      // The cosignature handed in above travels with the checkpoint.
      const last = JSON.parse(text.trim().split('\n').at(-1)!) as { checkpoint: string };
      expect(verifyCosignatures(last.checkpoint, { witnesses: [witness.verifierKey], threshold: 1 }).ok).toBe(
        true,
      );
    });

    it('ends at the latest checkpoint by default', async () => {
      const { text } = await bundleOf('/v1/logs/orders/bundle');
      expect(await verifyBundle(lines(text), { verifiers: [keys.verifierKey] })).toMatchObject({
        ok: true,
        checked: 7,
      });
    });
  });

  describe('when a bundle of another log is read', () => {
    it("carries the system log's keys for a key that may read system, verified as a bundle of its own; none for a key limited to the log", async () => {
      await signLogCheckpoint(database, { log: 'system', ...signing });
      const header = (text: string) => text.slice(0, text.indexOf('\n'));
      const options = { verifiers: [keys.verifierKey], kinds: ['api_key.created'] };
      const full = await verifySystemPart(header((await bundleOf('/v1/logs/orders/bundle')).text), options);
      expect(full.status).toBe('verified');
      expect(full.status === 'verified' && full.events.map((e) => e.kind)).toEqual(
        Array(4).fill('api_key.created'),
      );
      const { status, text } = await bundleOf('/v1/logs/orders/bundle', ordersOnly);
      expect(status).toBe(200);
      expect(await verifySystemPart(header(text), options)).toMatchObject({ status: 'absent' });
      expect(await verifyBundle(lines(text), { verifiers: [keys.verifierKey] })).toMatchObject({ ok: true });
    });
  });

  describe('when no checkpoint is stored at that size, or the key may not read the log', () => {
    it("answers 404 for a size without a checkpoint, 403 for a gateway or another log's auditor", async () => {
      expect((await bundleOf('/v1/logs/orders/bundle?tree_size=5')).status).toBe(404);
      expect((await bundleOf('/v1/logs/orders/bundle', gateway)).status).toBe(403);
      expect((await bundleOf('/v1/logs/orders/bundle', limited)).status).toBe(403);
      expect((await bundleOf('/v1/logs/nope/bundle')).status).toBe(404);
    });
  });
});

// Last in the file: it raises the integrity alarm of the app the tests above share.
describe('a cosignature line written into the table behind the server', () => {
  it('is never served, raises COSIGNATURE_MISMATCH, and a line of a key no longer configured is only left out', async () => {
    const note = ((await get('/v1/logs/orders/checkpoints/7', auditor)).body as Answer).note as string;
    // What the runtime role can INSERT: a line in the configured witness's name that signs
    // another checkpoint, taking that witness's place at size 7, and a stranger's line.
    const older = ((await get('/v1/logs/orders/checkpoints/3', auditor)).body as Answer).note as string;
    const forged = parseCosignerSignerKey(witness.signerKey).cosign(older, 9);
    const foreign = parseCosignerSignerKey(stranger.signerKey).cosign(note, 9);
    const row = (line: string, name: string) => ({
      log: 'orders',
      treeSize: 7,
      witness: name,
      keyId: line.split(' ')[2]!.slice(0, 8),
      line,
      createdAt: new Date().toISOString(),
    });
    await storeCosignatures(database, [
      row(forged, 'witness.test/w1'),
      row(foreign, 'witness.test/stranger'),
    ]);
    expect(ledger.integrityAlarm.raised).toBe(false);

    expect(((await get('/v1/logs/orders/checkpoints/7', auditor)).body as Answer).note).toBe(note);
    const tiles = await get('/tlog/orders/checkpoint', auditor);
    expect(await tiles.response.text()).toBe(note);
    expect(ledger.integrityAlarm.alarms()).toEqual([
      expect.objectContaining({
        code: 'COSIGNATURE_MISMATCH',
        log: 'orders',
        seq: 7,
        table: 'checkpoint_cosignatures',
      }),
    ]);
  });
});
