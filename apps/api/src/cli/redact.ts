import { redactFields } from '@vouch/ledger';
import { RedactionRequestSchema } from '../schemas/audit';
import { defineCommand } from './command';
import { CliError, EXIT } from './io';
import { CLI_ACTOR, withStore } from './keys';

/** `vouch redact`: erase fields of a field-committed event, as an audited event. */
export const redactCommand = defineCommand({
  name: 'vouch redact',
  summary: 'erase fields of an event (e.g. an erasure request), keeping every proof valid',
  description: `Erase the value and salt of the named top-level fields of event SEQ of log L, and append an
\`event.redacted\` event (by ${CLI_ACTOR}: whoever can open the database) naming the event,
the fields and the reason, in one transaction. Only events written under a field
commitment can be redacted (docs/chain.md, "Erasing a field"): fields/1 events, and the
keys of a proposal's arguments, an observation's result, a decision's repair or a
refused execution's body (member-fields/1: the story lists the record's event seq); the chain, the Merkle tree
and every signed checkpoint verify as before, and \`vouch verify\` lists the redaction.
Over HTTP: POST /v1/logs/{log}/events/{seq}/redactions with a \`redactor\` key.`,
  options: {
    log: { type: 'string', value: 'L', help: 'the log (required)' },
    seq: { type: 'string', value: 'SEQ', help: 'the event whose fields to erase (required)' },
    field: {
      type: 'string',
      value: 'NAME',
      multiple: true,
      help: 'a top-level field to erase (repeatable, required)',
    },
    reason: {
      type: 'string',
      value: 'TEXT',
      help: 'why (required); kept in the chain for good, so name the\nrequest (a ticket), not the person',
    },
    json: { type: 'boolean', help: 'print the redaction as JSON' },
  },
  footer: `Exit 0: erased. Exit 2: refused (EVENT_NOT_FOUND, EVENT_NOT_REDACTABLE, FIELD_NOT_FOUND,
FIELD_ALREADY_REDACTED, REDACTION_INVALID, SELF_REDACTION) or usage error; nothing was written.
Storage: DATABASE_URL (Postgres), else PGlite in VOUCH_DATA_DIR (default ./.vouch/data).`,
  async action({ values }, io) {
    if (values.log === undefined) throw new CliError('--log is required');
    if (values.seq === undefined || !/^[1-9][0-9]{0,15}$/.test(values.seq)) {
      throw new CliError('--seq must be the positive seq of the event');
    }
    // The same schema the HTTP API validates with, so the CLI cannot write what the API refuses.
    const checked = RedactionRequestSchema.safeParse({ fields: values.field ?? [], reason: values.reason });
    if (!checked.success) {
      const issue = checked.error.issues[0]!;
      const flag = issue.path[0] === 'fields' ? '--field' : '--reason';
      throw new CliError(`${flag}: ${issue.message} (see vouch redact --help)`);
    }
    const log = values.log;
    const seq = Number(values.seq);
    return withStore(io, async ({ ledger }) => {
      const result = await redactFields(ledger, { log, seq, ...checked.data, actor: CLI_ACTOR });
      if (values.json) {
        io.out(
          `${JSON.stringify({ log, target: result.target, fields: result.fields, event: result.event }, null, 2)}\n`,
        );
      } else {
        io.out(
          `log ${log}: erased ${result.fields.join(', ')} of event ${seq}; redaction recorded as event ${result.event.seq}\n`,
        );
      }
      return EXIT.OK;
    });
  },
});
