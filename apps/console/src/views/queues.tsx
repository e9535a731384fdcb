import { useEffect, useState } from 'preact/hooks';
import type { Api } from '../api';
import { time } from '../format';
import type { ProposalListItem, ProposalPage } from '../types';
import { Badge, ErrorBox, toneOf } from '../ui';
import { useListKeys } from './list-keys';

const QUEUES = [
  {
    outcome: 'verification_failed',
    title: 'Failed',
    hint: 'An independent source says a postcondition does not hold.',
  },
  {
    outcome: 'awaiting_resolution',
    title: 'Unknown',
    hint: 'The call timed out: it may still act. Never retried automatically.',
  },
  {
    outcome: 'unverified',
    title: 'Unverified',
    hint: 'Verification was inconclusive: "we did not look" is not "all is well".',
  },
  {
    outcome: 'awaiting_verification',
    title: 'Awaiting verification',
    hint: 'Executed; no verification yet.',
  },
] as const;

/** Queues of proposals whose outcome needs a human: failed, unknown, unverified. */
export function Queues({ api }: { api: Api }) {
  const [queue, setQueue] = useState<(typeof QUEUES)[number]['outcome']>('verification_failed');
  const [page, setPage] = useState<{ items: ProposalListItem[]; next: number | null } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [selected, setSelected] = useState(0);

  const load = async (after?: number) => {
    try {
      const answer = await api.get<ProposalPage>('/v1/proposals', { outcome: queue, after, limit: 50 });
      setPage((p) => ({
        items: after && p ? [...p.items, ...answer.proposals] : answer.proposals,
        next: answer.next,
      }));
      setError(null);
    } catch (e) {
      setError(e);
    }
  };
  useEffect(() => {
    setPage(null);
    setSelected(0);
    void load();
  }, [queue, api]);
  useListKeys(page?.items.length ?? 0, selected, setSelected);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const item = page?.items[selected];
      if (
        e.key === 'Enter' &&
        item &&
        !(e.target instanceof HTMLButtonElement || e.target instanceof HTMLAnchorElement)
      ) {
        window.location.hash = `#/proposal/${encodeURIComponent(idOf(item))}`;
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [page, selected]);

  const current = QUEUES.find((q) => q.outcome === queue)!;
  return (
    <section aria-labelledby="queues-title">
      <header class="view-head">
        <h1 id="queues-title">Queues</h1>
      </header>
      <div class="tabs" role="tablist">
        {QUEUES.map((q) => (
          <button
            type="button"
            role="tab"
            aria-selected={q.outcome === queue}
            key={q.outcome}
            onClick={() => setQueue(q.outcome)}
          >
            {q.title}
          </button>
        ))}
      </div>
      <p class="muted">{current.hint}</p>
      <ErrorBox error={error} />
      {page === null ? (
        <p class="muted">Loading…</p>
      ) : page.items.length === 0 ? (
        <p class="empty">Nothing in this queue.</p>
      ) : (
        <table class="list">
          <thead>
            <tr>
              <th>seq</th>
              <th>tool</th>
              <th>requester</th>
              <th>environment</th>
              <th>proposed</th>
              <th>stage</th>
            </tr>
          </thead>
          <tbody>
            {page.items.map((p, i) =>
              'error' in p ? (
                <ErrorRow key={p.proposal_id} item={p} selected={i === selected} />
              ) : (
                <tr key={p.proposal.id} class={i === selected ? 'selected' : ''} data-testid="queue-row">
                  <td>{p.seq}</td>
                  <td>
                    <a href={`#/proposal/${encodeURIComponent(p.proposal.id)}`}>
                      {p.proposal.server_id}/{p.proposal.tool_name}
                    </a>
                  </td>
                  <td>{p.proposal.requester}</td>
                  <td>{p.proposal.target.env ?? '—'}</td>
                  <td>{time(p.proposal.proposed_at)}</td>
                  <td>
                    <Badge tone={toneOf(p.stage)}>{p.stage}</Badge>
                  </td>
                </tr>
              ),
            )}
          </tbody>
        </table>
      )}
      {page?.next != null ? (
        <button type="button" onClick={() => load(page.next ?? undefined)}>
          More
        </button>
      ) : null}
    </section>
  );
}

const idOf = (item: ProposalListItem): string => ('error' in item ? item.proposal_id : item.proposal.id);

/**
 * A proposal whose records the server refused to derive a story from (a row that does not
 * match the chain, or breaks its rules): the refusal in its row, the rest of the queue as usual.
 */
function ErrorRow({
  item,
  selected,
}: {
  item: Extract<ProposalListItem, { error: unknown }>;
  selected: boolean;
}) {
  return (
    <tr class={selected ? 'selected' : ''} data-testid="queue-row-error">
      <td>{item.seq}</td>
      <td colSpan={5}>
        <a href={`#/proposal/${encodeURIComponent(item.proposal_id)}`}>{item.proposal_id}</a>{' '}
        <Badge tone="bad">integrity</Badge> <code class="error-code">{item.error.code}</code>{' '}
        {item.error.message}
      </td>
    </tr>
  );
}
