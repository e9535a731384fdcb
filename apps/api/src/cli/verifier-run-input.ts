import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Observation, Proposal } from '@vouch/verifier-sdk';
import { z } from 'zod';
import { CliError } from './io';

/**
 * The records `vouch verifier run` verifies, read from files. `--observation FILE` holds either
 * a story (what `GET /v1/proposals/{id}` answers) or a `{ proposal, observation }` pair: both
 * carry the two records under those keys, and everything else in a story is ignored. A file
 * with a bare observation record needs `--proposal FILE` (a bare proposal record, or a story).
 */

const name = z.string().min(1);

// Only what the verifier contract reads (the SDK's Proposal and Observation); the rest of a
// ledger record passes through unchanged, so a story's records are handed over as they are.
const proposalShape = z.looseObject({
  id: name,
  action: name,
  target: z.looseObject({ kind: name, id: name, env: name }),
  arguments: z.record(z.string(), z.unknown()),
  postconditions: z.array(z.looseObject({ name })),
  server_id: name,
  tool_name: name,
});

const observationShape = z.looseObject({
  id: name,
  proposal_id: name.optional(),
  outcome: z.enum(['succeeded', 'failed', 'unknown']),
  result: z.unknown(),
  server_id: name,
  tool_name: name,
});

/** One proposal and the observation of its execution. */
export interface RunInput {
  proposal: Proposal;
  observation: Observation;
}

/** Read `--observation` (and `--proposal`) into the proposal and observation to verify. */
export async function readRunInput(
  cwd: string,
  files: { observation: string; proposal?: string | undefined },
): Promise<RunInput> {
  const document = await readJson(cwd, files.observation, '--observation');
  const carriesProposal = isObject(document) && 'proposal' in document;
  if (carriesProposal && files.proposal !== undefined) {
    throw new CliError(
      `--observation ${files.observation} already holds a proposal (a story or a pair): drop --proposal`,
    );
  }
  if (!carriesProposal && files.proposal === undefined) {
    throw new CliError(
      `--observation ${files.observation} holds no proposal: give a story (GET /v1/proposals/{id}), a { "proposal", "observation" } pair, or --proposal FILE`,
    );
  }
  let proposal: unknown;
  let observation: unknown;
  if (carriesProposal) {
    ({ proposal, observation } = document as { proposal: unknown; observation?: unknown });
    if (observation === null || observation === undefined) {
      throw new CliError(
        `${files.observation}: the story has no observation yet (the tool has not run): there is nothing to verify`,
      );
    }
  } else {
    observation = document;
    const given = await readJson(cwd, files.proposal!, '--proposal');
    proposal = isObject(given) && 'proposal' in given ? given.proposal : given;
  }
  const input = {
    proposal: parse(proposalShape, proposal, 'proposal', files.proposal ?? files.observation),
    observation: parse(observationShape, observation, 'observation', files.observation),
  };
  const claimed = input.observation.proposal_id;
  if (claimed !== undefined && claimed !== input.proposal.id) {
    throw new CliError(
      `the observation ${input.observation.id} is of proposal ${claimed}, not of ${input.proposal.id}`,
    );
  }
  return input as unknown as RunInput;
}

async function readJson(cwd: string, file: string, option: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path.resolve(cwd, file), 'utf8');
  } catch (error) {
    throw new CliError(`${option} ${file}: cannot read it (${(error as NodeJS.ErrnoException).code})`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new CliError(`${option} ${file}: not JSON (${(error as Error).message})`);
  }
}

function parse<T extends z.ZodType>(schema: T, value: unknown, what: string, file: string): z.output<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.map((key) => `/${String(key)}`).join('');
  throw new CliError(`${file}: not a ${what} record: /${what}${field}: ${issue.message}`);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
