import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { journalScopeOf, openFileJournal } from './call-journal';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'vouch-journal-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The id of a process that has exited: a gateway that stopped. */
function deadPid(): number {
  return Number(
    spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString(),
  );
}

const claim = (key: string) => ({
  key,
  proposal_id: `prp_${key}`,
  payload_hash: 'h'.repeat(64),
  approval_request_id: null,
});

describe('openFileJournal', () => {
  describe('when the gateway that wrote a journal has stopped', () => {
    it('hands over its unsettled claims as in doubt and its open calls, then removes its file', () => {
      const before = openFileJournal(dir, 'scope', deadPid());
      before.journal.claimed(claim('a'));
      before.journal.claimed(claim('b'));
      before.journal.settled('b');
      before.journal.carryOn('base-1', 'a');
      before.journal.carryOn('base-2', 'c');
      before.journal.end('base-2', 'c');

      const after = openFileJournal(dir, 'scope');
      expect(after.inDoubt).toEqual([claim('a')]);
      expect(after.journal.continuation('base-1')).toBe('a');
      expect(after.journal.continuation('base-2')).toBeUndefined();
      expect(readdirSync(dir)).toEqual([`scope.${process.pid}.jsonl`]);
    });

    it('skips a line cut short by a crash', () => {
      const before = openFileJournal(dir, 'scope', deadPid());
      before.journal.claimed(claim('a'));
      const [file] = readdirSync(dir);
      appendFileSync(join(dir, file!), '{"op":"settle","ke');
      expect(openFileJournal(dir, 'scope').inDoubt).toEqual([claim('a')]);
    });
  });

  describe('when another gateway of the same scope still runs', () => {
    it('leaves its journal alone', () => {
      // The parent of this test process runs: its journal is not taken over.
      const running = openFileJournal(dir, 'scope', process.ppid);
      running.journal.claimed(claim('a'));
      const mine = openFileJournal(dir, 'scope');
      expect(mine.inDoubt).toEqual([]);
      expect(readdirSync(dir)).toEqual([`scope.${process.ppid}.jsonl`]);
    });
  });

  describe('when a journal belongs to another scope', () => {
    it('is not taken over', () => {
      openFileJournal(dir, 'other', deadPid()).journal.claimed(claim('a'));
      expect(openFileJournal(dir, 'scope').inDoubt).toEqual([]);
    });
  });

  describe('when many calls come and go', () => {
    it('keeps the file about as small as what is still open', () => {
      const { journal } = openFileJournal(dir, 'scope');
      journal.carryOn('waiting', 'k-waiting');
      for (let i = 0; i < 2000; i++) {
        journal.claimed(claim(String(i)));
        journal.settled(String(i));
      }
      const lines = readFileSync(join(dir, `scope.${process.pid}.jsonl`), 'utf8')
        .trim()
        .split('\n');
      expect(lines.length).toBeLessThan(300);
    });
  });

  describe('when nothing is left to remember', () => {
    it('leaves no file behind', () => {
      const { journal } = openFileJournal(dir, 'scope');
      journal.carryOn('base', 'k');
      journal.claimed(claim('k'));
      expect(readdirSync(dir)).toEqual([`scope.${process.pid}.jsonl`]);
      journal.settled('k');
      journal.end('base', 'k');
      expect(readdirSync(dir)).toEqual([]);
    });
  });
});

describe('journalScopeOf', () => {
  describe('when the key differs', () => {
    it('names another scope, without the key in it', () => {
      const a = journalScopeOf({ vouchUrl: 'http://v', apiKey: 'vch_secret_a' });
      expect(journalScopeOf({ vouchUrl: 'http://v', apiKey: 'vch_secret_b' })).not.toBe(a);
      expect(journalScopeOf({ vouchUrl: 'http://v', apiKey: 'vch_secret_a', session: 's' })).not.toBe(a);
      expect(a).not.toContain('secret');
    });
  });
});
