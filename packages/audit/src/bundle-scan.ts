import { BUNDLE_EVENT_FIELDS, BUNDLE_FORMATS, type BundleHeader } from './bundle-format';
import type { StoredEvent } from './event-hash';
import { isHex64 } from './hex64';
import { SubtreeStack } from './merkle-subtree-stack';
import { type ChainChecker, type ChainHead, createChainChecker } from './verify-events';

// The loop inside `verifyBundle`: every line after the header, one at a time, with the state
// that carries from line to line made explicit, so that a part of a bundle can be checked on
// its own (a worker thread) from the state the lines before it leave.

/** One failure of a bundle (see `BundleFailureCode` in bundle-verify). */
export interface ScanFailure {
  seq: number;
  code: string;
  message: string;
  [detail: string]: unknown;
}

/** Keeps the first `max` failures in order and counts the rest. */
export class FailureList<F> {
  readonly kept: F[] = [];
  #count = 0;

  constructor(readonly max: number) {}

  get count(): number {
    return this.#count;
  }

  readonly add = (failure: F): void => {
    this.#count++;
    if (this.kept.length < this.max) this.kept.push(failure);
  };

  /** Count `n` more failures that were not kept (capped elsewhere). */
  countOmitted(n: number): void {
    this.#count += n;
  }

  get omitted(): number {
    return this.count - this.kept.length;
  }
}

/** What the lines read so far leave for the next one. */
export interface ScanState {
  /** The number of the last line read (the header is line 1). */
  lineNumber: number;
  /** Event lines read. */
  events: number;
  /** The last event line's seq and hash. */
  previous: ChainHead | null;
  /** The last event line's `at`; null before any, or when a part's start is guessed (unknown). */
  previousAt: string | null;
  /** The checkpoint line's note, once read: every later line must be empty. */
  checkpointNote: string | undefined;
}

/** The state right after the header line. */
export const AFTER_HEADER: ScanState = {
  lineNumber: 1,
  events: 0,
  previous: null,
  previousAt: null,
  checkpointNote: undefined,
};

export function sameScanState(a: ScanState, b: ScanState): boolean {
  return (
    a.lineNumber === b.lineNumber &&
    a.events === b.events &&
    a.checkpointNote === b.checkpointNote &&
    a.previous?.seq === b.previous?.seq &&
    a.previous?.hash === b.previous?.hash &&
    // A guessed start does not know the time before it: the join checks that seam itself.
    (a.previousAt === null || b.previousAt === null || a.previousAt === b.previousAt)
  );
}

export interface BundleScanOptions<F extends ScanFailure> {
  /** The log every event must belong to. */
  log: string;
  maxFailures: number;
  /** Where malformed lines (and what `onEvent` reports) go; the chain checker keeps its own. */
  failures: FailureList<F>;
  expectHead?: ChainHead;
  onProgress?: (checked: number) => void;
  progressEvery?: number;
  onEvent?: (event: StoredEvent, fail: (failure: F) => void) => void;
  /** Keep the Merkle root at this many events (`trustedRoot`); only for a scan from the header. */
  trustedSize?: number;
  /** A scan of one part of a bundle: its caller matches erasures with redactions across parts. */
  deferRedactions?: boolean;
}

/** The lines after a bundle's header, checked one at a time from `start`. */
export class BundleScan<F extends ScanFailure = ScanFailure> {
  readonly chain: ChainChecker;
  readonly merkle: SubtreeStack;
  /** The Merkle root over the first `trustedSize` events, once read. */
  trustedRoot: Uint8Array | undefined;
  readonly #options: BundleScanOptions<F>;
  #lineNumber: number;
  #events: number;
  #previous: ChainHead | null;
  #previousAt: string | null;
  #checkpointNote: string | undefined;

  constructor(start: ScanState, options: BundleScanOptions<F>) {
    this.#options = options;
    this.#lineNumber = start.lineNumber;
    this.#events = start.events;
    this.#previous = start.previous;
    this.#previousAt = start.previousAt;
    this.#checkpointNote = start.checkpointNote;
    this.merkle = new SubtreeStack(start.events);
    this.chain = createChainChecker({
      log: options.log,
      after: start.previous ?? undefined,
      afterAt: start.previousAt ?? undefined,
      expectHead: options.expectHead,
      onProgress: options.onProgress,
      progressEvery: options.progressEvery,
      maxFailures: options.maxFailures,
      deferRedactions: options.deferRedactions,
    });
  }

