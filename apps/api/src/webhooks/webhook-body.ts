import type { WebhookEvent, WebhookFormat } from './webhook-events';

/** What a notification says, before it is put in a target's format. */
export interface WebhookNotice {
  id: string;
  event: WebhookEvent;
  log: string;
  /** The ledger event it comes from; null for an integrity alarm. */
  seq: number | null;
  subject: string;
  /** When it happened: the ledger event's time, or when the alarm was raised. */
  occurredAt: string;
  /** Where to look: an API path on this server, or null. */
  link: string | null;
  /** The record (as the ledger holds it), or the alarm. */
  data: Record<string, unknown>;
}

/**
 * The exact body sent, on every attempt: Vouch's envelope, or Slack's `{"text": …}` with a
 * readable summary and the link.
 */
export function webhookBody(notice: WebhookNotice, format: WebhookFormat): string {
  if (format === 'slack') return JSON.stringify({ text: slackText(notice) });
  return JSON.stringify({
    id: notice.id,
    type: notice.event,
    log: notice.log,
    seq: notice.seq,
    subject: notice.subject,
    occurred_at: notice.occurredAt,
    link: notice.link,
    data: notice.data,
  });
}

const str = (value: unknown) =>
  typeof value === 'string' || typeof value === 'number' ? String(value) : '?';

// Slack mrkdwn: &, < and > are control characters; everything else is shown as written.
const escape = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

function slackText(notice: WebhookNotice): string {
  const d = notice.data;
  const tool = `*${escape(str(d.tool_name))}*`;
  const summary = (() => {
    switch (notice.event) {
      case 'approval.requested':
        return `Approval requested: ${tool} on ${escape(str(d.server_id))} by ${escape(str(d.requester))}${
          d.environment ? ` in ${escape(str(d.environment))}` : ''
        }, expires ${escape(str(d.expires_at))}`;
      case 'approval.expiring':
        return `Approval expiring: ${tool} requested by ${escape(str(d.requester))} expires ${escape(str(d.expires_at))} and is still unanswered`;
      case 'approval.resolved':
        return `Approval ${escape(str(d.resolution))} by ${escape(str(d.resolver))}${
          d.comment ? `: "${escape(str(d.comment))}"` : ''
        }`;
      case 'verification.failed':
        return `Verification failed for proposal ${escape(str(d.proposal_id))}: ${
          Array.isArray(d.checks)
            ? d.checks
                .filter((c) => (c as { status?: unknown }).status === 'fail')
                .map((c) => escape(str((c as { name?: unknown }).name)))
                .join(', ')
            : ''
        } did not hold`;
      case 'outcome.unknown':
        return `Outcome unknown: ${tool} on ${escape(str(d.server_id))} (proposal ${escape(str(d.proposal_id))}) may or may not have acted; it is not retried automatically`;
      case 'integrity.alarm':
        return `:rotating_light: Integrity alarm ${escape(str(d.code))} on log ${escape(notice.log)}: ${escape(str(d.message))}`;
    }
  })();
  return `${summary} (log ${escape(notice.log)}${notice.seq === null ? '' : `, seq ${notice.seq}`})${
    notice.link ? ` <${notice.link}|open>` : ''
  }`;
}
