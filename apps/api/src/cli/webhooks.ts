import { createWebhookStore, type WebhookDeliveryView } from '@vouch/ledger';
import { WebhookDeliveriesQuerySchema } from '../schemas/webhooks';
import { defineCommand, defineGroup } from './command';
import { CliError, EXIT } from './io';
import { withDatabase } from './keys';

function describeDelivery(d: WebhookDeliveryView): string {
  const last = d.attempts.at(-1);
  const lastSaid = last
    ? `  attempt ${last.attempt}: ${[last.outcome ?? 'sending', last.status_code, last.error_code].filter((x) => x !== null).join(' ')}`
    : '';
  return `${d.id}  ${d.status.padEnd(9)}  ${d.target}  ${d.event}  ${d.log}${d.seq === null ? '' : `#${d.seq}`}  ${d.subject}${lastSaid}`;
}

/** `vouch webhooks deliveries`: the delivery log, from the database. */
const deliveriesCommand = defineCommand({
  name: 'vouch webhooks deliveries',
  summary: 'the webhook delivery log: each notification and its attempts',
  description:
    'List webhook deliveries, oldest first, with each attempt (status code, error code, duration). Operational data, not the audit chain; never a URL, secret or signature. Over HTTP: GET /v1/webhooks/deliveries (admin, auditor).',
  options: {
    status: {
      type: 'string',
      value: 'S',
      help: 'pending, sending, retrying, delivered, failed or cancelled',
    },
    target: { type: 'string', value: 'NAME', help: 'only this target' },
    event: { type: 'string', value: 'E', help: 'only this event, e.g. approval.requested' },
    after: { type: 'string', value: 'ID', help: 'continue after this delivery id' },
    limit: { type: 'string', value: 'N', help: 'at most N (default 50, at most 200)' },
    json: { type: 'boolean', help: 'print the page as JSON (as the API answers)' },
  },
  footer: 'Reads DATABASE_URL or VOUCH_DATA_DIR directly (while `vouch serve` runs on PGlite, use the API).',
  async action({ values }, io) {
    // The same schema the API validates its query with.
    const checked = WebhookDeliveriesQuerySchema.safeParse({
      ...(values.status ? { status: values.status } : {}),
      ...(values.target ? { target: values.target } : {}),
      ...(values.event ? { event: values.event } : {}),
      ...(values.after ? { after: values.after } : {}),
      ...(values.limit ? { limit: values.limit } : {}),
    });
    if (!checked.success) {
      const issue = checked.error.issues[0]!;
      throw new CliError(
        `--${String(issue.path[0] ?? '')}: ${issue.message} (see vouch webhooks deliveries --help)`,
      );
    }
    const { limit = 50, ...filters } = checked.data;
    return withDatabase(io, async (database) => {
      const page = await createWebhookStore(database).listDeliveries({ logs: null, limit, ...filters });
      if (values.json) io.out(`${JSON.stringify(page, null, 2)}\n`);
      else {
        for (const delivery of page.deliveries) io.out(`${describeDelivery(delivery)}\n`);
        if (page.next) io.err(`more: --after ${page.next}\n`);
      }
      return EXIT.OK;
    });
  },
});

/** `vouch webhooks …`. */
export const webhooksCommand = defineGroup({
  name: 'vouch webhooks',
  description: 'Outbound webhooks (configured in vouch.config.json; docs/webhooks.md).',
  commands: [deliveriesCommand],
});