  state(): ScanState {
    return {
      lineNumber: this.#lineNumber,
      events: this.#events,
      previous: this.#previous,
      previousAt: this.#previousAt,
      checkpointNote: this.#checkpointNote,
    };
  }

  line(line: string): void {
    const lineNumber = ++this.#lineNumber;
    if (this.#checkpointNote !== undefined) {
      // Splitting a text that ends in a newline leaves an empty last line: allowed.
      if (line !== '') this.#malformed(`line ${lineNumber} follows the checkpoint line`);
      return;
    }
    const parsed = parseLine(line);
    if (parsed.kind === 'checkpoint') {
      this.#checkpointNote = parsed.note;
    } else if (parsed.kind === 'malformed') {
      this.#malformed(`line ${lineNumber}: ${parsed.reason}`);
    } else {
      const { event } = parsed;
      this.chain.check(event);
      this.#options.onEvent?.(event, this.#options.failures.add);
      this.#events++;
      this.#previous = { seq: event.seq, hash: event.hash };
      this.#previousAt = event.at;
      // The leaf is the stored hash as it is: if the event's fields do not hash to it, the
      // chain check says so; the Merkle check says whether this is what was checkpointed.
      this.merkle.appendEventHash(event.hash);
      if (this.#events === this.#options.trustedSize) this.trustedRoot = this.merkle.root();
    }
  }

  #malformed(message: string): void {
    const failure: ScanFailure = {
      seq: this.#events + 1,
      code: 'BUNDLE_MALFORMED',
      message,
      line: this.#lineNumber,
    };
    this.#options.failures.add(failure as F);
  }
}

/** The header line, or undefined when it is not a vouch-bundle/1 or /2 header. */
export function parseHeader(line: string): BundleHeader | undefined {
  const value = parseJson(line);
  if (!isObject(value)) return undefined;
  const { format, log, origin, treeSize } = value;
  if (
    !(BUNDLE_FORMATS as readonly unknown[]).includes(format) ||
    !isNonEmptyString(log) ||
    !isNonEmptyString(origin)
  )
    return undefined;
  if (typeof treeSize !== 'number' || !Number.isSafeInteger(treeSize) || treeSize < 0) return undefined;
  return value as BundleHeader;
}

export type ParsedLine =
  | { kind: 'event'; event: StoredEvent }
  | { kind: 'checkpoint'; note: string }
  | { kind: 'malformed'; reason: string };

const TEXT_FIELDS = ['log', 'kind', 'entity', 'actor', 'at', 'payload'] as const;
const HASH_FIELDS = ['payload_hash', 'prev_hash', 'hash'] as const;
const LONE_SURROGATE = /\p{Surrogate}/u;
/** `isWellFormed` (ES2024, Node 20) where the runtime has it: a scan, not a regex match. */
const isWellFormedText: (text: string) => boolean =
  typeof (String.prototype as Partial<WellFormed>).isWellFormed === 'function'
    ? (text) => (text as unknown as WellFormed).isWellFormed()
    : (text) => !LONE_SURROGATE.test(text);
interface WellFormed {
  isWellFormed(): boolean;
}

