import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import {
  CompactRange,
  encodeBundle,
  eventLeafHash,
  generateNoteKeys,
  parseSignerKey,
  type StoredEvent,
  signCheckpoint,
  splitLines,
} from '@vouch/audit';

/** The checkpoint key of every benchmark bundle (generated per run: nothing secret). */
export interface BundleKeys {
  origin: string;
  verifierKey: string;
  signerKey: string;
}

export function bundleKeys(log: string): BundleKeys {
  const origin = `bench.vouch.example/log/${log}`;
  return { origin, ...generateNoteKeys(origin) };
}

/**
 * Write a vouch-bundle/1 of `events` to `path` (`events` is iterated twice: once for the
 * Merkle root the checkpoint signs, once to stream the lines).
 */
export async function writeBundle(options: {
  path: string;
  log: string;
  keys: BundleKeys;
  events: () => Iterable<StoredEvent>;
  /** Called with each event as it is written (to load the same rows elsewhere). */
  onEvent?: (event: StoredEvent) => Promise<void> | undefined;
}): Promise<{ events: number; bytes: number }> {
  const range = new CompactRange();
  for (const event of options.events()) range.append(eventLeafHash(event.hash));
  const treeSize = range.size;
  const checkpoint = signCheckpoint({ origin: options.keys.origin, treeSize, rootHash: range.root() }, [
    parseSignerKey(options.keys.signerKey),
  ]);
  const out = createWriteStream(options.path);
  let bytes = 0;
  const onEvent = options.onEvent;
  let hooked: Promise<void> | undefined;
  const events = options.events();
  const source = onEvent
    ? (function* tee() {
        for (const event of events) {
          hooked = onEvent(event) ?? undefined;
          yield event;
        }
      })()
    : events;
  const lines = encodeBundle({
    log: options.log,
    origin: options.keys.origin,
    treeSize,
    checkpoint,
    events: source,
  });
  for await (const line of lines) {
    if (hooked) await hooked;
    const text = `${line}\n`;
    bytes += Buffer.byteLength(text);
    if (!out.write(text)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return { events: treeSize, bytes };
}

/** The lines of a bundle file, read in large chunks (as `vouch verify` would). */
export function bundleLines(path: string): AsyncGenerator<string> {
  return splitLines(createReadStream(path, { encoding: 'utf8', highWaterMark: 1 << 20 }));
}
