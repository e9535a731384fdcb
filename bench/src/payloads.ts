import { canonicalJson } from '@vouch/audit';

/**
 * Distinct tool-call-shaped payloads whose canonical JSON is about `bytes` long (within a
 * few bytes: `n` has a varying number of digits). The padding string is built once, so a
 * call costs next to nothing beside what is measured.
 */
export function payloadSource(bytes: number): (n: number) => Record<string, unknown> {
  const shape = (n: number, body: string) => ({
    tool: 'http.request',
    n,
    target: { kind: 'service', id: `svc-${n % 97}`, env: 'prod' },
    args: { method: 'POST', path: `/v1/items/${n}`, body },
  });
  const body = 'x'.repeat(Math.max(0, bytes - canonicalJson(shape(100_000, '')).length));
  return (n) => shape(n, body);
}
