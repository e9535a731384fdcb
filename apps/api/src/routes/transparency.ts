import { createRoute, z } from '@hono/zod-openapi';
import { acceptedCosignatures, decodeCosignatureLine, encodeBundle } from '@vouch/audit';
import {
  checkpointAt,
  type Database,
  type IntegrityAlarm,
  latestCheckpoint,
  merkleConsistencyProof,
  merkleInclusionProof,
  requireLog,
  type StoredCheckpoint,
  storeCosignatures,
} from '@vouch/ledger';
import type { Context } from 'hono';
import type { VouchApp } from '../app';
import { assertLog, mayUseLog, requireRole } from '../auth/authorize';
import { ApiError } from '../errors';
import type { AppEnv } from '../http/app-env';
import { jsonBody } from '../http/json-body';
import { LogParamSchema } from '../schemas/audit';
import {
  bearerSecurity,
  bodyErrors,
  commonErrors,
  errorResponseSpec,
  STANDBY_READ_NOTE,
} from '../schemas/common';
import {
  BundleQuerySchema,
  CheckpointParamSchema,
  CheckpointSchema,
  ConsistencyProofSchema,
  ConsistencyQuerySchema,
  CosignaturesAcceptedSchema,
  CosignaturesBodySchema,
  InclusionProofSchema,
  InclusionQuerySchema,
} from '../schemas/transparency';
import { servedCosignatures } from '../transparency/served-cosignatures';
import { firstEvents, SYSTEM_LOG, systemPartLines } from '../transparency/system-part';

// Everything here is read-only and derived from what the append path stored: Merkle nodes
// written in the append transaction, checkpoints signed after it. None of it asks the
// auditor to trust this server: a proof either verifies against a signed root or it does not.

const TEXT = 'text/plain';
// Typed as string: a streamed body is a plain Response, not one of hono's typed answers.
const JSONL: string = 'application/jsonl';
const notFound = errorResponseSpec(
  'No checkpoint yet, or a tree size the log has not reached (`NOT_FOUND`); a log id nothing was ever stored under (`LOG_NOT_FOUND`)',
);

const latest = createRoute({
  method: 'get',
  path: '/v1/logs/{log}/checkpoint',
  tags: ['transparency'],
  summary: 'The latest signed checkpoint of a log (auditor)',
  description: `The newest c2sp.org/tlog-checkpoint of the log's Merkle tree. With \`Accept: ${TEXT}\` the answer is the signed note alone, as transparency-log witnesses expect it. Keep it: \`vouch verify --since\` proves later that the log only grew from it.\n\n${STANDBY_READ_NOTE}`,
  security: bearerSecurity,
  middleware: [requireRole('auditor')] as const,
  request: { params: LogParamSchema },
  responses: {
    200: {
      description: 'The checkpoint',
      content: {
        'application/json': { schema: CheckpointSchema },
        [TEXT]: { schema: z.string() },
      },
    },
    404: notFound,
    ...commonErrors,
  },
});

const atSize = createRoute({
  method: 'get',
  path: '/v1/logs/{log}/checkpoints/{tree_size}',
  tags: ['transparency'],
  summary: 'The signed checkpoint of a log at one tree size (auditor)',
  description: STANDBY_READ_NOTE,
  security: bearerSecurity,
  middleware: [requireRole('auditor')] as const,
  request: { params: CheckpointParamSchema },
  responses: {
    200: {
      description: 'The checkpoint',
      content: {
        'application/json': { schema: CheckpointSchema },
        [TEXT]: { schema: z.string() },
      },
    },
    404: notFound,
    ...commonErrors,
  },
});

const inclusion = createRoute({
  method: 'get',
  path: '/v1/logs/{log}/proofs/inclusion',
  tags: ['transparency'],
  summary: 'Inclusion proof of an event in the Merkle tree (auditor)',
  description: `Verify it with \`verifyInclusion(eventLeafHash(event.hash), seq - 1, tree_size, proof, root)\` from @vouch/audit, where \`root\` comes from a checkpoint at \`tree_size\` that you verified.\n\n${STANDBY_READ_NOTE}`,
  security: bearerSecurity,
  middleware: [requireRole('auditor')] as const,
  request: { params: LogParamSchema, query: InclusionQuerySchema },
  responses: {
    200: { description: 'The proof', content: { 'application/json': { schema: InclusionProofSchema } } },
    404: notFound,
    ...commonErrors,
  },
});

