import { createHash } from 'node:crypto';
import {
  appendFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';

/** An execution the gateway claimed in Vouch and is about to run (or runs): in doubt until settled. */
export interface JournalClaim {
  key: string;
  proposal_id: string;
  payload_hash: string;
  approval_request_id: string | null;
}

/**
 * What the gateway must not forget across a crash: the calls it claimed and has not seen
 * recorded (in doubt: the tool may have run), and the calls an identical call goes on with
 * (waiting for an approval, or in doubt). It holds hashes and ids only, never arguments.
 */
export interface CallJournal {
  /** The key an identical call goes on under, for the action named by `base`. */
  continuation(base: string): string | undefined;
  /** An identical call goes on under `key` (until {@link CallJournal.end}). */
  carryOn(base: string, key: string): void;
  /** The call under `key` is over: the next identical call is a new one. */
  end(base: string, key: string): void;
  /** Written right before the upstream is asked: a crash from here on leaves the call in doubt. */
  claimed(claim: JournalClaim): void;
  /** The call's observation is recorded in Vouch: no longer in doubt. */
  settled(key: string): void;
}

type Entry =
  | { op: 'carry'; base: string; key: string }
  | { op: 'end'; base: string; key: string }
  | ({ op: 'claim' } & JournalClaim)
  | { op: 'settle'; key: string };

/** The journal's state, rebuilt from its entries. */
interface JournalState {
  carried: Map<string, string>;
  claims: Map<string, JournalClaim>;
}

function apply(state: JournalState, entry: Entry): void {
  switch (entry.op) {
    case 'carry':
      state.carried.set(entry.base, entry.key);
      break;
    case 'end':
      if (state.carried.get(entry.base) === entry.key) state.carried.delete(entry.base);
      break;
    case 'claim': {
      const { op: _, ...claim } = entry;
      state.claims.set(entry.key, claim);
      break;
    }
    case 'settle':
      state.claims.delete(entry.key);
      break;
  }
}

function journalOver(state: JournalState, write: (entry: Entry) => void): CallJournal {
  const record = (entry: Entry) => {
    apply(state, entry);
    write(entry);
  };
  return {
    continuation: (base) => state.carried.get(base),
    carryOn: (base, key) => {
      if (state.carried.get(base) !== key) record({ op: 'carry', base, key });
    },
    end: (base, key) => {
      if (state.carried.get(base) === key) record({ op: 'end', base, key });
    },
    claimed: (claim) => record({ op: 'claim', ...claim }),
    settled: (key) => {
      if (state.claims.has(key)) record({ op: 'settle', key });
    },
  };
}

/** A journal that lives as long as the process (no `journal` directory). */
export function createMemoryJournal(): CallJournal {
  return journalOver({ carried: new Map(), claims: new Map() }, () => {});
}

/** An opened file journal, with what the journals of stopped gateways left in doubt. */
export interface OpenedJournal {
  journal: CallJournal;
  /** Claims of gateways that stopped without settling them: record each as `unknown`. */
  inDoubt: JournalClaim[];
  /** Forget in-doubt claims once they are recorded. */
  recorded(keys: readonly string[]): void;
}

/**
 * Open this process's journal in `dir`: one file per process (`<scope>.<pid>.jsonl`), so
 * two gateways never write one file. The files of `scope` whose process no longer runs are
 * taken over: their open calls go on here, their unsettled claims come back as `inDoubt`.
 * A file whose process still runs is left alone, so a running gateway's calls are never
 * declared in doubt by another.
 *
 * `scope` names whose calls these are (one Vouch identity at one server); only files of the
 * same scope are taken over. Entries are appended as they happen; a crash of the process
 * (kill -9) loses none, a crash of the machine may lose the last ones. The file exists only
 * while there is something to remember.
 */
export function openFileJournal(dir: string, scope: string, pid = process.pid): OpenedJournal {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const own = join(dir, `${scope}.${pid}.jsonl`);
  const state: JournalState = { carried: new Map(), claims: new Map() };
  const taken: string[] = [];
  for (const file of readdirSync(dir)) {
    const match = /^(.+)\.(\d+)\.jsonl$/.exec(file);
    if (!match || match[1] !== scope) continue;
    const owner = Number(match[2]);
    if (owner !== pid && isRunning(owner)) continue;
    for (const entry of readEntries(join(dir, file))) apply(state, entry);
    taken.push(join(dir, file));
  }
  const inDoubt = [...state.claims.values()];
  let written = 0;
  const rewrite = () => {
    const lines = [
      ...[...state.carried].map(([base, key]) => ({ op: 'carry', base, key })),
      ...[...state.claims.values()].map((claim) => ({ op: 'claim', ...claim })),
    ].map((entry) => `${JSON.stringify(entry)}\n`);
    writeFileSync(`${own}.tmp`, lines.join(''), { mode: 0o600 });
    renameSync(`${own}.tmp`, own);
    written = lines.length;
  };
  // Taken over before the others are removed: a crash in between loses nothing.
  if (state.carried.size > 0 || state.claims.size > 0) rewrite();
  for (const path of taken) if (path !== own) rmSync(path, { force: true });
  const journal = journalOver(state, (entry) => {
    // Nothing left to remember: no file, so a gateway that stops idle leaves none behind.
    if (state.carried.size === 0 && state.claims.size === 0) {
      rmSync(own, { force: true });
      written = 0;
      return;
    }
    appendFileSync(own, `${JSON.stringify(entry)}\n`, { mode: 0o600 });
    written++;
    // Keep the file about as small as its state: settled calls need not be remembered.
    if (written > 2 * (state.carried.size + state.claims.size) + 256) rewrite();
  });
  return {
    journal,
    inDoubt,
    recorded: (keys) => {
      for (const key of keys) journal.settled(key);
    },
  };
}

/** The journal scope of one Vouch identity at one server: a digest, never the key itself. */
export function journalScopeOf(input: { vouchUrl: string; apiKey: string; session?: string }): string {
  const keyDigest = createHash('sha256').update(input.apiKey).digest('hex');
  return createHash('sha256')
    .update(JSON.stringify([input.vouchUrl, keyDigest, input.session ?? null]))
    .digest('hex')
    .slice(0, 24);
}

function readEntries(path: string): Entry[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  const entries: Entry[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      entries.push(JSON.parse(line) as Entry);
    } catch {
      // A line cut short by a crash: what it said never happened for sure.
    }
  }
  return entries;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
