export function canonicalJson(v: unknown): string {
  return JSON.stringify(v);
}
