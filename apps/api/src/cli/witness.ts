import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type Cosigner,
  formatCosignerKey,
  generateCosignerKeys,
  isAuditError,
  isValidKeyName,
  parseCosignerSignerKey,
  readCheckpointUnverified,
  verifyCosignatures,
} from '@vouch/audit';
import { type WitnessReport, witnessLog } from '@vouch/audit/witness';
import { LogIdSchema } from '../schemas/common';
import { defineCommand, defineGroup } from './command';
import { explainFailure } from './errors';
import { CliError, type CliIo, EXIT } from './io';
import { JSON_OPTION, PUBLIC_KEY_OPTION, parseVerifierKeys } from './verify-bundle';
import { saveAtomically } from './verify-since';
import { witnessServeCommand } from './witness-serve';

/** What one round of `vouch witness follow` did. */
export interface FollowReport extends WitnessReport {
  /** The cosignature line this witness made or already held for the newer checkpoint. */
  cosignature: string | null;
  /** Whether the server now serves that cosignature (it was handed in, or was there already). */
  delivered: boolean;
  /** Why the cosignature could not be handed in. */
  delivery_error?: string;
}

const newKeyCommand = defineCommand({
  name: 'vouch witness new-key',
  summary: 'a new witness key (cosignature/v1)',
  description: `Make a new witness key pair (Ed25519, c2sp.org/tlog-cosignature \`cosignature/v1\`, key
type 0x04). The signer key is printed on stdout: keep it secret and give it to
\`vouch witness follow\` as VOUCH_WITNESS_SIGNING_KEY. Its verifier key is printed on stderr:
publish it; the log operator lists it in VOUCH_WITNESS_KEYS, and clients pass it to
\`vouch verify --witness\`.`,
  options: {
    name: {
      type: 'string',
      value: 'NAME',
      required: true,
      help: 'the witness name, a schema-less URL, e.g. witness.example.com/w1',
    },
  },
  async action({ values }, io) {
    const name = values.name;
    if (!name || !isValidKeyName(name))
      throw new CliError(`--name ${name ?? ''} cannot name a key: no spaces or +`);
    const { signerKey, verifierKey } = generateCosignerKeys(name);
    io.err(
      `New witness key. Keep it secret (VOUCH_WITNESS_SIGNING_KEY); publish its verifier key:\n  ${verifierKey}\n`,
    );
    io.out(`${signerKey}\n`);
    return EXIT.OK;
  },
});

const FOLLOW_OPTIONS = {
  url: { type: 'string', value: 'URL', required: true, help: 'the Vouch server, e.g. https://vouch.example' },
  key: { type: 'string', value: 'APIKEY', help: 'an API key with the auditor role (default VOUCH_API_KEY)' },
  log: { type: 'string', value: 'L', required: true, help: 'the log to witness' },
  'public-key': PUBLIC_KEY_OPTION,
  state: {
    type: 'string',
    value: 'DIR',
    required: true,
    help: 'where the witness keeps the last checkpoint it cosigned, per log',
  },
  once: { type: 'boolean', help: 'one round, then exit (for cron); default: follow until stopped' },
  interval: { type: 'string', value: 'S', help: 'seconds between rounds when following (default 60)' },
  json: JSON_OPTION,
} as const;

