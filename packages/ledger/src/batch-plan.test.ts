import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ConflictKeys, mergeOrders, planWaves } from './batch-plan';

interface Item {
  name: string;
  keys: ConflictKeys | null;
}

const item = (name: string, keys: ConflictKeys | null): Item => ({ name, keys });
const names = (waves: Item[][]) => waves.map((wave) => wave.map((i) => i.name));
const plan = (items: Item[], maxWave?: number) => names(planWaves(items, (i) => i.keys, maxWave));

describe('planWaves', () => {
  describe('when no keys collide', () => {
    it('puts every item in one wave, in order', () => {
      expect(
        plan([
          item('a', { writes: ['k1'] }),
          item('b', { writes: ['k2'], reads: ['tools'] }),
          item('c', { reads: ['tools'] }),
          item('d', {}),
        ]),
      ).toEqual([['a', 'b', 'c', 'd']]);
    });
  });

  describe('when two items write one key', () => {
    it('starts a new wave at the second', () => {
      expect(plan([item('a', { writes: ['k'] }), item('b', {}), item('c', { writes: ['k'] })])).toEqual([
        ['a', 'b'],
        ['c'],
      ]);
    });
  });

  describe('when a writer meets a reader of its key', () => {
    it('separates them whichever comes first', () => {
      expect(plan([item('r', { reads: ['tools'] }), item('w', { writes: ['tools'] })])).toEqual([
        ['r'],
        ['w'],
      ]);
      expect(plan([item('w', { writes: ['tools'] }), item('r', { reads: ['tools'] })])).toEqual([
        ['w'],
        ['r'],
      ]);
    });
  });

  describe('when an item declares no keys (null)', () => {
    it('runs it in a wave of its own', () => {
      expect(plan([item('a', {}), item('alone', null), item('b', {}), item('c', {})])).toEqual([
        ['a'],
        ['alone'],
        ['b', 'c'],
      ]);
    });
  });

  describe('when a wave reaches its largest size', () => {
    it('starts the next one', () => {
      expect(plan([item('a', {}), item('b', {}), item('c', {})], 2)).toEqual([['a', 'b'], ['c']]);
    });
  });

  it('keeps the order, and no wave holds a collision, for any items', () => {
    const keys = fc.subarray(['k1', 'k2', 'k3', 'tools']);
    const arbitraryItem = fc.oneof(
      { weight: 1, arbitrary: fc.constant(null) },
      { weight: 6, arbitrary: fc.record({ reads: keys, writes: keys }) },
    );
    fc.assert(
      fc.property(fc.array(arbitraryItem, { maxLength: 30 }), fc.integer({ min: 1, max: 8 }), (all, max) => {
        const items = all.map((keys, i) => item(String(i), keys));
        const waves = planWaves(items, (i) => i.keys, max);
        expect(waves.flat()).toEqual(items);
        for (const wave of waves) {
          expect(wave.length).toBeLessThanOrEqual(max);
          if (wave.some((i) => i.keys === null)) expect(wave).toHaveLength(1);
          wave.forEach((a, i) => {
            for (const b of wave.slice(i + 1)) {
              const writesA = a.keys?.writes ?? [];
              const writesB = b.keys?.writes ?? [];
              const touches = (k: ConflictKeys | null) => [...(k?.reads ?? []), ...(k?.writes ?? [])];
              expect(writesA.some((k) => touches(b.keys).includes(k))).toBe(false);
              expect(writesB.some((k) => touches(a.keys).includes(k))).toBe(false);
            }
          });
        }
      }),
    );
  });
});

describe('mergeOrders', () => {
  describe('when the sequences agree', () => {
    it('keeps each one in order, ties by first appearance', () => {
      // A decision's request and its proposal must both precede it.
      expect(
        mergeOrders([
          ['requests', 'decisions'],
          ['proposals', 'decisions'],
          ['proposals', 'requests', 'decisions'],
        ]),
      ).toEqual(['proposals', 'requests', 'decisions']);
      expect(mergeOrders([['a'], ['b'], ['a', 'a', 'c']])).toEqual(['a', 'b', 'c']);
    });
  });

  describe('when two sequences disagree', () => {
    it('returns null', () => {
      expect(
        mergeOrders([
          ['a', 'b'],
          ['b', 'a'],
        ]),
      ).toBeNull();
      expect(mergeOrders([['a', 'b', 'a']])).toBeNull();
    });
  });

  it('returns an order every acyclic set of sequences keeps, or null only for a cycle', () => {
    const permutation = fc.shuffledSubarray(['t1', 't2', 't3', 't4', 't5'], { minLength: 1 });
    fc.assert(
      fc.property(fc.array(permutation, { maxLength: 6 }), fc.boolean(), (sequences, agree) => {
        // Sub-sequences of one order never disagree; arbitrary ones may.
        const base = ['t1', 't2', 't3', 't4', 't5'];
        const input = agree ? sequences.map((s) => base.filter((t) => s.includes(t))) : sequences;
        const order = mergeOrders(input);
        if (agree) expect(order).not.toBeNull();
        if (order === null) return;
        expect(new Set(order)).toEqual(new Set(input.flat()));
        for (const s of input) {
          const positions = s.map((t) => order.indexOf(t));
          expect(positions).toEqual([...positions].sort((x, y) => x - y));
        }
      }),
    );
  });
});
