import { createRecords } from '@vouch/ledger';
import { serverKeyOf } from '../transparency/server-key';
import { defineCommand } from './command';
import { EXIT } from './io';
import { withStore } from './keys';

/** `vouch sweep`: record every lapsed execution claim as `unknown`, once, and exit. */
export const sweepCommand = defineCommand({
  name: 'vouch sweep',
  summary: 'record lapsed execution claims as unknown outcomes, once',
  description: `Record an observation with outcome \`unknown\` (by vouch:claim-sweeper) for every execution
claim past its deadline with no observation: a gateway authorized the call and never said
what happened. Such a proposal is never run again. \`vouch serve\` does this every
VOUCH_CLAIM_SWEEP_INTERVAL_MS; this command is the same sweep, run once. Safe to run while
servers sweep too: each claim gets one outcome.`,
  options: {
    log: { type: 'string', value: 'L', help: 'only this log (default: every log)' },
    json: { type: 'boolean', help: 'print the observations written as JSON' },
  },
  footer: 'Storage: DATABASE_URL (Postgres), else PGlite in VOUCH_DATA_DIR (default ./.vouch/data).',
  action: ({ values }, io) =>
    withStore(io, async ({ ledger, target }) => {
      // The sweeper's observations are the server's own: signed with its key, as `vouch serve` signs them.
      const serverKey = serverKeyOf(io.env, target);
      const records = createRecords(ledger, serverKey ? { serverKey } : {});
      const swept: Awaited<ReturnType<typeof records.sweepLapsedClaims>> = [];
      // One page at a time (oldest deadline first) until none is left.
      for (;;) {
        const page = await records.sweepLapsedClaims(values.log === undefined ? {} : { log: values.log });
        swept.push(...page);
        if (page.length === 0) break;
      }
      if (values.json) io.out(`${JSON.stringify(swept, null, 2)}\n`);
      else {
        for (const o of swept) io.out(`${o.proposal_id}  unknown  (${o.id})\n`);
        io.err(`${swept.length} lapsed execution claim(s) recorded as unknown\n`);
      }
      return EXIT.OK;
    }),
});
