import { parseArgs } from 'node:util';

/** Sizes and switches for one benchmark run; `--quick` shrinks every size for a smoke run. */
export interface BenchOptions {
  quick: boolean;
  /** Which backends to run: PGlite always, Postgres when DATABASE_URL is set (or `--backend`). */
  backends: Array<'pglite' | 'postgres'>;
  databaseUrl: string | undefined;
  /** Payload sizes in bytes of canonical JSON. */
  payloads: number[];
  /** Concurrent writers for the closed-loop append throughput runs. */
  writers: number[];
  /** Measured window of each throughput point, after `warmupMs`. */
  durationMs: number;
  warmupMs: number;
  /**
   * Warm-up before each measured window against a server process (http-append): its JIT
   * takes seconds, and CPU per request in the first seconds was twice the steady state's.
   */
  serverWarmupMs: number;
  /** Offered loads (appends/s) for the open-loop latency runs, and how long each runs. */
  rates: number[];
  latencyMs: number;
  /** Events in the chain-verification datasets (database and bundle). */
  verifyEvents: number;
  /** Events verified by the child process whose peak RSS is reported (and a 10x smaller run beside it). */
  rssEvents: number;
  /** Events in the Merkle proof dataset (Postgres; PGlite a tenth). */
  proofEvents: number;
  /** Scenario names to run (default: all). */
  only: Set<string> | null;
  /** Where JSON results go. */
  outDir: string;
  /** Where the HTTP server process writes its CPU profile (`--cpu-prof`), or null for none. */
  profileDir: string | null;
  /** http-append on Postgres: also serve with this many node:cluster workers, beside 1 (default 1: not). */
  workers: number;
}

export const SCENARIOS = [
  'append-throughput',
  'append-latency',
  'verify-database',
  'verify-bundle',
  'verify-memory',
  'http-append',
  'read-check',
  'gateway-overhead',
  'proofs',
] as const;

const HELP = `npm run bench -- [options]

  --quick                 small sizes, about a minute (smoke run)
  --backend <list>        pglite,postgres (default: pglite, and postgres when DATABASE_URL is set)
  --payloads <list>       payload sizes in bytes (default 300,2048)
  --writers <list>        concurrent writers (default 1,8,64,256)
  --duration <ms>         measured window per throughput point
  --server-warmup <ms>    warm-up before each window against the HTTP server (default 3000)
  --rates <list>          offered loads for the latency runs, appends/s (default 100,1000)
  --latency-duration <ms> length of each latency run
  --verify-events <n>     events in the verification datasets
  --rss-events <n>        events verified in the peak-RSS child (default 1000000)
  --proof-events <n>      events in the Merkle proof dataset (default 1000000; PGlite a tenth)
  --scenarios <list>      run only these: ${SCENARIOS.join(', ')}
  --out <dir>             JSON results directory (default bench/results)
  --profile <dir>         write a CPU profile of the HTTP server process (http-append) to <dir>
  --workers <n>           http-append on Postgres: also measure a server of n node:cluster
                          workers (vouch serve --workers n), beside 1 worker in the same run
`;

/** The options from `argv` (the root `npm run bench -- …` forwards its flags here). */
export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): BenchOptions | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
      backend: { type: 'string' },
      payloads: { type: 'string' },
      writers: { type: 'string' },
      duration: { type: 'string' },
      'server-warmup': { type: 'string' },
      rates: { type: 'string' },
      'latency-duration': { type: 'string' },
      'verify-events': { type: 'string' },
      'rss-events': { type: 'string' },
      'proof-events': { type: 'string' },
      scenarios: { type: 'string' },
      out: { type: 'string' },
      profile: { type: 'string' },
      workers: { type: 'string' },
    },
    strict: true,
  });
  if (values.help) return 'help';
  const quick = values.quick ?? false;
  const databaseUrl = env.DATABASE_URL || undefined;
  const backends = values.backend
    ? (list(values.backend) as BenchOptions['backends'])
    : databaseUrl
      ? (['pglite', 'postgres'] as const).slice()
      : (['pglite'] as const).slice();
  for (const backend of backends) {
    if (backend !== 'pglite' && backend !== 'postgres') throw new Error(`unknown backend ${backend}`);
    if (backend === 'postgres' && !databaseUrl) throw new Error('--backend postgres needs DATABASE_URL');
  }
  const only = values.scenarios ? new Set(list(values.scenarios)) : null;
  for (const name of only ?? []) {
    if (!(SCENARIOS as readonly string[]).includes(name)) throw new Error(`unknown scenario ${name}`);
  }
  return {
    quick,
    backends,
    databaseUrl,
    payloads: values.payloads ? numbers(values.payloads) : [300, 2048],
    writers: values.writers ? numbers(values.writers) : [1, 8, 64, 256],
    durationMs: values.duration ? Number(values.duration) : quick ? 800 : 2_500,
    warmupMs: quick ? 200 : 500,
    serverWarmupMs: values['server-warmup'] ? Number(values['server-warmup']) : quick ? 500 : 3_000,
    rates: values.rates ? numbers(values.rates) : [100, 1000],
    latencyMs: values['latency-duration'] ? Number(values['latency-duration']) : quick ? 1_000 : 5_000,
    verifyEvents: values['verify-events'] ? Number(values['verify-events']) : quick ? 20_000 : 200_000,
    rssEvents: values['rss-events'] ? Number(values['rss-events']) : quick ? 100_000 : 1_000_000,
    proofEvents: values['proof-events'] ? Number(values['proof-events']) : quick ? 20_000 : 1_000_000,
    only,
    outDir: values.out ?? new URL('../results', import.meta.url).pathname,
    profileDir: values.profile ?? null,
    workers: values.workers ? Number(values.workers) : 1,
  };
}

export function helpText(): string {
  return HELP;
}

function list(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function numbers(text: string): number[] {
  return list(text).map((s) => {
    const n = Number(s);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`not a positive number: ${s}`);
    return n;
  });
}
