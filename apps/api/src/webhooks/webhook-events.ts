// The events are declared with the records (the delivery log's answer names them too).
export { WEBHOOK_EVENTS, type WebhookEvent } from '@vouch/records';

/** How a target wants its body: Vouch's JSON envelope, or a Slack incoming-webhook `{"text": …}`. */
export const WEBHOOK_FORMATS = ['vouch', 'slack'] as const;
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number];
