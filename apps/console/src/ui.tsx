import type { ComponentChildren } from 'preact';
import { ApiError } from './api';

/** An API error as the server said it: code first, then the message. */
export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  const code = error instanceof ApiError ? error.code : 'ERROR';
  const message = error instanceof Error ? error.message : String(error);
  return (
    <div class="error" role="alert">
      <code class="error-code">{code}</code> {message}
    </div>
  );
}

export function Badge({ tone, children }: { tone: string; children: ComponentChildren }) {
  return <span class={`badge badge-${tone}`}>{children}</span>;
}

/** A tone per status word, so the same word always has the same colour. */
export function toneOf(word: string): string {
  if (/failed|fail|denied|refused|error|irreversible|expired/.test(word)) return 'bad';
  if (/verified|passed|pass|approved|allow|executed|used|read_only/.test(word)) return 'good';
  if (/unknown|inconclusive|unverified|awaiting|pending|compensatable|require/.test(word)) return 'warn';
  return 'neutral';
}

export function Json({ value }: { value: unknown }) {
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}

/** Keys of a record's arguments or result erased by an audited redaction: the values are gone, the names stay. */
export function Redacted({ keys }: { keys: string[] | undefined }) {
  if (!keys || keys.length === 0) return null;
  return (
    <p class="note" data-testid="redacted">
      [redacted] {keys.join(', ')}: erased under an audited redaction (`vouch verify` names it); the value is
      gone.
    </p>
  );
}

export function Field({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <div class="field">
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}
