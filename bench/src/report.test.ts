import { describe, expect, it } from 'vitest';
import { figure, formatTable } from './report';

const verify = (value: number, baseline: number) =>
  figure({
    scenario: 'verify-database',
    backend: 'postgres',
    point: '200000 events, 300 B',
    metric: 'verifyChain',
    unit: 'events/s',
    value,
    baseline: { name: 'plain keyset read', value: baseline },
    better: 'higher',
    target: { value: 150_000, ratio: 0.8 },
  });

describe('a target of two parts', () => {
  it('judges each part on its own, and the whole only when both hold', () => {
    const rateOnly = verify(180_000, 384_000);
    expect(rateOnly.verdict).toEqual({ value: true, ratio: false });
    expect(rateOnly.holds).toBe(false);
    expect(formatTable([rateOnly])).toContain('≥ 150k events/s: holds; ratio ≥ 0.8: MISSED');

    const both = verify(180_000, 200_000);
    expect(both.verdict).toEqual({ value: true, ratio: true });
    expect(both.holds).toBe(true);
    expect(formatTable([both])).toContain('≥ 150k events/s: holds; ratio ≥ 0.8: holds');

    const ratioOnly = verify(120_000, 130_000);
    expect(ratioOnly.verdict).toEqual({ value: false, ratio: true });
    expect(formatTable([ratioOnly])).toContain('≥ 150k events/s: MISSED; ratio ≥ 0.8: holds');
  });

  it('judges a lower-is-better figure against a ceiling', () => {
    const memory = figure({
      scenario: 'verify-memory',
      backend: 'postgres',
      point: '1000000 events',
      metric: 'peak RSS at the end',
      unit: 'MiB',
      value: 460,
      baseline: { name: 'peak RSS after 500000 events', value: 400 },
      better: 'lower',
      target: { ratio: 1.1 },
    });
    expect(memory.verdict).toEqual({ ratio: false });
    expect(formatTable([memory])).toContain('ratio < 1.1: MISSED');
  });
});
