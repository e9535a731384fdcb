import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  type Cosigner,
  formatCosignerKey,
  parseCosignerSignerKey,
  parseVerifierKey,
  readCheckpointUnverified,
} from '@vouch/audit';
import { addCheckpoint, type WitnessStateStore } from '@vouch/audit/witness';
import { defineCommand } from './command';
import { CliError, EXIT } from './io';
import { saveAtomically } from './verify-since';

/** Largest `add-checkpoint` body read: 63 proof lines and a note of 100 signatures fit well under it. */
const MAX_BODY = 64 * 1024;

/**
 * The witness's state in a directory: one file per log origin (named by the origin's
 * SHA-256), holding the note it last cosigned. One process serves a directory: compare and
 * write run one at a time, as c2sp.org/tlog-witness requires (no rollback between requests).
 */
export function directoryWitnessState(dir: string): WitnessStateStore {
  const fileOf = (origin: string) =>
    join(dir, `${createHash('sha256').update(origin).digest('hex')}.checkpoint`);
  let queue: Promise<unknown> = Promise.resolve();
  const read = async (origin: string) => {
    const file = fileOf(origin);
    if (!existsSync(file)) return null;
    const note = await readFile(file, 'utf8');
    const checkpoint = readCheckpointUnverified(note);
    if (checkpoint === undefined) throw new Error(`${file} does not hold a checkpoint`);
    return { treeSize: checkpoint.treeSize, rootHash: checkpoint.rootHash, note };
  };
  return {
    get: read,
    replace: (origin, expectedSize, next) => {
      const run = queue.then(async () => {
        if (((await read(origin))?.treeSize ?? 0) !== expectedSize) return false;
        await saveAtomically(fileOf(origin), next.note);
        return true;
      });
      queue = run.catch(() => {});
      return run;
    },
  };
}

/** `vouch witness serve`: the c2sp.org/tlog-witness `add-checkpoint` endpoint. */
export const witnessServeCommand = defineCommand({
  name: 'vouch witness serve',
  summary: 'serve c2sp.org/tlog-witness add-checkpoint for the logs given',
  description: `Run a witness that logs (or anyone) submit checkpoints to, as in c2sp.org/tlog-witness:
POST /add-checkpoint with "old <size>", the consistency proof lines, an empty line and the
signed checkpoint. It cosigns (cosignature/v1, VOUCH_WITNESS_SIGNING_KEY) a checkpoint that
is signed by a key of its log and proven to extend the one it cosigned last, and answers
404 (unknown origin), 403 (no trusted signature), 400, 409 (text/x.tlog.size: the size it
holds), 422 (proof does not verify). Each --log-key is a log verifier key named after the
log's checkpoint origin (\`vouch keys log-public --log L\`). Plain HTTP: put TLS in front.`,
  options: {
    listen: { type: 'string', value: 'HOST:PORT', help: 'where to listen (default 127.0.0.1:7380)' },
    state: {
      type: 'string',
      value: 'DIR',
      required: true,
      help: 'where the last cosigned checkpoint of each log is kept',
    },
    'log-key': {
      type: 'string',
      value: 'KEY',
      multiple: true,
      help: "a log's verifier key, named after its origin (repeatable)",
    },
  },
  async action({ values }, io) {
    const signerKey = io.env.VOUCH_WITNESS_SIGNING_KEY?.trim();
    if (!signerKey)
      throw new CliError('VOUCH_WITNESS_SIGNING_KEY is required (make one with `vouch witness new-key`)');
    let cosigner: Cosigner;
    try {
      cosigner = parseCosignerSignerKey(signerKey);
    } catch (error) {
      throw new CliError(
        `VOUCH_WITNESS_SIGNING_KEY is not a witness signer key: ${(error as Error).message}`,
      );
    }
    const logs = new Map<string, string[]>();
    for (const key of values['log-key'] ?? []) {
      try {
        parseVerifierKey(key);
      } catch (error) {
        throw new CliError(`--log-key ${key} is not a log verifier key: ${(error as Error).message}`);
      }
      const origin = key.slice(0, key.indexOf('+'));
      logs.set(origin, [...(logs.get(origin) ?? []), key]);
    }
    if (logs.size === 0) throw new CliError('--log-key KEY is required: the logs this witness cosigns');
    const listen = /^(.+):([0-9]{1,5})$/.exec(values.listen ?? '127.0.0.1:7380');
    if (!listen) throw new CliError(`--listen ${values.listen} is not HOST:PORT`);
    await mkdir(values.state!, { recursive: true });
    const state = directoryWitnessState(values.state!);
    const server = createServer(async (request, response) => {
      if (request.method !== 'POST' || request.url !== '/add-checkpoint') {
        response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
        return;
      }
      try {
        const body = await readBody(request);
        if (body === undefined) {
          response.writeHead(413, { 'content-type': 'text/plain' }).end('body too large\n');
          return;
        }
        const answer = await addCheckpoint(body, { logs, cosigner, state, now: () => Date.now() / 1000 });
        response.writeHead(answer.status, { 'content-type': answer.contentType }).end(answer.body);
      } catch (error) {
        io.err(`vouch witness serve: ${(error as Error).message}\n`);
        response.writeHead(500, { 'content-type': 'text/plain' }).end('internal error\n');
      }
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(Number(listen[2]), listen[1], resolve);
    });
    const address = server.address() as AddressInfo;
    io.err(`witness ${formatCosignerKey(cosigner)} for ${[...logs.keys()].join(', ')}\n`);
    io.out(`listening on http://${address.address}:${address.port}\n`);
    await io.stopRequested();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return EXIT.OK;
  },
});

async function readBody(request: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
