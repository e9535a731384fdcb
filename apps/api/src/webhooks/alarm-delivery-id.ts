import { createHmac, timingSafeEqual } from 'node:crypto';
import { type WebhookNotice, webhookBody } from './webhook-body';
import type { WebhookTarget } from './webhook-config';

// An integrity alarm has no ledger event a delivery could be re-derived from: it lives in the
// memory of the process that raised it. So its delivery's id is a MAC, keyed with what only a
// configured server holds (the target's HMAC secret, or its URL when it has none: then whoever
// knows the URL can post to it anyway), over everything that is sent. Any process configured
// with the target can check it; a row inserted by someone without the key cannot pass.

const keyOf = (target: WebhookTarget) => target.secret ?? target.url.href;

const tag = (target: WebhookTarget, fields: { log: string; subject: string; body: string }) =>
  `whd_${createHmac('sha256', keyOf(target))
    .update(['vouch-webhook-alarm', target.name, fields.log, fields.subject, fields.body].join('\n'))
    .digest('hex')
    .slice(0, 32)}`;

/** The id and body of the delivery of an alarm notice to `target`. */
export function alarmDelivery(
  target: WebhookTarget,
  notice: Omit<WebhookNotice, 'id'>,
): { id: string; body: string } {
  // The Vouch envelope carries its own id: the MAC is over the body with that id left empty.
  const id = tag(target, {
    log: notice.log,
    subject: notice.subject,
    body: webhookBody({ ...notice, id: '' }, target.format),
  });
  return { id, body: webhookBody({ ...notice, id }, target.format) };
}

/** True when `delivery` is an alarm delivery a process configured with `target` wrote. */
export function isAlarmDelivery(
  target: WebhookTarget,
  delivery: { id: string; log: string; subject: string; body: string },
): boolean {
  const withoutId = delivery.body.replace(JSON.stringify(delivery.id), '""');
  const expected = Buffer.from(tag(target, { ...delivery, body: withoutId }));
  const stored = Buffer.from(delivery.id);
  return stored.length === expected.length && timingSafeEqual(stored, expected);
}
