import { sameIdentity } from '@vouch/audit';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { type Api, ApiError } from '../api';
import { openEventStream } from '../event-stream';
import { countdown, diffJson, shortHash } from '../format';
import { signatureHeader } from '../signing-key';
import type { ApprovalDetail, ApprovalPage, Me } from '../types';
import { Badge, ErrorBox, Field, Json, Redacted, toneOf } from '../ui';
import { useListKeys } from './list-keys';

/**
 * What a verifier must prove after the call, each marked with who requires it: the tool's
 * registration (the operator; the agent cannot drop it) or the agent (an addition).
 */
function Postconditions({ conditions }: { conditions: ApprovalDetail['payload']['postconditions'] }) {
  return (
    <div class="postconditions" data-testid="postconditions">
      <h3>Must be proven after the call</h3>
      {conditions.length === 0 ? (
        <p class="muted">Nothing: no verifier will be asked to prove anything about this call.</p>
      ) : (
        <ul>
          {conditions.map((c, i) => (
            <li key={i} data-testid="postcondition" data-origin={c.origin ?? 'agent'}>
              <code>{c.name}</code>{' '}
              {c.origin === 'registry' ? (
                <Badge tone="neutral">required by the tool registration</Badge>
              ) : (
                <Badge tone="warn">added by the agent</Badge>
              )}
              {c.verifiers ? <span class="muted"> proven only by {c.verifiers.join(', ')}</span> : null}
              {c.params ? <Json value={c.params} /> : null}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** The most recent approved payload of the same server and tool, to diff against. */
function lastApprovedFor(pending: ApprovalDetail, history: ApprovalDetail[]): ApprovalDetail | null {
  const same = history.filter(
    (h) =>
      h.request.id !== pending.request.id &&
      h.request.server_id === pending.request.server_id &&
      h.request.tool_name === pending.request.tool_name &&
      h.resolution?.resolution === 'approved',
  );
  same.sort((a, b) => (a.resolution!.resolved_at < b.resolution!.resolved_at ? 1 : -1));
  return same[0] ?? null;
}

async function allPages(api: Api, status: string): Promise<ApprovalDetail[]> {
  const out: ApprovalDetail[] = [];
  let after: number | undefined;
  for (;;) {
    const page = await api.get<ApprovalPage>('/v1/approvals', { status, after, limit: 200 });
    out.push(...page.approvals);
    if (page.next === null) return out;
    after = page.next;
  }
}

export function Inbox({ api, me, apiKey, log }: { api: Api; me: Me; apiKey: string; log: string }) {
  const [pending, setPending] = useState<ApprovalDetail[] | null>(null);
  const [history, setHistory] = useState<ApprovalDetail[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [live, setLive] = useState<'live' | 'reconnecting' | 'off'>('off');
  const [now, setNow] = useState(Date.now());
  const [selected, setSelected] = useState(0);

  const load = useCallback(async () => {
    try {
      const [open, approved, used] = await Promise.all([
        allPages(api, 'pending'),
        allPages(api, 'approved'),
        allPages(api, 'used'),
      ]);
      setPending(open);
      setHistory([...approved, ...used]);
      setError(null);
    } catch (e) {
      setError(e);
    }
  }, [api]);

  useEffect(() => {
    void load();
    const tick = setInterval(() => setNow(Date.now()), 1000);
    const stream = openEventStream(
      () => new URL(`/v1/approvals/events?log=${encodeURIComponent(log)}`, window.location.origin),
      apiKey,
      (event) => {
        if (event === 'approval') void load();
      },
      setLive,
    );
    return () => {
      clearInterval(tick);
      stream.close();
    };
  }, [load, apiKey, log]);

  useListKeys(pending?.length ?? 0, selected, setSelected);

  return (
    <section aria-labelledby="inbox-title">
      <header class="view-head">
        <h1 id="inbox-title">Approvals inbox</h1>
        <span class={`live live-${live}`} data-testid="live">
          {live === 'live' ? '● live' : live === 'reconnecting' ? '○ reconnecting' : '○ connecting'}
        </span>
      </header>
      <ErrorBox error={error} />
      {pending === null ? (
        <p class="muted">Loading…</p>
      ) : pending.length === 0 ? (
        <p class="empty">Nothing waits for an answer.</p>
      ) : (
        <ol class="cards">
          {pending.map((a, i) => (
            <ApprovalCard
              key={a.request.id}
              api={api}
              me={me}
              log={log}
              approval={a}
              previous={lastApprovedFor(a, history)}
              now={now}
              selected={i === selected}
              onAnswered={load}
            />
          ))}
        </ol>
      )}
    </section>
  );
}

/** What to do about a refusal the console can explain further. */
function SignatureHint({ error }: { error: unknown }) {
  if (!(error instanceof ApiError)) return null;
  if (error.code === 'SIGNATURE_REQUIRED') {
    return (
      <p class="note" data-testid="signature-hint">
        Your answers must be signed, and this browser holds no signing key for you: enrol one on the{' '}
        <a href="#/signing-key">Signing key</a> page with a one-time code from your admin.
      </p>
    );
  }
  if (error.code === 'SIGNATURE_INVALID') {
    return (
      <p class="note" data-testid="signature-hint">
        This browser's signing key is not (or no longer) enrolled for you: enrol a new one on the{' '}
        <a href="#/signing-key">Signing key</a> page.
      </p>
    );
  }
  return null;
}

function ApprovalCard(props: {
  api: Api;
  me: Me;
  log: string;
  approval: ApprovalDetail;
  previous: ApprovalDetail | null;
  now: number;
  selected: boolean;
  onAnswered: () => void;
}) {
  const { api, me, approval: a, previous, now } = props;
  const [comment, setComment] = useState('');
  const [windowMinutes, setWindowMinutes] = useState(0);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  // The server's rule (four eyes, on canonical identities), shown before anyone clicks.
  const own = sameIdentity(a.request.requester, me.identity);
  const mayAnswer = me.roles.includes('approver');
  const maxMinutes = Math.floor(a.request.max_window_seconds / 60);
  const changes = previous ? diffJson(previous.payload, a.payload) : [];

  const answer = async (kind: 'approve' | 'deny') => {
    setBusy(true);
    setError(null);
    try {
      const body =
        kind === 'approve'
          ? {
              ...(comment ? { comment } : {}),
              ...(windowMinutes > 0
                ? { validity: 'window', window_seconds: windowMinutes * 60 }
                : { validity: 'once' }),
            }
          : comment
            ? { comment }
            : {};
      const claims = { ...body, request_id: a.request.id };
      const headers = await signatureHeader(me, { log: props.log, action: `approval.${kind}`, claims });
      await api.post(`/v1/approvals/${encodeURIComponent(a.request.id)}/${kind}`, body, headers);
      props.onAnswered();
    } catch (e) {
      setError(e instanceof ApiError ? e : new ApiError('ERROR', String(e), 0));
    } finally {
      setBusy(false);
    }
  };

  return (
    <li class={`card${props.selected ? ' selected' : ''}`} data-testid="approval" data-request={a.request.id}>
      <div class="card-head">
        <h2>
          <span class="tool">
            {a.payload.server_id}/{a.payload.tool_name}
          </span>{' '}
          <span class="action">{a.payload.action}</span>
        </h2>
        <Badge tone={toneOf(a.payload.side_effect)}>{a.payload.side_effect}</Badge>
        <span
          class={`expiry${Date.parse(a.request.expires_at) - now < 5 * 60_000 ? ' soon' : ''}`}
          data-testid="expiry"
        >
          expires {countdown(a.request.expires_at, now)}
        </span>
      </div>
      <dl class="fields">
        <Field label="requester">{a.request.requester}</Field>
        <Field label="target">
          {a.payload.target.kind} {a.payload.target.id ?? ''} in{' '}
          <strong>{a.payload.target.env ?? '(no environment)'}</strong>
        </Field>
        <Field label="impact">
          <Json value={a.payload.impact} />
        </Field>
        <Field label="payload hash">
          <code title={a.request.payload_hash}>{shortHash(a.request.payload_hash)}</code>
        </Field>
        <Field label="proposal">
          <a href={`#/proposal/${encodeURIComponent(a.request.proposal_id)}`}>{a.request.proposal_id}</a>
        </Field>
      </dl>
      <Postconditions conditions={a.payload.postconditions} />
      <div class="payload-grid">
        <div>
          <h3>Exactly what will run</h3>
          <Json value={a.payload.arguments} />
          <Redacted keys={a.proposal.redacted?.arguments} />
        </div>
        <div data-testid="diff">
          <h3>Against the last approved {a.payload.tool_name}</h3>
          {previous === null ? (
            <p class="muted">No earlier approved payload for this tool.</p>
          ) : changes.length === 0 ? (
            <p class="muted">Identical to the payload approved {previous.resolution?.resolved_at}.</p>
          ) : (
            <table class="diff">
              <tbody>
                {changes.map((c) => (
                  <tr key={c.path} class={`diff-${c.kind}`}>
                    <td>
                      <code>{c.path}</code>
                    </td>
                    <td class="before">{c.kind === 'added' ? '' : JSON.stringify(c.before)}</td>
                    <td class="after">{c.kind === 'removed' ? '' : JSON.stringify(c.after)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
      </div>
      <details>
        <summary>Canonical bytes (SHA-256 = payload hash)</summary>
        <pre class="json">{a.canonical_payload}</pre>
      </details>
      {mayAnswer ? (
        <div class="answer">
          <label>
            Comment
            <textarea value={comment} onInput={(e) => setComment(e.currentTarget.value)} rows={2} />
          </label>
          <label>
            Valid
            <select value={windowMinutes} onChange={(e) => setWindowMinutes(Number(e.currentTarget.value))}>
              <option value={0}>once (this execution only)</option>
              {[5, 15, 30, 60, 240, 1440]
                .filter((m) => m <= maxMinutes)
                .map((m) => (
                  <option key={m} value={m}>
                    for {m >= 60 ? `${m / 60} h` : `${m} min`} (identical payloads)
                  </option>
                ))}
            </select>
          </label>
          <div class="buttons">
            <button type="button" class="approve" disabled={busy || own} onClick={() => answer('approve')}>
              Approve
            </button>
            <button type="button" class="deny" disabled={busy || own} onClick={() => answer('deny')}>
              Deny
            </button>
          </div>
          {own ? (
            <p class="note" data-testid="own-request">
              You requested this: someone else must answer it (the server refuses with{' '}
              <code>SELF_APPROVAL</code>).
            </p>
          ) : null}
          <ErrorBox error={error} />
          <SignatureHint error={error} />
        </div>
      ) : (
        <p class="note">Your key has no approver role: you can read requests, not answer them.</p>
      )}
    </li>
  );
}
