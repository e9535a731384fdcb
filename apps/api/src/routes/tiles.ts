import { createRoute, z } from '@hono/zod-openapi';
import { latestCheckpoint, readTile, requireLog, TILE_WIDTH } from '@vouch/ledger';
import type { Context } from 'hono';
import type { VouchApp } from '../app';
import { assertLog, assertRole } from '../auth/authorize';
import { ApiError } from '../errors';
import type { AppEnv } from '../http/app-env';
import type { ReadRouter } from '../read-routing';
import { LogParamSchema } from '../schemas/audit';
import { bearerSecurity, commonErrors, errorResponseSpec, LogIdSchema } from '../schemas/common';
import { servedCosignatures } from '../transparency/served-cosignatures';

const checkpointRoute = createRoute({
  method: 'get',
  path: '/tlog/{log}/checkpoint',
  tags: ['transparency'],
  summary: 'The latest checkpoint, c2sp.org/tlog-tiles (auditor, or public)',
  description:
    'The latest signed checkpoint note of the log with its witness cosignatures, as c2sp.org/tlog-tiles clients read it, beside the tiles at `/tlog/{log}/tile/<L>/<N>[.p/<W>]` and the entry bundles at `/tlog/{log}/tile/entries/<N>[.p/<W>]` (docs/transparency.md). Needs an auditor key unless the server runs with `VOUCH_TILES_PUBLIC=true`.',
  security: bearerSecurity,
  request: { params: LogParamSchema },
  responses: {
    200: { description: 'The signed note', content: { 'text/plain': { schema: z.string() } } },
    404: errorResponseSpec('No checkpoint yet (`NOT_FOUND`), or no such log (`LOG_NOT_FOUND`)'),
    ...commonErrors,
  },
});

// c2sp.org/tlog-tiles, read side, one prefix per log: `/tlog/<log>/`.
//
//   GET /tlog/<log>/checkpoint                      the latest checkpoint note, with cosignatures
//   GET /tlog/<log>/tile/<L>/<N>[.p/<W>]            hashes at height 8·L, nodes N·256 …
//   GET /tlog/<log>/tile/entries/<N>[.p/<W>]        the event hashes (leaf inputs) of leaves N·256 …
//
// <N> is written in groups of three digits, every group but the last prefixed with `x`
// (1234067 → x001/x234/067). Standard monitors and witnesses read a log through these; they
// need no Vouch API. Whether they need a key is configuration (VOUCH_TILES_PUBLIC).

const TILE_PATH = /^(entries|0|[1-9][0-9]?)\/((?:x[0-9]{3}\/)*[0-9]{3})(?:\.p\/([1-9][0-9]{0,2}))?$/;

/** A tile path after `tile/` into its level, index and width; undefined when it is not one. */
export function parseTilePath(
  path: string,
): { level: number | 'entries'; index: number; width: number } | undefined {
  const match = TILE_PATH.exec(path);
  if (!match) return undefined;
  const [, level, index, partial] = match as unknown as [string, string, string, string | undefined];
  const width = partial === undefined ? TILE_WIDTH : Number(partial);
  if (partial !== undefined && width >= TILE_WIDTH) return undefined;
  const digits = index.replaceAll('x', '').replaceAll('/', '');
  const n = Number(digits);
  if (!Number.isSafeInteger(n) || (index.includes('/') && index.startsWith('x000'))) return undefined;
  return { level: level === 'entries' ? 'entries' : Number(level), index: n, width };
}

/** `/tlog/<log>/…`: the tiles of each log, public or for auditors (see `createApp`'s `tiles`). */
export function registerTileRoutes(
  app: VouchApp,
  deps: {
    reads: ReadRouter;
    public: boolean;
    /** Witness keys: only the kept cosignatures that verify with one are served. */
    witnessKeys?: readonly string[];
  },
): void {
  const logOf = (c: Context<AppEnv>) => {
    const log = c.req.param('log') ?? '';
    if (!LogIdSchema.safeParse(log).success) throw new ApiError('NOT_FOUND', `no log ${log}`);
    if (!deps.public) {
      assertRole(c.get('principal'), ['auditor']);
      assertLog(c.get('principal'), log);
    }
    return log;
  };

  app.openapi(checkpointRoute, async (c) => {
    const log = logOf(c);
    const { database, integrityAlarm } = (await deps.reads.choose()).ledger;
    const checkpoint = await latestCheckpoint(database, log);
    if (!checkpoint) {
      await requireLog(database, log);
      throw new ApiError('NOT_FOUND', `log ${log} has no signed checkpoint yet`, { details: { log } });
    }
    const lines = await servedCosignatures(database, checkpoint, deps.witnessKeys ?? [], integrityAlarm);
    return c.text(checkpoint.note + lines.join(''), 200, { 'cache-control': 'no-store' });
  });

  app.get('/tlog/:log/tile/*', async (c) => {
    const log = logOf(c);
    const rest = c.req.path.slice(c.req.path.indexOf('/tile/') + '/tile/'.length);
    const tile = parseTilePath(rest);
    if (tile === undefined) {
      throw new ApiError('NOT_FOUND', `${rest} is not a tile path: <L>/<N>[.p/<W>] or entries/<N>[.p/<W>]`);
    }
    const { database } = (await deps.reads.choose()).ledger;
    const checkpoint = await latestCheckpoint(database, log);
    const bytes =
      checkpoint === null ? null : await readTile(database, { log, ...tile, treeSize: checkpoint.treeSize });
    if (bytes === null) {
      await requireLog(database, log);
      throw new ApiError('NOT_FOUND', `log ${log} has no tile ${rest} in its latest checkpoint`, {
        details: { log, tile: rest },
      });
    }
    // A full tile never changes; a partial one is replaced by a wider one as the log grows.
    const cache = tile.width === TILE_WIDTH ? 'max-age=31536000, immutable' : 'no-cache';
    return c.body(bytes, 200, {
      'content-type': 'application/octet-stream',
      'cache-control': deps.public ? `public, ${cache}` : `private, ${cache}`,
    });
  });
}