const consistency = createRoute({
  method: 'get',
  path: '/v1/logs/{log}/proofs/consistency',
  tags: ['transparency'],
  summary: 'Consistency proof between two tree sizes (auditor)',
  description: `Proves the tree at \`second\` extends the tree at \`first\`: verify it with \`verifyConsistency(first, second, proof, root1, root2)\` from @vouch/audit.\n\n${STANDBY_READ_NOTE}`,
  security: bearerSecurity,
  middleware: [requireRole('auditor')] as const,
  request: { params: LogParamSchema, query: ConsistencyQuerySchema },
  responses: {
    200: { description: 'The proof', content: { 'application/json': { schema: ConsistencyProofSchema } } },
    404: notFound,
    ...commonErrors,
  },
});

const cosign = createRoute({
  method: 'post',
  path: '/v1/logs/{log}/checkpoints/{tree_size}/cosignatures',
  tags: ['transparency'],
  summary: 'Add witness cosignatures to a checkpoint (auditor)',
  description:
    'A witness that checked this checkpoint hands in its c2sp.org/tlog-cosignature lines (`cosignature/v1`). Each line must be by a witness key the server is configured with (`VOUCH_WITNESS_KEYS`) and verify over the stored checkpoint at `tree_size`; otherwise the request is refused (400 `INVALID_REQUEST`, `details.refused` says which line and why) and nothing is kept. Kept lines are served with the checkpoint from then on (appended to its note), so `vouch verify --witness … --threshold N` can require them. The server trusts nothing here: clients verify every line under the witness keys they trust. Without `VOUCH_WITNESS_KEYS`: 501 `NOT_CONFIGURED`.',
  security: bearerSecurity,
  middleware: [requireRole('auditor'), jsonBody({ required: true })] as const,
  request: {
    params: CheckpointParamSchema,
    body: { required: true, content: { 'application/json': { schema: CosignaturesBodySchema } } },
  },
  responses: {
    200: {
      description: 'Verified and kept',
      content: { 'application/json': { schema: CosignaturesAcceptedSchema } },
    },
    404: notFound,
    501: errorResponseSpec(
      'The server collects no cosignatures: no witness keys configured (`NOT_CONFIGURED`)',
    ),
    ...bodyErrors,
    ...commonErrors,
  },
});

const bundle = createRoute({
  method: 'get',
  path: '/v1/logs/{log}/bundle',
  tags: ['transparency'],
  summary: 'A signed audit bundle of a log up to a checkpoint (auditor)',
  description: `The same \`vouch-bundle/1\` file \`vouch export\` writes, over HTTP: a header, the events 1 … \`tree_size\` (what the stored checkpoint at that size covers; default the latest), and that checkpoint's signed note with every witness cosignature kept for it. A bundle always starts at the first event, because its chain and Merkle root are recomputed from the beginning; \`tree_size\` chooses where it ends. It verifies offline: \`vouch verify --bundle FILE --public-key KEY [--witness KEY --threshold N]\`. Streamed with constant memory.\n\n${STANDBY_READ_NOTE}`,
  security: bearerSecurity,
  middleware: [requireRole('auditor')] as const,
  request: { params: LogParamSchema, query: BundleQuerySchema },
  responses: {
    200: { description: 'The bundle, JSON Lines', content: { [JSONL]: { schema: z.string() } } },
    404: notFound,
    ...commonErrors,
  },
});

function checkpointView(checkpoint: StoredCheckpoint) {
  return {
    log: checkpoint.log,
    origin: checkpoint.note.slice(0, checkpoint.note.indexOf('\n')),
    tree_size: checkpoint.treeSize,
    root_hash: checkpoint.rootHash,
    note: checkpoint.note,
    created_at: checkpoint.createdAt,
  };
}

function answer(c: Context<AppEnv>, checkpoint: StoredCheckpoint) {
  if ((c.req.header('accept') ?? '').includes(TEXT)) {
    return c.text(checkpoint.note, 200, { 'cache-control': 'no-store' });
  }
  return c.json(checkpointView(checkpoint), 200);
}

