import { useEffect, useState } from 'preact/hooks';
import type { Api } from '../api';
import { shortHash, time } from '../format';
import type { EventPage } from '../types';
import { Badge, ErrorBox } from '../ui';
import { type LogVerification, verifyLogInBrowser } from '../verify-log';

interface CheckpointView {
  origin: string;
  tree_size: number;
  root_hash: string;
  created_at: string;
}

const PIN_ITEM = 'vouch.pinnedLogKey';

/** The log browser: head, checkpoint, events; and verification in this browser against a pinned key. */
export function Logs({ api, log, setLog }: { api: Api; log: string; setLog: (log: string) => void }) {
  const [logs, setLogs] = useState<string[]>([]);
  const [head, setHead] = useState<{ seq: number; hash: string } | null>(null);
  const [checkpoint, setCheckpoint] = useState<CheckpointView | null>(null);
  const [events, setEvents] = useState<EventPage | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [pinned, setPinned] = useState(() => window.sessionStorage.getItem(PIN_ITEM) ?? '');
  const [verification, setVerification] = useState<LogVerification | null>(null);
  const [verifyError, setVerifyError] = useState<unknown>(null);
  const [running, setRunning] = useState(false);

  useEffect(() => {
    api.get<{ logs: string[] }>('/v1/logs').then((r) => setLogs(r.logs), setError);
  }, [api]);
  useEffect(() => {
    setVerification(null);
    setError(null);
    const path = `/v1/logs/${encodeURIComponent(log)}`;
    Promise.all([
      api.get<{ head: { seq: number; hash: string } | null }>(`${path}/head`).then((r) => setHead(r.head)),
      api.get<CheckpointView>(`${path}/checkpoint`).then(setCheckpoint, () => setCheckpoint(null)),
      api.get<EventPage>(`${path}/events`, { limit: 50 }).then(setEvents),
    ]).catch(setError);
  }, [api, log]);

  const verify = async () => {
    window.sessionStorage.setItem(PIN_ITEM, pinned.trim());
    setRunning(true);
    setVerifyError(null);
    try {
      await verifyLogInBrowser(api, log, pinned.trim(), setVerification);
    } catch (e) {
      setVerifyError(e);
    } finally {
      setRunning(false);
    }
  };

  const ok = verification?.done && verification.failures.length === 0;
  return (
    <section aria-labelledby="logs-title">
      <header class="view-head">
        <h1 id="logs-title">Log</h1>
        <label class="inline">
          log
          <select value={log} onChange={(e) => setLog(e.currentTarget.value)}>
            {[...new Set([log, ...logs])].map((l) => (
              <option key={l} value={l}>
                {l}
              </option>
            ))}
          </select>
        </label>
      </header>
      <ErrorBox error={error} />
      <dl class="fields wide">
        <div class="field">
          <dt>chain head</dt>
          <dd data-testid="head">{head ? `seq ${head.seq} · ${shortHash(head.hash)}` : 'empty'}</dd>
        </div>
        <div class="field">
          <dt>latest checkpoint</dt>
          <dd data-testid="checkpoint">
            {checkpoint
              ? `${checkpoint.origin} · size ${checkpoint.tree_size} · root ${shortHash(checkpoint.root_hash)} · ${time(checkpoint.created_at)}`
              : 'none signed yet'}
          </dd>
        </div>
      </dl>

      <div class="verify-panel">
        <h2>Verify in this browser</h2>
        <p class="muted">
          Paste the log's public key from a source you trust (the operator runs{' '}
          <code>vouch keys log-public</code>). Nothing the server says is taken on trust: every hash, link,
          root and signature is recomputed here.
        </p>
        <div class="row">
          <input
            aria-label="pinned log public key"
            class="mono"
            placeholder="origin+hash+base64key"
            value={pinned}
            onInput={(e) => setPinned(e.currentTarget.value)}
          />
          <button type="button" class="primary" disabled={running || !pinned.trim()} onClick={verify}>
            {running ? 'Verifying…' : 'Verify'}
          </button>
        </div>
        <ErrorBox error={verifyError} />
        {verification ? (
          <div
            data-testid="verification"
            data-result={verification.done ? (ok ? 'proved' : 'failed') : 'running'}
          >
            {verification.progress.total !== null ? (
              <progress
                value={verification.progress.read}
                max={Math.max(verification.progress.total, verification.progress.read)}
              />
            ) : null}
            <ol class="proof-steps">
              {verification.steps.map((s) => (
                <li key={s.id} class={`proof-${s.state}`} data-testid={`proof-${s.id}`}>
                  <Badge tone={s.state === 'proved' ? 'good' : s.state === 'failed' ? 'bad' : 'neutral'}>
                    {s.state}
                  </Badge>{' '}
                  {s.title}
                  <span class="muted"> {s.detail}</span>
                </li>
              ))}
            </ol>
            {verification.failures.length > 0 ? (
              <ul class="failures" data-testid="failures">
                {verification.failures.slice(0, 20).map((f, i) => (
                  <li key={i}>
                    <code>{f.code}</code> {f.seq !== null ? `seq ${f.seq}: ` : ''}
                    {f.message}
                  </li>
                ))}
              </ul>
            ) : null}
            {verification.done ? <Verdict v={verification} /> : null}
          </div>
        ) : null}
      </div>

      <h2>Events</h2>
      {events ? (
        <table class="list">
          <thead>
            <tr>
              <th>seq</th>
              <th>kind</th>
              <th>entity</th>
              <th>actor</th>
              <th>at</th>
              <th>hash</th>
            </tr>
          </thead>
          <tbody>
            {events.events.map((e) => (
              <tr key={e.seq}>
                <td>{e.seq}</td>
                <td>{e.kind}</td>
                <td>{e.entity}</td>
                <td>{e.actor}</td>
                <td>{time(e.at)}</td>
                <td>
                  <code title={e.hash}>{shortHash(e.hash)}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

/** What was proved and what was not, in plain words. */
function Verdict({ v }: { v: LogVerification }) {
  const ok = v.failures.length === 0;
  return (
    <div class={`verdict ${ok ? 'verdict-ok' : 'verdict-bad'}`} data-testid="verdict">
      {ok ? (
        <p>
          <strong>Proved:</strong> the {v.treeSize} events up to the checkpoint are exactly the tree the
          pinned key signed; every event's payload hash, event hash and link recomputes; the server's
          inclusion proofs verify.
        </p>
      ) : (
        <p>
          <strong>Not intact:</strong> {v.failures.length} problem(s) found. Do not rely on this log until the
          operator explains them.
        </p>
      )}
      <p>
        <strong>Not proved:</strong> that other readers are shown the same log (compare checkpoints with a
        witness: <code>vouch verify --since</code>); that events after seq {v.treeSize ?? 0} are final before
        the next checkpoint signs them; that the record tables match the events (the server checks that in{' '}
        <code>/verify</code>); that the tools' real-world effects are what the events say.
      </p>
    </div>
  );
}
