import type { RedactionReport } from '@vouch/audit';

/** Human lines for the erasures a verification found authorized: which event, which fields, by which redaction. */
export function redactionLines(redactions: readonly RedactionReport[] | undefined): string {
  if (!redactions || redactions.length === 0) return '';
  let text = `  ${redactions.length} redaction(s), each authorized by an event.redacted event:\n`;
  for (const r of redactions) {
    text += `  seq ${r.seq}  REDACTED ${r.fields.join(', ')}  by event ${r.by}: ${JSON.stringify(r.reason)}\n`;
  }
  return text;
}
