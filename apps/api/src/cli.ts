import { canonicalJson } from '@vouch/audit';

console.log(canonicalJson({ b: 1, a: [true, null] }), process.argv.slice(2));
