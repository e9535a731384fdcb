import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  canonicalJson,
  encodeBundle,
  eventHashOf,
  eventLeafHash,
  GENESIS_PREV_HASH,
  generateCosignerKeys,
  generateNoteKeys,
  parseCosignerSignerKey,
  parseSignerKey,
  payloadHashOf,
  type StoredEvent,
  signCheckpoint,
} from '@vouch/audit';
import { CompactRange } from '@vouch/audit/merkle';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runVouch } from '../testing/cli-io';

// A split view: the operator holds the log key and signs two different histories of the same
// log at the same size, showing each to different auditors. Each bundle verifies on its own;
// only cosignatures by witnesses, who saw one history and refuse to cosign another at a size
// they already cosigned, tell them apart.

const ORIGIN = 'audit.example/vouch/orders';
const log = generateNoteKeys(ORIGIN);
const w1 = generateCosignerKeys('witness.example/w1');
const w2 = generateCosignerKeys('witness.example/w2');

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'vouch-verify-witness-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A correctly chained, signed log of 3 events whose payloads say which view they belong to. */
function view(label: string): { events: StoredEvent[]; note: string } {
  const events: StoredEvent[] = [];
  const range = new CompactRange();
  for (let seq = 1; seq <= 3; seq++) {
    const payload = canonicalJson({ view: label, n: seq });
    const unsealed = {
      log: 'orders',
      seq,
      kind: 'note',
      entity: `e${seq}`,
      actor: 'agent:a',
      at: new Date(Date.UTC(2026, 11, 1, 0, 0, seq)).toISOString(),
      payload,
      payload_hash: payloadHashOf(payload),
      prev_hash: events[seq - 2]?.hash ?? GENESIS_PREV_HASH,
      hash: '',
    };
    const event = { ...unsealed, hash: eventHashOf(unsealed) };
    events.push(event);
    range.append(eventLeafHash(event.hash));
  }
  const note = signCheckpoint({ origin: ORIGIN, treeSize: 3, rootHash: range.root() }, [
    parseSignerKey(log.signerKey),
  ]);
  return { events, note };
}

async function writeBundle(name: string, events: StoredEvent[], checkpoint: string): Promise<string> {
  const lines: string[] = [];
  for await (const line of encodeBundle({ log: 'orders', origin: ORIGIN, treeSize: 3, checkpoint, events })) {
    lines.push(line);
  }
  const path = join(root, name);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

const cosign = (note: string, key: string) => parseCosignerSignerKey(key).cosign(note, 1_764_547_200);
const verify = (args: string[]) =>
  runVouch(['verify', ...args, '--public-key', log.verifierKey], { env: {}, cwd: root });
const witnesses = ['--witness', w1.verifierKey, '--witness', w2.verifierKey];

describe('vouch verify --witness --threshold', () => {
  let seen: string;
  let hidden: string;
  let hiddenWithCopiedCosignature: string;

  beforeAll(async () => {
    const a = view('seen by the witnesses');
    const b = view('shown only to one auditor');
    seen = await writeBundle(
      'a.jsonl',
      a.events,
      a.note + cosign(a.note, w1.signerKey) + cosign(a.note, w2.signerKey),
    );
    hidden = await writeBundle('b.jsonl', b.events, b.note);
    // The operator copies the witnesses' lines from the view they cosigned onto the other one.
    const copied = cosign(a.note, w1.signerKey);
    hiddenWithCopiedCosignature = await writeBundle('b-copied.jsonl', b.events, b.note + copied);
  });

  describe('when both views of one log at one size are signed by the log key (a split view)', () => {
    it('accepts each without --witness: the log signature alone cannot tell them apart', async () => {
      expect((await verify(['--bundle', seen])).code).toBe(0);
      expect((await verify(['--bundle', hidden])).code).toBe(0);
    });

    it('accepts the cosigned view and refuses the other with exit 3 NOT_WITNESSED', async () => {
      const accepted = await verify(['--bundle', seen, ...witnesses, '--threshold', '2']);
      expect(accepted.code).toBe(0);
      expect(accepted.out).toContain('cosigned by 2');
      const refused = await verify(['--bundle', hidden, ...witnesses, '--threshold', '1']);
      expect(refused.code).toBe(3);
      expect(refused.out).toContain('NOT_WITNESSED');
    });

    it('refuses the other view carrying a cosignature copied from the witnessed one', async () => {
      const refused = await verify([
        '--bundle',
        hiddenWithCopiedCosignature,
        ...witnesses,
        '--threshold',
        '1',
        '--json',
      ]);
      expect(refused.code).toBe(3);
      expect(JSON.parse(refused.out)).toMatchObject({ ok: true, witnesses: { ok: false, cosignedBy: [] } });
    });
  });

  describe('when a first-time witness (--since --init) is handed a view', () => {
    it('saves the cosigned view, and refuses the unwitnessed one with exit 3 without saving', async () => {
      const good = join(root, 'good.checkpoint');
      const ok = await verify(['--since', good, '--init', '--bundle', seen, ...witnesses, '--json']);
      expect(ok.code).toBe(0);
      expect(JSON.parse(ok.out)).toMatchObject({ status: 'CONSISTENT', cosignedBy: [{}, {}] });
      expect(readFileSync(good, 'utf8')).toContain('witness.example/w2');
      const bad = join(root, 'bad.checkpoint');
      const refused = await verify([
        '--since',
        bad,
        '--init',
        '--bundle',
        hidden,
        ...witnesses,
        '--threshold',
        '1',
        '--json',
      ]);
      expect(refused.code).toBe(3);
      expect(JSON.parse(refused.out)).toMatchObject({ ok: false, status: 'NOT_WITNESSED', saved: null });
      expect(existsSync(bad)).toBe(false);
    });
  });

  describe('when the witness flags cannot work', () => {
    it.each([
      [['--threshold', '3', ...witnesses]],
      [['--threshold', '0', ...witnesses]],
      [['--threshold', '1']],
      [['--witness', log.verifierKey]],
    ])('exits 2 for %j', async (flags) => {
      expect((await verify(['--bundle', seen, ...flags])).code).toBe(2);
    });
  });
});
