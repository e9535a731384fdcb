import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A target from the issue: the ratio and/or the absolute figure it must reach. */
export interface Target {
  /** Lowest acceptable measured/baseline ratio (for `higher` figures) or highest (for `lower`). */
  ratio?: number;
  /** Lowest (or highest, for `lower`) acceptable absolute value. */
  value?: number;
}

/** One figure beside its baseline, measured in the same run. */
export interface Figure {
  scenario: string;
  backend: string;
  /** What varies inside a scenario: `64 writers, 300 B`. */
  point: string;
  metric: string;
  unit: string;
  value: number;
  baseline: { name: string; value: number };
  /** value / baseline.value */
  ratio: number;
  /** Whether a bigger value is better (throughput) or a smaller one (latency, memory). */
  better: 'higher' | 'lower';
  target?: Target;
  /** Whether the whole target holds, when there is one: every part of it. */
  holds?: boolean;
  /** Each part of the target on its own: the figure can reach its rate and miss its ratio. */
  verdict?: { value?: boolean; ratio?: boolean };
  extra?: Record<string, unknown>;
  /** The machine's 1-minute load average when the scenario's step ended (`os.loadavg`). */
  load?: number;
}

export function figure(input: Omit<Figure, 'ratio' | 'holds' | 'verdict'>): Figure {
  const ratio = input.value / input.baseline.value;
  const result: Figure = { ...input, ratio };
  if (input.target) {
    const { ratio: r, value: v } = input.target;
    const ok = (actual: number, bound: number) =>
      input.better === 'higher' ? actual >= bound : actual <= bound;
    const verdict: NonNullable<Figure['verdict']> = {};
    if (v !== undefined) verdict.value = ok(input.value, v);
    if (r !== undefined) verdict.ratio = ok(ratio, r);
    result.verdict = verdict;
    result.holds = verdict.value !== false && verdict.ratio !== false;
  }
  return result;
}

function fmt(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  if (abs >= 100_000) return `${(value / 1000).toFixed(0)}k`;
  if (abs >= 10_000) return `${(value / 1000).toFixed(1)}k`;
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

function targetText(f: Figure): string {
  if (!f.target) return '';
  const cmp = f.better === 'higher' ? '≥' : '<';
  const said = (holds: boolean | undefined) => (holds ? 'holds' : 'MISSED');
  const parts: string[] = [];
  if (f.target.value !== undefined)
    parts.push(`${cmp} ${fmt(f.target.value)} ${f.unit}: ${said(f.verdict?.value)}`);
  if (f.target.ratio !== undefined) parts.push(`ratio ${cmp} ${f.target.ratio}: ${said(f.verdict?.ratio)}`);
  return parts.join('; ');
}

/** A plain-text table, one figure per line, grouped by scenario and backend. */
export function formatTable(figures: readonly Figure[]): string {
  const header = ['scenario', 'backend', 'point', 'metric', 'value', 'baseline', 'ratio', 'load', 'target'];
  const rows = figures.map((f) => [
    f.scenario,
    f.backend,
    f.point,
    `${f.metric} (${f.unit})`,
    fmt(f.value),
    `${fmt(f.baseline.value)} ${f.baseline.name}`,
    f.ratio.toFixed(2),
    f.load === undefined ? '' : f.load.toFixed(1),
    targetText(f),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** Write the run's figures and machine facts as JSON; returns the file path. */
export function writeResults(outDir: string, run: Record<string, unknown>): string {
  mkdirSync(outDir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const path = join(outDir, `bench-${stamp}.json`);
  writeFileSync(path, `${JSON.stringify(run, null, 2)}\n`);
  writeFileSync(join(outDir, 'latest.json'), `${JSON.stringify(run, null, 2)}\n`);
  return path;
}
