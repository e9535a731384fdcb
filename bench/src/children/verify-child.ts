// A separate process whose peak RSS is the figure: verify (or only read) one log of events
// and print one JSON line with the counts and the memory high-water marks.
import { createHash } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { verifyBundle } from '@vouch/audit';
import { verifyBundleFile } from '@vouch/audit/node';
import { createLedger, openDatabase } from '@vouch/ledger';
import postgres from 'postgres';
import { bundleLines } from '../bundle-file';

const { values } = parseArgs({
  options: {
    mode: { type: 'string' },
    path: { type: 'string' },
    verifier: { type: 'string' },
    url: { type: 'string' },
    log: { type: 'string' },
    'early-at': { type: 'string' },
    'half-at': { type: 'string' },
    'page-size': { type: 'string' },
    threads: { type: 'string' },
  },
});
const earlyAt = Number(values['early-at'] ?? 100_000);
const halfAt = Number(values['half-at'] ?? 500_000);
const pageSize = Number(values['page-size'] ?? 10_000);
/**
 * This process's peak RSS in MiB. VmHWM, not getrusage's ru_maxrss: on Linux ru_maxrss
 * survives exec, so a child would report its parent's high-water mark.
 */
const maxRssMiB = () => {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
  return Number(match ? match[1] : process.resourceUsage().maxRSS) / 1024;
};
let earlyMaxRssMiB = 0;
let halfMaxRssMiB = 0;
const onProgress = (checked: number) => {
  if (checked <= earlyAt) earlyMaxRssMiB = maxRssMiB();
  if (checked <= halfAt) halfMaxRssMiB = maxRssMiB();
};

const start = performance.now();
let checked = 0;
switch (values.mode) {
  case 'bundle': {
    const report = await verifyBundle(bundleLines(values.path!), {
      verifiers: [values.verifier!],
      onProgress,
      progressEvery: 10_000,
    });
    if (!report.ok) throw new Error(`bundle does not verify: ${JSON.stringify(report.failures.slice(0, 3))}`);
    checked = report.checked;
    break;
  }
  case 'bundle-file': {
    // As `vouch verify --bundle` does: parts of the file on worker threads.
    const report = await verifyBundleFile(values.path!, {
      verifiers: [values.verifier!],
      threads: Number(values.threads ?? 2),
      onProgress,
    });
    if (!report.ok) throw new Error(`bundle does not verify: ${JSON.stringify(report.failures.slice(0, 3))}`);
    checked = report.checked;
    break;
  }
  case 'bundle-sha256': {
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(values.path!, { highWaterMark: 1 << 20 })) {
      hash.update(chunk as Buffer);
    }
    hash.digest();
    break;
  }
  case 'database': {
    const database = await openDatabase({ url: values.url!, maxConnections: 2 });
    const ledger = createLedger(database);
    const report = await ledger.verifyChain({ log: values.log!, onProgress, pageSize });
    if (!report.ok) throw new Error(`chain does not verify: ${JSON.stringify(report.failures.slice(0, 3))}`);
    checked = report.checked;
    await ledger.close();
    await database.close();
    break;
  }
  case 'database-read': {
    // The plain keyset read: same seq-range pages, same columns, nothing done with the rows.
    const sql = postgres(values.url!, { max: 1, onnotice: () => {} });
    for (let after = 0; ; after += pageSize) {
      const page = await sql.unsafe(
        `select log_id, seq, kind, entity_id, actor, recorded_at, payload, payload_hash, prev_hash, hash
           from audit_events where log_id = $1 and seq > $2 and seq <= $3`,
        [values.log!, after, after + pageSize],
      );
      if (page.length === 0) break;
      checked += page.length;
    }
    await sql.end();
    break;
  }
  default:
    throw new Error(`unknown mode ${values.mode}`);
}
const seconds = (performance.now() - start) / 1000;
console.log(JSON.stringify({ checked, seconds, maxRssMiB: maxRssMiB(), earlyMaxRssMiB, halfMaxRssMiB }));
