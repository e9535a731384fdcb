import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ConflictKeys, planWaves } from './batch-plan';

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