export function parseLine(line: string): ParsedLine {
  const value = parseJson(line);
  if (!isObject(value)) return { kind: 'malformed', reason: 'not a JSON object' };
  const members = eventMembers(value);
  if (members === undefined) {
    if (!Object.hasOwn(value, 'seq')) {
      const keys = Object.keys(value);
      if (keys.length === 1 && keys[0] === 'checkpoint') {
        return typeof value.checkpoint === 'string'
          ? { kind: 'checkpoint', note: value.checkpoint }
          : { kind: 'malformed', reason: 'checkpoint must be the note text' };
      }
    }
    return {
      kind: 'malformed',
      reason: `an event line has exactly the members ${BUNDLE_EVENT_FIELDS.join(', ')}, and with a field commitment also ${FIELD_EVENT_EXTRA.join(', ')}`,
    };
  }
  if (members === 'committed') {
    if (typeof value.commitment !== 'string')
      return { kind: 'malformed', reason: 'commitment must be a string' };
    if (!isFieldOpenings(value.fields)) {
      return { kind: 'malformed', reason: 'fields must be an object of {salt, value} openings' };
    }
  }
  const { seq } = value;
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1) {
    return { kind: 'malformed', reason: 'seq must be a positive integer' };
  }
  // Member by member rather than in a loop over their names: a property read the engine
  // can specialize, on every line.
  // A lone surrogate (from a \ud800 escape) is not text the ledger could have hashed.
  if (!isUnicodeText(value.log)) return notText('log');
  if (!isUnicodeText(value.kind)) return notText('kind');
  if (!isUnicodeText(value.entity)) return notText('entity');
  if (!isUnicodeText(value.actor)) return notText('actor');
  if (!isUnicodeText(value.at)) return notText('at');
  if (!isUnicodeText(value.payload)) return notText('payload');
  if (!isHash(value.payload_hash)) return notHash('payload_hash');
  if (!isHash(value.prev_hash)) return notHash('prev_hash');
  if (!isHash(value.hash)) return notHash('hash');
  return { kind: 'event', event: value as unknown as StoredEvent };
}

function isUnicodeText(text: unknown): boolean {
  return typeof text === 'string' && isWellFormedText(text);
}

function isHash(hash: unknown): boolean {
  return typeof hash === 'string' && isHex64(hash);
}

function notText(field: (typeof TEXT_FIELDS)[number]): ParsedLine {
  return { kind: 'malformed', reason: `${field} must be a string of Unicode text` };
}

function notHash(field: (typeof HASH_FIELDS)[number]): ParsedLine {
  return { kind: 'malformed', reason: `${field} must be 64 lowercase hex digits` };
}

/** The members an event line with a field commitment has beside {@link BUNDLE_EVENT_FIELDS}. */
const FIELD_EVENT_EXTRA = ['commitment', 'fields'] as const;
/** An event line's members in the order `encodeBundle` writes them. */
const EVENT_LINE_ORDER: readonly string[] = [...BUNDLE_EVENT_FIELDS, ...FIELD_EVENT_EXTRA];

/**
 * 'plain' when `value` has exactly the members of an event line, 'committed' when exactly
 * those and {@link FIELD_EVENT_EXTRA}, undefined otherwise.
 */
function eventMembers(value: Record<string, unknown>): 'plain' | 'committed' | undefined {
  // The usual line, in the order encodeBundle writes it, is settled in one walk over its
  // keys: for-in gives own keys before inherited ones, so when the last key is own, so are
  // all before it. Any other order or doubt takes the member-by-member check.
  let count = 0;
  let last = '';
  for (const key in value) {
    if (count >= EVENT_LINE_ORDER.length || key !== EVENT_LINE_ORDER[count])
      return eventMembersInAnyOrder(value);
    count++;
    last = key;
  }
  if (!Object.hasOwn(value, last)) return eventMembersInAnyOrder(value);
  if (count === BUNDLE_EVENT_FIELDS.length) return 'plain';
  if (count === EVENT_LINE_ORDER.length) return 'committed';
  return eventMembersInAnyOrder(value);
}

function eventMembersInAnyOrder(value: Record<string, unknown>): 'plain' | 'committed' | undefined {
  const committed = Object.hasOwn(value, 'commitment') || Object.hasOwn(value, 'fields');
  if (!hasExactlyEventFields(value, committed ? FIELD_EVENT_EXTRA : [])) return undefined;
  return committed ? 'committed' : 'plain';
}

function hasExactlyEventFields(value: Record<string, unknown>, extra: readonly string[]): boolean {
  let count = 0;
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    count++;
  }
  if (count !== BUNDLE_EVENT_FIELDS.length + extra.length) return false;
  for (const field of BUNDLE_EVENT_FIELDS) if (!Object.hasOwn(value, field)) return false;
  for (const field of extra) if (!Object.hasOwn(value, field)) return false;
  return true;
}

function isFieldOpenings(fields: unknown): boolean {
  if (!isObject(fields)) return false;
  for (const opening of Object.values(fields)) {
    if (!isObject(opening) || typeof opening.salt !== 'string' || !Object.hasOwn(opening, 'value'))
      return false;
    if (Object.keys(opening).length !== 2) return false;
  }
  return true;
}

function parseJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}
