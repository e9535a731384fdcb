import postgres from 'postgres';
const sql = postgres('postgres://postgres@127.0.0.1:5432/vouch_exp', { max: 1 });
const stream = await sql.unsafe(`copy (select seq, kind, commitment from audit_events where log_id='verify-300' and seq<=2) to stdout (format binary)`).readable();
const chunks: Buffer[] = [];
for await (const c of stream) chunks.push(c as Buffer);
const buf = Buffer.concat(chunks);
console.log(buf.toString('hex'));
await sql.end();
