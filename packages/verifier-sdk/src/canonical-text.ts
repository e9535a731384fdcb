/**
 * Canonical JSON text of a plain-JSON value: object keys sorted by UTF-16 code units at every
 * level, no whitespace, ECMAScript number formatting (the layout of RFC 8785, JCS). Two equal
 * values give the same text, so it is how the SDK compares a postcondition's params and
 * measures a check result. The caller has checked the value is JSON (`findJsonIssue`).
 */
export function canonicalText(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalText).join(',')}]`;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record)
    .filter((key) => record[key] !== undefined)
    .sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalText(record[key])}`).join(',')}}`;
}

const encoder = new TextEncoder();

/** The size in bytes (UTF-8) of a value's canonical JSON text: what the ledger stores and hashes. */
export function canonicalByteLength(value: unknown): number {
  return encoder.encode(canonicalText(value)).length;
}