const followCommand = defineCommand({
  name: 'vouch witness follow',
  summary: 'witness a log: check that it only grows, cosign its checkpoints',
  description: `Follow a log as a witness. Each round gets the log's latest checkpoint and checks it the
way \`vouch verify --since\` does: its signature under --public-key, then the events the
server serves, every hash recomputed, and the Merkle roots at the size this witness last
cosigned and at the new size, and the server's consistency proof between them. A
consistent checkpoint is cosigned (c2sp.org/tlog-cosignature \`cosignature/v1\`, with the
key in VOUCH_WITNESS_SIGNING_KEY), kept in --state, and handed to the server
(POST /v1/logs/L/checkpoints/SIZE/cosignatures), which then serves it with the checkpoint.

A witness never cosigns two different checkpoints of one size, nor one that does not extend
what it cosigned before: that is what lets clients require cosignatures
(\`vouch verify --witness KEY --threshold N\`) against a split view.`,
  options: FOLLOW_OPTIONS,
  footer: `Exit 0: consistent (cosigned and handed in). Exit 1: evidence against the log (FORKED,
TRUNCATED, BROKEN, WITHHELD, PROOF_INVALID, a checkpoint not signed by the log key): nothing
cosigned, and a following witness stops. Exit 2: usage or connection error, or the
cosignature could not be handed in (it is kept and handed in next round).`,
  async action({ values }, io) {
    const settings = followSettings(values, io);
    await mkdir(settings.state, { recursive: true });
    for (;;) {
      let report: FollowReport;
      try {
        report = await followOnce(settings, io);
      } catch (error) {
        const code = isAuditError(error) ? error.code : 'USAGE';
        if (values.json)
          io.out(`${JSON.stringify({ ok: false, error: { code, message: explainFailure(error) } })}\n`);
        if (values.once) throw error;
        io.err(`vouch witness: ${explainFailure(error)}; trying again next round\n`);
        if (await pause(io, settings.intervalMs)) return EXIT.OK;
        continue;
      }
      io.out(values.json ? `${JSON.stringify(report)}\n` : describe(report));
      if (!report.ok) return EXIT.BROKEN;
      if (values.once) return report.delivered ? EXIT.OK : EXIT.USAGE;
      if (await pause(io, settings.intervalMs)) return EXIT.OK;
    }
  },
});

interface FollowSettings {
  url: string;
  apiKey: string;
  log: string;
  verifiers: ReturnType<typeof parseVerifierKeys>;
  cosigner: Cosigner;
  state: string;
  intervalMs: number;
  fetch: NonNullable<CliIo['fetch']>;
}

function followSettings(
  values: { [K in keyof typeof FOLLOW_OPTIONS]?: K extends 'public-key' ? string[] : string | boolean },
  io: CliIo,
): FollowSettings {
  const log = values.log as string;
  if (!LogIdSchema.safeParse(log).success) throw new CliError(`--log ${log} is not a log id`);
  const apiKey = (values.key as string | undefined) ?? io.env.VOUCH_API_KEY?.trim();
  if (!apiKey) throw new CliError('an auditor API key is required: --key APIKEY or VOUCH_API_KEY');
  const signerKey = io.env.VOUCH_WITNESS_SIGNING_KEY?.trim();
  if (!signerKey)
    throw new CliError('VOUCH_WITNESS_SIGNING_KEY is required (make one with `vouch witness new-key`)');
  let cosigner: Cosigner;
  try {
    cosigner = parseCosignerSignerKey(signerKey);
  } catch (error) {
    throw new CliError(`VOUCH_WITNESS_SIGNING_KEY is not a witness signer key: ${(error as Error).message}`);
  }
  const interval = (values.interval as string | undefined) ?? '60';
  if (!/^[0-9]+$/.test(interval) || Number(interval) < 1 || Number(interval) > 86_400) {
    throw new CliError(`--interval ${interval} is not a number of seconds from 1 to 86400`);
  }
  return {
    url: (values.url as string).replace(/\/+$/, ''),
    apiKey,
    log,
    verifiers: parseVerifierKeys(values['public-key'] as string[] | undefined),
    cosigner,
    state: values.state as string,
    intervalMs: Number(interval) * 1000,
    fetch: io.fetch ?? (globalThis.fetch as unknown as NonNullable<CliIo['fetch']>),
  };
}

