import postgres from 'postgres';
const sql = postgres('postgres://postgres@127.0.0.1:5432/vouch_exp', { max: 1 });
const N = 200000; const mode = process.argv[2];
const Q = mode === 'slim' ? `select seq, kind, entity_id, actor, recorded_at, payload, payload_hash, prev_hash, hash, commitment from audit_events where log_id=$1 and seq>$2 and seq<=$3`
 : `select log_id as log, seq, kind, entity_id as entity, actor, recorded_at as at, payload, payload_hash, prev_hash, hash, commitment from audit_events where log_id=$1 and seq>$2 and seq<=$3`;
for (let r = 0; r < 4; r++) {
  const t = performance.now(); const c0 = process.cpuUsage();
  let n = 0;
  for (let after = 0; after < N; after += 10000) {
    const q = sql.unsafe(Q, ['verify-300', after, after + 10000]);
    const rows = mode === 'raw' ? await q.raw() : await q;
    n += rows.length;
  }
  const c = process.cpuUsage(c0);
  console.log(mode, n, Math.round(n / ((performance.now() - t) / 1000)), '/s', 'user', (c.user / n).toFixed(2), 'sys', (c.system / n).toFixed(2));
}
await sql.end();
