import { useEffect, useState } from 'preact/hooks';
import type { Api } from '../api';
import { shortHash, time } from '../format';
import type { ProposalStory } from '../types';
import { Badge, ErrorBox, Field, Json, Redacted, toneOf } from '../ui';

function Step(props: { title: string; state: string; children: preact.ComponentChildren; testid: string }) {
  return (
    <li class={`step step-${toneOf(props.state)}`} data-testid={props.testid}>
      <div class="step-head">
        <h2>{props.title}</h2>
        <Badge tone={toneOf(props.state)}>{props.state}</Badge>
      </div>
      <div class="step-body">{props.children}</div>
    </li>
  );
}

/** Proposal → decision → approval → execution → observation → verifications, from the story. */
export function Timeline({ api, id }: { api: Api; id: string }) {
  const [story, setStory] = useState<ProposalStory | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    setStory(null);
    api.get<ProposalStory>(`/v1/proposals/${encodeURIComponent(id)}`).then(setStory, setError);
  }, [api, id]);
  if (error) return <ErrorBox error={error} />;
  if (!story) return <p class="muted">Loading…</p>;
  const { proposal, decision, approval, claim, observation, refusals, verifications, verification_status } =
    story;
  const use = approval?.uses.find((u) => u.proposal_id === proposal.id) ?? null;
  return (
    <section aria-labelledby="timeline-title">
      <header class="view-head">
        <h1 id="timeline-title">
          {proposal.server_id}/{proposal.tool_name} <span class="muted">{proposal.id}</span>
        </h1>
        <Badge tone={toneOf(story.stage)}>stage: {story.stage}</Badge>
        <Badge tone={toneOf(story.outcome)}>outcome: {story.outcome}</Badge>
      </header>
      <ol class="timeline">
        <Step title="Proposal" state="proposed" testid="step-proposal">
          <dl class="fields">
            <Field label="requester">{proposal.requester}</Field>
            <Field label="action">{proposal.action}</Field>
            <Field label="target">
              {proposal.target.kind} {proposal.target.id ?? ''} in {proposal.target.env ?? '(none)'}
            </Field>
            <Field label="side effect">{proposal.side_effect}</Field>
            <Field label="payload hash">
              <code title={proposal.payload_hash}>{shortHash(proposal.payload_hash)}</code>
            </Field>
            <Field label="at">{time(proposal.proposed_at)}</Field>
          </dl>
          <Json value={proposal.arguments} />
          <Redacted keys={proposal.redacted?.arguments} />
        </Step>
        <Step title="Decision" state={decision?.verdict ?? 'awaiting decision'} testid="step-decision">
          {decision ? (
            <>
              <p>
                by {decision.decided_by} ({decision.source}) at {time(decision.decided_at)}
              </p>
              <ul class="reasons">
                {decision.reasons.map((r) => (
                  <li key={r.code}>
                    <Badge tone={toneOf(r.effect)}>{r.effect}</Badge> <code>{r.code}</code> {r.message}
                  </li>
                ))}
              </ul>
            </>
          ) : (
            <p class="muted">No decision recorded.</p>
          )}
        </Step>
        {approval ? (
          <Step title="Approval" state={approval.status} testid="step-approval">
            <p>
              requested {time(approval.request.requested_at)}, expires {time(approval.request.expires_at)}
            </p>
            {approval.resolution ? (
              <>
                <p>
                  <strong>{approval.resolution.resolution}</strong> by {approval.resolution.resolver} at{' '}
                  {time(approval.resolution.resolved_at)}
                  {approval.resolution.validity ? `, valid ${approval.resolution.validity}` : ''}
                  {approval.resolution.valid_until ? ` until ${time(approval.resolution.valid_until)}` : ''}
                  {approval.resolution.comment ? <q>{approval.resolution.comment}</q> : null}
                </p>
                <p data-testid="answer-signature">
                  {approval.resolution.signature ? (
                    <>
                      <Badge tone="good">signed</Badge> by {approval.resolution.resolver}'s key{' '}
                      <code>{approval.resolution.signature.signatures[0]?.keyid}</code>
                    </>
                  ) : (
                    <>
                      <Badge tone="neutral">unsigned</Badge> no author signature (the resolver held no
                      enrolled key then)
                    </>
                  )}
                </p>
              </>
            ) : (
              <p class="muted">Not answered.</p>
            )}
          </Step>
        ) : null}
        <Step
          title="Execution claim"
          state={
            claim || use
              ? 'claimed'
              : refusals.length > 0
                ? 'refused'
                : observation
                  ? 'executed'
                  : 'not claimed'
          }
          testid="step-execution"
        >
          {claim ? (
            <p data-testid="claim">
              claimed by {claim.claimed_by} at {time(claim.claimed_at)}; an observation is due by{' '}
              {time(claim.deadline)}, or the outcome is recorded <code>unknown</code>
            </p>
          ) : null}
          {use ? (
            <p>
              approval used by {use.used_by} at {time(use.used_at)} ({use.validity})
            </p>
          ) : null}
          {refusals.map((r) => (
            <p key={r.id} class="refusal">
              <code>{r.code}</code> {r.message} — attempted by {r.attempted_by} at {time(r.refused_at)}
            </p>
          ))}
          {!claim && !use && refusals.length === 0 ? (
            <p class="muted">No execution claim, approval use or refusal recorded.</p>
          ) : null}
        </Step>
        <Step title="Observation" state={observation?.outcome ?? 'not observed'} testid="step-observation">
          {observation ? (
            <>
              <p>
                executed by {observation.executed_by}, observed {time(observation.observed_at)}
                {observation.transport_status !== null ? `, transport ${observation.transport_status}` : ''}
              </p>
              <p class="note">What the tool said about itself; not verified truth.</p>
              {observation.result_source !== undefined ? (
                <p data-testid="result-source">
                  result from <code>{observation.result_source}</code>{' '}
                  <span class="note">
                    (the gateway's claim: kept, never used to judge which check is independent)
                  </span>
                </p>
              ) : null}
              <Json value={observation.result} />
              <Redacted keys={observation.redacted?.result} />
            </>
          ) : (
            <p class="muted">Nothing observed.</p>
          )}
        </Step>
        <Step
          title="Verifications"
          state={verifications.length ? verification_status.status : 'none'}
          testid="step-verifications"
        >
          {verification_status.reason ? (
            <p>
              reason: <code>{verification_status.reason}</code>
            </p>
          ) : null}
          {verifications.length === 0 ? <p class="muted">No verification recorded.</p> : null}
          {verifications.map((v) => {
            const superseded = verification_status.superseded.find((s) => s.id === v.id);
            return (
              <div key={v.id} class={`verification${superseded ? ' superseded' : ''}`}>
                <p>
                  <Badge tone={toneOf(v.status)}>{v.status}</Badge> by {v.verifier} at {time(v.verified_at)}
                  {superseded ? ` — superseded by ${superseded.by}` : ''}
                  {v.reason ? ` — ${v.reason}` : ''}
                </p>
                <table class="checks">
                  <thead>
                    <tr>
                      <th>check</th>
                      <th>status</th>
                      <th>source</th>
                      <th>evidence</th>
                    </tr>
                  </thead>
                  <tbody>
                    {v.checks.map((c, i) => {
                      const { name, status, source, ...evidence } = c;
                      return (
                        <tr key={`${name}-${i}`}>
                          <td>{name}</td>
                          <td>
                            <Badge tone={toneOf(String(status))}>{String(status)}</Badge>
                          </td>
                          <td>{source ?? '—'}</td>
                          <td>{Object.keys(evidence).length ? <Json value={evidence} /> : '—'}</td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </div>
            );
          })}
        </Step>
      </ol>
      <details>
        <summary>The {story.events.length} audit events behind this story</summary>
        <table class="events">
          <tbody>
            {story.events.map((e) => (
              <tr key={e.seq}>
                <td>{e.seq}</td>
                <td>{e.kind}</td>
                <td>{e.actor}</td>
                <td>
                  <code title={e.hash}>{shortHash(e.hash)}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </section>
  );
}
