import path from 'node:path';
import {
  type Check,
  type Logger,
  type Postcondition,
  runVerifiers,
  type VerificationOutcome,
  type VerifierRegistry,
} from '@vouch/verifier-sdk';
import { loadVerifierConfig } from '@vouch/verifiers';
import { defineCommand } from './command';
import { CliError, type CliIo, EXIT } from './io';
import { readRunInput } from './verifier-run-input';

/**
 * `vouch verifier run`: the configured verifiers, run once for one observation against the live
 * sources, as `vouch serve` would run them, with no server, keys or database. For plugin
 * authors and operators trying a configuration; nothing is recorded.
 */
export const verifierRunCommand = defineCommand({
  name: 'vouch verifier run',
  summary: 'run the configured verifiers for one observation, without a server',
  description: `Load the verifiers of --config as \`vouch serve\` does (same validation, plugins in
their own worker with only their grants), run them once for the proposal and observation in
--observation against the live sources, and print every check. Nothing is recorded and no server,
key or database is needed.

--observation FILE holds a story (what GET /v1/proposals/{id} answers) or a
{ "proposal": …, "observation": … } pair; a file with a bare observation record needs
--proposal FILE (a proposal record or a story).`,
  options: {
    config: { type: 'string', value: 'FILE', required: true, help: 'vouch.config.json (or .ts/.js)' },
    observation: {
      type: 'string',
      value: 'FILE',
      required: true,
      help: 'a story, a { proposal, observation } pair, or an observation record',
    },
    proposal: {
      type: 'string',
      value: 'FILE',
      help: 'the proposal, when --observation holds only an observation',
    },
    verifier: {
      type: 'string',
      value: 'NAME',
      help: 'run only this registration (its name, default its id)',
    },
    postcondition: {
      type: 'string',
      value: 'NAME',
      help: "check only this one of the proposal's postconditions",
    },
    writes: {
      type: 'string',
      multiple: true,
      value: 'SYSTEM',
      help: 'a system the tool writes to (its registration\'s "writes"); repeat for more',
    },
    json: { type: 'boolean', help: 'print { status, checks, writers } as JSON' },
  },
  footer: `Exit codes: 0 every check passed; 1 a check failed; 3 inconclusive (no check failed, but
not every one passed: a source could not be read, no verifier, not independent); 2 usage or
configuration error.`,
  async action({ values }, io) {
    if (values.config === undefined) throw new CliError('--config FILE is required');
    if (values.observation === undefined) throw new CliError('--observation FILE is required');
    const input = await readRunInput(io.cwd, { observation: values.observation, proposal: values.proposal });
    const loaded = await loadVerifierConfig(path.resolve(io.cwd, values.config), { env: io.env });
    try {
      const selected = select(loaded.registry, input.proposal.postconditions, values);
      const stop = new AbortController();
      void io.stopRequested().then(() => stop.abort());
      const outcome = await runVerifiers({
        registry: selected.registry,
        postconditions: selected.postconditions,
        proposal: input.proposal,
        observation: input.observation,
        ...(values.writes ? { writes: values.writes } : {}),
        logger: stderrLogger(io),
        signal: stop.signal,
      });
      io.out(values.json ? `${JSON.stringify(outcome, null, 2)}\n` : describeOutcome(outcome));
      return outcome.status === 'passed'
        ? EXIT.OK
        : outcome.status === 'failed'
          ? EXIT.FAILED
          : EXIT.INCONCLUSIVE;
    } finally {
      await loaded.close();
    }
  },
});

/** The registrations and postconditions `--verifier` and `--postcondition` leave. */
function select(
  registry: VerifierRegistry,
  declared: readonly Postcondition[],
  values: { verifier?: string | undefined; postcondition?: string | undefined },
): { registry: VerifierRegistry; postconditions: Postcondition[] } {
  let postconditions = [...declared];
  if (values.postcondition !== undefined) {
    postconditions = postconditions.filter((p) => p.name === values.postcondition);
    if (postconditions.length === 0) {
      throw new CliError(
        `--postcondition ${values.postcondition}: the proposal has no such postcondition (it has: ${namesOf(declared.map((p) => p.name))})`,
      );
    }
  }
  if (values.verifier === undefined) return { registry, postconditions };
  const entry = registry.get(values.verifier);
  if (entry === undefined) {
    throw new CliError(
      `--verifier ${values.verifier}: the configuration has no such verifier (it has: ${namesOf(registry.entries.map((e) => e.name))})`,
    );
  }
  const only: VerifierRegistry = {
    entries: [entry],
    forPostcondition: (name, phase) => registry.forPostcondition(name, phase).filter((e) => e === entry),
    get: (name) => (name === entry.name ? entry : undefined),
  };
  postconditions = postconditions.filter((p) => only.forPostcondition(p.name, 'post').length > 0);
  if (postconditions.length === 0) {
    throw new CliError(`--verifier ${values.verifier}: it answers none of the postconditions selected`);
  }
  return { registry: only, postconditions };
}

function namesOf(names: readonly string[]): string {
  return names.length === 0 ? 'none' : names.join(', ');
}

/** Verifiers' warnings and errors on stderr, where they do not mix with the result. */
function stderrLogger(io: CliIo): Logger {
  const line = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    io.err(`${level}: ${message}${fields ? ` ${JSON.stringify(fields)}` : ''}\n`);
  return { debug: () => {}, info: () => {}, warn: line('warn'), error: line('error') };
}

const COLUMNS = ['VERIFIER', 'POSTCONDITION', 'STATUS', 'SOURCE', 'REASON', 'MESSAGE'] as const;

/** A table of the checks, one line each, then the derived status. */
export function describeOutcome(outcome: VerificationOutcome): string {
  const rows = outcome.checks.map((check) => rowOf(check));
  const widths = COLUMNS.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const counts = ['pass', 'fail', 'inconclusive', 'error']
    .map((status) => [status, outcome.checks.filter((c) => c.status === status).length] as const)
    .filter(([, n]) => n > 0)
    .map(([status, n]) => `${n} ${status}`);
  return `${[line(COLUMNS), ...rows.map(line)].join('\n')}\n\nstatus: ${outcome.status}${counts.length > 0 ? ` (${counts.join(', ')})` : ' (no checks)'}\n`;
}

function rowOf(check: Check): string[] {
  const status =
    check.reported && check.reported !== check.status
      ? `${check.status} (said ${check.reported})`
      : check.status;
  return [
    check.verifier?.name ?? '-',
    check.postcondition,
    status,
    check.source ?? '-',
    check.reason ?? '-',
    check.message.replaceAll(/\s+/g, ' ') || '-',
  ];
}
