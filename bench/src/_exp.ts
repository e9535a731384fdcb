import { openDatabase, migrate, createLedger, signLogCheckpoint } from '@vouch/ledger';
import { generateNoteKeys, parseSignerKey } from '@vouch/audit';
import { chainedEvents, loadEvents } from './dataset';
import postgres from 'postgres';
const URL_ = 'postgres://postgres@127.0.0.1:5432/vouch_exp';
const mode = process.argv[2];
const N = 200_000;
const log = 'verify-300';
if (mode === 'load') {
  const admin = postgres('postgres://postgres@127.0.0.1:5432/postgres', { max: 1 });
  await admin.unsafe('drop database if exists vouch_exp with (force)');
  await admin.unsafe('create database vouch_exp');
  await admin.end();
  const database = await openDatabase({ url: URL_ });
  await migrate(database);
  await loadEvents(database, chainedEvents({ log, count: N, payloadBytes: 300 }), { merkle: true });
  const origin = `bench.vouch.example/log/${log}`;
  const keys = generateNoteKeys(origin);
  await signLogCheckpoint(database, { log, origin: () => origin, signers: [parseSignerKey(keys.signerKey)] });
  await import('node:fs').then((fs) => fs.writeFileSync('/tmp/exp/keys.json', JSON.stringify({ ...keys, origin })));
  await database.close();
} else if (mode === 'select') {
  const sql = postgres(URL_, { max: 1 });
  for (let r = 0; r < 3; r++) {
    const t = performance.now();
    let n = 0;
    for (let after = 0; after < N; after += 10000) {
      const rows = await sql.unsafe(`select log_id as log, seq, kind, entity_id as entity, actor, recorded_at as at, payload, payload_hash, prev_hash, hash, commitment from audit_events where log_id=$1 and seq>$2 and seq<=$3`, [log, after, after + 10000]);
      n += rows.length; if (r===0 && after < 30000) console.log('page', after, rows.length);
    }
    console.log('select', n, Math.round(n / ((performance.now() - t) / 1000)), '/s', process.cpuUsage());
  }
  await sql.end();
} else if (mode === 'copy') {
  const sql = postgres(URL_, { max: 1 });
  for (let r = 0; r < 3; r++) {
    const t = performance.now();
    let n = 0;
    for (let after = 0; after < N; after += 10000) {
      const stream = await sql.unsafe(`copy (select seq, kind, entity_id, actor, recorded_at, payload, payload_hash, prev_hash, hash, commitment from audit_events where log_id='${log}' and seq>${after} and seq<=${after + 10000}) to stdout (format binary)`).readable();
      const chunks: Buffer[] = [];
      for await (const c of stream) chunks.push(c as Buffer);
      const buf = Buffer.concat(chunks); if (after===0 && r===0) console.log('buf', buf.length);
      let p = 19; // header
      const rows: any[] = [];
      for (;;) {
        const nf = buf.readInt16BE(p); p += 2;
        if (nf === -1) break;
        const f: (string | null)[] = [];
        let seq = 0;
        for (let i = 0; i < nf; i++) {
          const len = buf.readInt32BE(p); p += 4;
          if (len === -1) { f.push(null); continue; }
          if (i === 0) { seq = Number(buf.readBigInt64BE(p)); f.push(null); }
          else f.push(buf.latin1Slice ? buf.utf8Slice(p, p + len) : buf.toString('utf8', p, p + len));
          p += len;
        }
        rows.push({ seq, kind: f[1], entity: f[2], actor: f[3], at: f[4], payload: f[5], payload_hash: f[6], prev_hash: f[7], hash: f[8] });
      }
      n += rows.length; if (r===0 && after < 30000) console.log('page', after, rows.length);
    }
    console.log('copy', n, Math.round(n / ((performance.now() - t) / 1000)), '/s', process.cpuUsage());
  }
  await sql.end();
}
