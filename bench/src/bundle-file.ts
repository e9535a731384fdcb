import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import {
  BUNDLE_EVENT_FIELDS,
  BUNDLE_FORMAT,
  encodeBundle,
  eventLeafHash,
  generateNoteKeys,
  parseSignerKey,
  type StoredEvent,
  signCheckpoint,
  splitLines,
} from '@vouch/audit';
import { CompactRange } from '@vouch/audit/merkle';

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

/**
 * Write a vouch-bundle/1 in one pass over `events` (`count` of them): the header, the
 * event lines (members in BUNDLE_EVENT_FIELDS order, as encodeBundle writes them) while the
 * Merkle root is built, then the checkpoint signed over that root. For datasets too large
 * to generate twice. `onEvent` sees each event as it is written.
 */
export async function writeBundleOnePass(options: {
  path: string;
  log: string;
  keys: BundleKeys;
  count: number;
  events: Iterable<StoredEvent>;
  onEvent?: (event: StoredEvent) => Promise<void> | undefined;
}): Promise<{ events: number; bytes: number }> {
  const out = createWriteStream(options.path);
  let bytes = 0;
  const write = async (line: string) => {
    const text = `${line}\n`;
    bytes += Buffer.byteLength(text);
    if (!out.write(text)) await once(out, 'drain');
  };
  await write(
    JSON.stringify({
      format: BUNDLE_FORMAT,
      log: options.log,
      origin: options.keys.origin,
      treeSize: options.count,
    }),
  );
  const range = new CompactRange();
  for (const event of options.events) {
    const pending = options.onEvent?.(event);
    if (pending) await pending;
    const line: Record<string, unknown> = {};
    for (const field of BUNDLE_EVENT_FIELDS) line[field] = event[field];
    await write(JSON.stringify(line));
    range.append(eventLeafHash(event.hash));
  }
  if (range.size !== options.count) throw new Error(`expected ${options.count} events, got ${range.size}`);
  const checkpoint = signCheckpoint(
    { origin: options.keys.origin, treeSize: range.size, rootHash: range.root() },
    [parseSignerKey(options.keys.signerKey)],
  );
  await write(JSON.stringify({ checkpoint }));
  out.end();
  await once(out, 'finish');
  return { events: range.size, bytes };
}
