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
const mrkdwn = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

function slackText(notice: WebhookNotice): string {
  const d = notice.data;
  const tool = `*${mrkdwn(str(d.tool_name))}*`;
  const summary = (() => {
    switch (notice.event) {
      case 'approval.requested':
        return `Approval requested: ${tool} on ${mrkdwn(str(d.server_id))} by ${mrkdwn(str(d.requester))}${
          d.environment ? ` in ${mrkdwn(str(d.environment))}` : ''
        }, expires ${mrkdwn(str(d.expires_at))}`;
      case 'approval.expiring':
        return `Approval expiring: ${tool} requested by ${mrkdwn(str(d.requester))} expires ${mrkdwn(str(d.expires_at))} and is still unanswered`;
      case 'approval.resolved':
        return `Approval ${mrkdwn(str(d.resolution))} by ${mrkdwn(str(d.resolver))}${
          d.comment ? `: "${mrkdwn(str(d.comment))}"` : ''
        }`;
      case 'verification.failed':
        return `Verification failed for proposal ${mrkdwn(str(d.proposal_id))}: ${
          Array.isArray(d.checks)
            ? d.checks
                .filter((c) => (c as { status?: unknown }).status === 'fail')
                .map((c) => mrkdwn(str((c as { name?: unknown }).name)))
                .join(', ')
            : ''
        } did not hold`;
      case 'outcome.unknown':
        return `Outcome unknown: ${tool} on ${mrkdwn(str(d.server_id))} (proposal ${mrkdwn(str(d.proposal_id))}) may or may not have acted; it is not retried automatically`;
      case 'integrity.alarm':
        return `:rotating_light: Integrity alarm ${mrkdwn(str(d.code))} on log ${mrkdwn(notice.log)}: ${mrkdwn(str(d.message))}`;
    }
  })();
  return `${summary} (log ${mrkdwn(notice.log)}${notice.seq === null ? '' : `, seq ${notice.seq}`})${
    notice.link ? ` <${notice.link}|open>` : ''
  }`;
}