/** One round: check, cosign, keep, hand in. */
export async function followOnce(settings: FollowSettings, io: CliIo): Promise<FollowReport> {
  const file = join(settings.state, `${settings.log}.checkpoint`);
  const trusted = existsSync(file) ? await readFile(file, 'utf8') : null;
  const common = {
    url: settings.url,
    apiKey: settings.apiKey,
    fetch: settings.fetch,
    verifiers: settings.verifiers,
  };
  const outcome =
    trusted === null
      ? await witnessLog({ ...common, trusted: null, log: settings.log })
      : await witnessLog({ ...common, trusted, log: settings.log });
  const { report } = outcome;
  if (!report.ok || outcome.checkpoint === undefined) {
    return { ...report, cosignature: null, delivered: false };
  }
  const served = outcome.checkpoint;
  const text = served.slice(0, served.lastIndexOf('\n\n') + 1);
  const mine = [formatCosignerKey(settings.cosigner)];
  // The same checkpoint as last round: keep the cosignature already made (one per checkpoint).
  const held = trusted?.startsWith(`${text}\n`) ? ownLine(trusted, text, mine) : undefined;
  const line = held ?? settings.cosigner.cosign(served, Math.floor(Date.now() / 1000));
  if (held === undefined) await saveAtomically(file, served + line);
  if (verifyCosignatures(served, { witnesses: mine, threshold: 1 }).ok) {
    return { ...report, cosignature: line, delivered: true };
  }
  const size = readCheckpointUnverified(served)!.treeSize;
  const delivery = await deliver(settings, size, line);
  if (delivery !== null) io.err(`vouch witness: the cosignature was not handed in: ${delivery}\n`);
  return {
    ...report,
    cosignature: line,
    delivered: delivery === null,
    ...(delivery === null ? {} : { delivery_error: delivery }),
  };
}

/** This witness's own line on a note of checkpoint `text`, if it verifies. */
function ownLine(note: string, text: string, mine: string[]): string | undefined {
  for (const candidate of note.slice(text.length + 1).split('\n')) {
    if (candidate === '') continue;
    const line = `${candidate}\n`;
    if (verifyCosignatures(`${text}\n${line}`, { witnesses: mine, threshold: 1 }).ok) return line;
  }
  return undefined;
}

/** Hand the cosignature to the server; null when it took it, else why not. */
async function deliver(settings: FollowSettings, size: number, line: string): Promise<string | null> {
  const url = `${settings.url}/v1/logs/${encodeURIComponent(settings.log)}/checkpoints/${size}/cosignatures`;
  try {
    const response = await settings.fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${settings.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ cosignatures: [line] }),
      signal: AbortSignal.timeout(30_000),
    });
    if (response.status === 200) return null;
    const body = await response.text().catch(() => '');
    let code = `HTTP ${response.status}`;
    try {
      code = (JSON.parse(body) as { error?: { code?: string } }).error?.code ?? code;
    } catch {
      // Not Vouch's error envelope: the status says enough.
    }
    return code;
  } catch (error) {
    return `no answer (${(error as Error).message})`;
  }
}

/** Wait `ms`, or until the process is asked to stop (then true). */
async function pause(io: CliIo, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stopped = await Promise.race([
    io.stopRequested().then(() => true),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    }),
  ]);
  clearTimeout(timer);
  return stopped;
}

function describe(report: FollowReport): string {
  const lines = [`log ${report.log}: ${report.status} — ${report.message}`];
  if (report.latest)
    lines.push(`  latest: ${report.latest.tree_size} events, root ${report.latest.root_hash}`);
  if (report.cosignature)
    lines.push(
      `  cosigned; ${report.delivered ? 'the server serves it' : `not handed in (${report.delivery_error})`}`,
    );
  for (const f of report.failures) lines.push(`  seq ${f.seq}  ${f.code}  ${f.message}`);
  return `${lines.join('\n')}\n`;
}

/** `vouch witness`: be a witness of a Vouch log. */
export const witnessCommand = defineGroup({
  name: 'vouch witness',
  description:
    'Witness a Vouch log: check that it only grows and cosign its checkpoints (c2sp.org/tlog-cosignature). docs/transparency.md, "Witnesses".',
  commands: [newKeyCommand, followCommand, witnessServeCommand],
});
