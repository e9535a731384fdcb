import type { ExecuteAction } from '@vouch/client';
import { describe, expect, it } from 'vitest';
import { createMemoryJournal } from './call-journal';
import { agentKeyOf, createCallKeys } from './call-keys';

const write: ExecuteAction = {
  action: 'bank.close_account',
  server_id: 'bank',
  tool_name: 'close_account',
  target: { kind: 'account', id: 'acct-1', env: 'production' },
  arguments: { account: 'acct-1' },
  side_effect: 'irreversible',
};
const read: ExecuteAction = { ...write, tool_name: 'get_balance', side_effect: 'read_only' };

describe('createCallKeys', () => {
  const keysOf = (agent = 'stdio', journal = createMemoryJournal()) => createCallKeys({ agent, journal });

  describe('when an agent makes the same call twice', () => {
    it('gives each call its own key once the first finished', () => {
      const keys = keysOf();
      const first = keys.keyFor(write);
      first.settle('finished');
      expect(keys.keyFor(write).key).not.toBe(first.key);
    });

    it('goes on with a call waiting for an approval, a read too', () => {
      const keys = keysOf();
      for (const action of [write, read]) {
        const first = keys.keyFor(action);
        first.settle('open');
        expect(keys.keyFor(action).key).toBe(first.key);
      }
    });

    it('goes on with a write in doubt, but never with a read in doubt', () => {
      const keys = keysOf();
      const writeCall = keys.keyFor(write);
      writeCall.settle('in_doubt');
      expect(keys.keyFor(write).key).toBe(writeCall.key);
      const readCall = keys.keyFor(read);
      readCall.settle('in_doubt');
      expect(keys.keyFor(read).key).not.toBe(readCall.key);
    });

    it('starts anew after the agent cancelled', () => {
      const keys = keysOf();
      const first = keys.keyFor(write);
      first.settle('cancelled');
      expect(keys.keyFor(write).key).not.toBe(first.key);
    });

    it('goes on with a write that never settled (the gateway died during it)', () => {
      const journal = createMemoryJournal();
      const first = keysOf('stdio', journal).keyFor(write);
      // A new gateway over the same journal: the first call never said how it ended.
      expect(keysOf('stdio', journal).keyFor(write).key).toBe(first.key);
    });
  });

  describe('when two agents make the same call', () => {
    it('never gives them the same key, nor goes on with the other agent’s call', () => {
      const journal = createMemoryJournal();
      const a = keysOf('agent-a', journal).keyFor(write);
      a.settle('open');
      expect(keysOf('agent-b', journal).keyFor(write).key).not.toBe(a.key);
    });

    it('scopes the keys the agents send to each agent', () => {
      const journal = createMemoryJournal();
      const a = keysOf('agent-a', journal).keyFor(write, 'order-17');
      expect(keysOf('agent-a', journal).keyFor(write, 'order-17').key).toBe(a.key);
      expect(keysOf('agent-b', journal).keyFor(write, 'order-17').key).not.toBe(a.key);
    });
  });

  describe('when the agent names its call', () => {
    it('uses its key for a write, whatever the arguments', () => {
      const keys = keysOf();
      const named = keys.keyFor(write, 'k1');
      expect(named.explicit).toBe(true);
      expect(keys.keyFor({ ...write, arguments: { account: 'acct-2' } }, 'k1').key).toBe(named.key);
    });

    it('ignores it for a read, which always reads anew', () => {
      const keys = keysOf();
      const first = keys.keyFor(read, 'k1');
      expect(first.explicit).toBe(false);
      first.settle('finished');
      expect(keys.keyFor(read, 'k1').key).not.toBe(first.key);
    });
  });
});

describe('agentKeyOf', () => {
  describe('when the request carries a key', () => {
    it('takes a printable one and refuses anything else', () => {
      const meta = (value: unknown) => ({ _meta: { 'vouch.dev/idempotency_key': value } });
      expect(agentKeyOf(meta('order-17:retry'))).toBe('order-17:retry');
      expect(agentKeyOf({})).toBeUndefined();
      for (const bad of ['', 'has space', 'x'.repeat(201), 42, null]) {
        expect(agentKeyOf(meta(bad)), String(bad)).toBeInstanceOf(Error);
      }
    });
  });
});
