import { openDatabase, verifyChain } from '@vouch/ledger';
import { readFileSync } from 'node:fs';
const keys = JSON.parse(readFileSync('/tmp/exp/keys.json', 'utf8'));
const database = await openDatabase({ url: 'postgres://postgres@127.0.0.1:5432/vouch_exp', maxConnections: 10 });
const parts = process.env.SEQ === '1' ? false : process.env.THREADS ? { threads: Number(process.env.THREADS) } : undefined;
for (let r = 0; r < Number(process.argv[2] ?? 3); r++) {
  const t = performance.now();
  const c0 = process.cpuUsage();
  const report = await verifyChain(database, { log: 'verify-300', pageSize: Number(process.env.PAGE ?? 10000), checkpointKeys: { verifiers: [keys.verifierKey], origin: keys.origin }, ...(parts !== undefined ? { parts } : {}) });
  const c = process.cpuUsage(c0);
  const s = (performance.now() - t) / 1000;
  console.log(report.ok, report.checked, Math.round(report.checked / s), '/s', 'cpu us/event', ((c.user + c.system) / report.checked).toFixed(1));
}
await database.close();
