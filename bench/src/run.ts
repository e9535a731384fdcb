// `npm run bench`: every figure beside a baseline measured in the same run. See BENCHMARKS.md.
import { cpus, loadavg, totalmem } from 'node:os';
import { type BenchDatabase, openBenchDatabase, serverFacts } from './backends';
import { helpText, parseOptions } from './options';
import { type Figure, formatTable, writeResults } from './report';
import { appendLatency } from './scenarios/append-latency';
import { appendThroughput } from './scenarios/append-throughput';
import { gatewayOverhead } from './scenarios/gateway-overhead';
import { httpAppend } from './scenarios/http-append';
import { proofs } from './scenarios/proofs';
import { readCheck } from './scenarios/read-check';
import { verifyBundleFile } from './scenarios/verify-bundle';
import { verifyDatabase } from './scenarios/verify-database';
import { verifyMemory } from './scenarios/verify-memory';

const parsed = parseOptions(process.argv.slice(2), process.env);
if (parsed === 'help') {
  console.log(helpText());
  process.exit(0);
}
const options = parsed;

const wanted = (name: string) => options.only === null || options.only.has(name);
const figures: Figure[] = [];
const servers: Record<string, Record<string, string>> = {};
const started = Date.now();
const step = async (label: string, work: () => Promise<Figure[]>) => {
  const t = Date.now();
  process.stdout.write(`${label}… `);
  const result = await work();
  // What else ran beside it: the 1-minute load average as the step ends, beside each figure.
  const load = loadavg()[0]!;
  figures.push(...result.map((f) => ({ ...f, load })));
  console.log(`${((Date.now() - t) / 1000).toFixed(0)} s`);
};

/** Each backend's scenarios run on a fresh database of their own, dropped afterwards. */
async function withDatabase<T>(
  backend: 'pglite' | 'postgres',
  work: (bench: BenchDatabase) => Promise<T>,
): Promise<T> {
  const bench = await openBenchDatabase(backend, options.databaseUrl);
  try {
    return await work(bench);
  } finally {
    await bench.close();
  }
}

for (const backend of options.backends) {
  if (backend === 'postgres') {
    servers.postgres = await withDatabase(backend, (bench) => serverFacts(bench.database));
  }
  if (wanted('append-throughput')) {
    await step(`[${backend}] append throughput`, () =>
      withDatabase(backend, (bench) => appendThroughput(bench, backend, options)),
    );
  }
  if (wanted('append-latency')) {
    await step(`[${backend}] append latency`, () =>
      withDatabase(backend, (bench) => appendLatency(bench, backend, options)),
    );
  }
  if (wanted('http-append')) {
    await step(`[${backend}] append over HTTP`, () =>
      withDatabase(backend, (bench) => httpAppend(bench, backend, options)),
    );
  }
  if (wanted('gateway-overhead')) {
    await step(`[${backend}] MCP tool calls, direct and through the gateway`, () =>
      withDatabase(backend, (bench) => gatewayOverhead(bench, backend, options)),
    );
  }
  if (wanted('read-check')) {
    await step(`[${backend}] record reads checked against their events`, () =>
      withDatabase(backend, (bench) => readCheck(bench, backend, options)),
    );
  }
  if (wanted('proofs')) {
    // PGlite runs Postgres in WebAssembly on this thread: a tenth of the events.
    const events = backend === 'pglite' ? Math.ceil(options.proofEvents / 10) : options.proofEvents;
    await step(`[${backend}] Merkle proofs and checkpoint signing`, () =>
      withDatabase(backend, (bench) => proofs(bench, backend, options, events)),
    );
  }
  if (wanted('verify-database')) {
    await step(`[${backend}] verify from the database`, () =>
      withDatabase(backend, (bench) => verifyDatabase(bench, backend, options)),
    );
  }
}
if (wanted('verify-bundle')) {
  await step('[file] verify a bundle', () => verifyBundleFile(options));
}
if (wanted('verify-memory')) {
  await step(`[file${options.backends.includes('postgres') ? ', postgres' : ''}] peak RSS verifying`, () =>
    options.backends.includes('postgres')
      ? withDatabase('postgres', (bench) => verifyMemory(bench, options))
      : verifyMemory(undefined, options),
  );
}

console.log();
console.log(formatTable(figures));
const machine = {
  nproc: cpus().length,
  cpu: cpus()[0]?.model,
  memoryGiB: Math.round(totalmem() / 2 ** 30),
  node: process.version,
};
const path = writeResults(options.outDir, {
  startedAt: new Date(started).toISOString(),
  seconds: (Date.now() - started) / 1000,
  options: { ...options, only: options.only ? [...options.only] : null },
  machine,
  servers,
  figures,
});
console.log(`\n${figures.length} figures in ${((Date.now() - started) / 1000).toFixed(0)} s; JSON: ${path}`);
