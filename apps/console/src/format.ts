/** Pretty JSON for reading; the canonical bytes are shown apart, where they matter. */
export const pretty = (value: unknown): string => JSON.stringify(value, null, 2);

/** "in 4m 12s", "expired 30s ago". */
export function countdown(until: string, now: number): string {
  const ms = Date.parse(until) - now;
  const abs = Math.abs(ms);
  const h = Math.floor(abs / 3_600_000);
  const m = Math.floor((abs % 3_600_000) / 60_000);
  const s = Math.floor((abs % 60_000) / 1000);
  const text = h > 0 ? `${h}h ${m}m` : m > 0 ? `${m}m ${s}s` : `${s}s`;
  return ms > 0 ? `in ${text}` : `expired ${text} ago`;
}

export const shortHash = (hash: string): string => `${hash.slice(0, 12)}…`;

export const time = (iso: string | null | undefined): string =>
  iso ? new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' }) : '—';

/** One changed leaf between two JSON values, by JSON Pointer. */
export interface Change {
  path: string;
  kind: 'added' | 'removed' | 'changed';
  before?: unknown;
  after?: unknown;
}

/** The leaves that differ between `before` and `after` (objects by key, arrays by index). */
export function diffJson(before: unknown, after: unknown, path = ''): Change[] {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
  if (isObject(before) && isObject(after) && Array.isArray(before) === Array.isArray(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    return keys.flatMap((key) => {
      const child = `${path}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      if (!(key in after)) return [{ path: child, kind: 'removed' as const, before: before[key] }];
      if (!(key in before)) return [{ path: child, kind: 'added' as const, after: after[key] }];
      return diffJson(before[key], after[key], child);
    });
  }
  return JSON.stringify(before) === JSON.stringify(after)
    ? []
    : [{ path: path || '/', kind: 'changed', before, after }];
}