const hex = (proof: Uint8Array[]) => proof.map((node) => Buffer.from(node).toString('hex'));

/** `/v1/logs/{log}/checkpoint(s)` and `/proofs/…`: signed tree heads and Merkle proofs, for auditors. */
export function registerTransparencyRoutes(
  app: VouchApp,
  deps: {
    /** The primary, where cosignatures are written. */
    database: Database;
    /** Witness verifier keys whose cosignatures are collected; none: collection is off. */
    witnessKeys?: readonly string[];
    /** Raised when a kept cosignature does not verify (see {@link servedCosignatures}). */
    alarm?: IntegrityAlarm;
    /** New cosignatures were kept: the server keeps them in its checkpoint state too. */
    onCosigned?: (log: string, treeSize: number) => Promise<void>;
  },
): void {
  /** The stored note with the kept witness cosignatures that verify appended (c2sp.org/tlog-cosignature). */
  const withCosignatures = async (
    database: Database,
    checkpoint: StoredCheckpoint,
  ): Promise<StoredCheckpoint> => {
    const lines = await servedCosignatures(database, checkpoint, deps.witnessKeys ?? [], deps.alarm);
    return lines.length === 0 ? checkpoint : { ...checkpoint, note: checkpoint.note + lines.join('') };
  };

  /** Run `answer`; when it finds nothing, say whether the log itself is unknown (a typo). */
  const unlessUnknown = async <T>(database: Database, log: string, answer: () => Promise<T>): Promise<T> => {
    try {
      return await answer();
    } catch (error) {
      if ((error as { code?: string }).code === 'NOT_FOUND') await requireLog(database, log);
      throw error;
    }
  };

  const requireLatest = async (database: Database, log: string) => {
    const checkpoint = await latestCheckpoint(database, log);
    if (!checkpoint) {
      await requireLog(database, log);
      throw new ApiError('NOT_FOUND', `log ${log} has no signed checkpoint yet`, { details: { log } });
    }
    return checkpoint;
  };

  app.openapi(latest, async (c) => {
    const { log } = c.req.valid('param');
    assertLog(c.get('principal'), log);
    const { database } = (await c.get('readSide')()).ledger;
    return answer(c, await withCosignatures(database, await requireLatest(database, log)));
  });

  app.openapi(atSize, async (c) => {
    const { log, tree_size } = c.req.valid('param');
    assertLog(c.get('principal'), log);
    const { database } = (await c.get('readSide')()).ledger;
    const checkpoint = await checkpointAt(database, log, tree_size);
    if (!checkpoint) {
      await requireLog(database, log);
      throw new ApiError('NOT_FOUND', `log ${log} has no checkpoint at tree size ${tree_size}`, {
        details: { log, tree_size },
      });
    }
    return answer(c, await withCosignatures(database, checkpoint));
  });

  app.openapi(bundle, async (c) => {
    const { log } = c.req.valid('param');
    assertLog(c.get('principal'), log);
    const size = c.req.valid('query').tree_size;
    const { ledger } = await c.get('readSide')();
    const { database } = ledger;
    const stored =
      size === undefined ? await requireLatest(database, log) : await checkpointAt(database, log, size);
    if (!stored) {
      await requireLog(database, log);
      throw new ApiError('NOT_FOUND', `log ${log} has no checkpoint at tree size ${size}`, {
        details: { log, tree_size: size },
      });
    }
    const checkpoint = await withCosignatures(database, stored);
    // The authors' keys, for the signatures to be judged offline: only for a reader of `system`.
    const systemCheckpoint =
      log !== SYSTEM_LOG && mayUseLog(c.get('principal'), SYSTEM_LOG)
        ? await latestCheckpoint(database, SYSTEM_LOG)
        : null;
    const system = systemCheckpoint ? await systemPartLines(ledger, systemCheckpoint) : undefined;
    const lines = encodeBundle({
      log,
      origin: checkpoint.note.slice(0, checkpoint.note.indexOf('\n')),
      treeSize: checkpoint.treeSize,
      checkpoint: checkpoint.note,
      events: firstEvents(ledger.streamEvents(log), checkpoint.treeSize),
      extra: { exportedAt: new Date().toISOString() },
      ...(system === undefined ? {} : { system }),
    });
    const logger = c.get('logger');
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const next = await lines.next();
          if (next.done) controller.close();
          else controller.enqueue(encoder.encode(`${next.value}\n`));
        } catch (error) {
          logger.error('bundle aborted', { log, error: String(error) });
          controller.error(error);
        }
      },
      async cancel() {
        await lines.return(undefined);
      },
    });
    return new Response(body, {
      status: 200,
      headers: {
        'content-type': 'application/jsonl; charset=utf-8',
        'cache-control': 'no-store',
        'content-disposition': `attachment; filename="${log.replace(/[^A-Za-z0-9._-]/g, '_')}-${checkpoint.treeSize}.jsonl"`,
      },
    });
  });

  app.openapi(cosign, async (c) => {
    const { log, tree_size } = c.req.valid('param');
    assertLog(c.get('principal'), log);
    const witnessKeys = deps.witnessKeys ?? [];
    if (witnessKeys.length === 0) {
      throw new ApiError('NOT_CONFIGURED', 'this server collects no cosignatures: set VOUCH_WITNESS_KEYS');
    }
    const { database } = deps;
    const checkpoint = await checkpointAt(database, log, tree_size);
    if (!checkpoint) {
      await requireLog(database, log);
      throw new ApiError('NOT_FOUND', `log ${log} has no checkpoint at tree size ${tree_size}`, {
        details: { log, tree_size },
      });
    }
    const { cosignatures } = c.req.valid('json');
    const { accepted, refused } = acceptedCosignatures(checkpoint.note, cosignatures, witnessKeys);
    if (refused.length > 0) {
      throw new ApiError(
        'INVALID_REQUEST',
        `${refused.length} cosignature line(s) refused; nothing was kept`,
        {
          details: {
            refused: refused.map((r) => ({ index: cosignatures.indexOf(r.line), reason: r.reason })),
          },
        },
      );
    }
    const createdAt = new Date().toISOString();
    const stored = await storeCosignatures(
      database,
      accepted.map((line) => {
        const read = decodeCosignatureLine(line)!;
        return {
          log,
          treeSize: tree_size,
          witness: read.keyName,
          keyId: read.keyId.toString(16).padStart(8, '0'),
          line,
          createdAt,
        };
      }),
    );
    if (stored > 0 && deps.onCosigned) {
      // The row is what witnesses are served; a state file that did not take it only lacks a copy.
      await deps
        .onCosigned(log, tree_size)
        .catch((error: unknown) =>
          c
            .get('logger')
            .warn('cosignatures not kept in the checkpoint state', { log, error: String(error) }),
        );
    }
    const kept = await withCosignatures(database, checkpoint);
    return c.json({ log, tree_size, accepted: accepted.length, stored, note: kept.note }, 200);
  });

  app.openapi(inclusion, async (c) => {
    const { log } = c.req.valid('param');
    assertLog(c.get('principal'), log);
    const { seq } = c.req.valid('query');
    const { database } = (await c.get('readSide')()).ledger;
    const treeSize = c.req.valid('query').tree_size ?? (await requireLatest(database, log)).treeSize;
    if (seq > treeSize) {
      throw new ApiError('INVALID_REQUEST', `seq ${seq} is not in a tree of ${treeSize} events`, {
        details: { seq, tree_size: treeSize },
      });
    }
    const proof = await unlessUnknown(database, log, () =>
      merkleInclusionProof(database, { log, seq, treeSize }),
    );
    return c.json({ log, seq, leaf_index: seq - 1, tree_size: treeSize, proof: hex(proof) }, 200);
  });

  app.openapi(consistency, async (c) => {
    const { log } = c.req.valid('param');
    assertLog(c.get('principal'), log);
    const { first } = c.req.valid('query');
    const { database } = (await c.get('readSide')()).ledger;
    const second = c.req.valid('query').second ?? (await requireLatest(database, log)).treeSize;
    if (first > second) {
      throw new ApiError('INVALID_REQUEST', `tree size ${first} cannot grow into ${second}`, {
        details: { first, second },
      });
    }
    const proof = await unlessUnknown(database, log, () =>
      merkleConsistencyProof(database, { log, size1: first, size2: second }),
    );
    return c.json({ log, first, second, proof: hex(proof) }, 200);
  });
}
