// Authority decisions: the cost per record of a compiled policy's decision (the migration and read
// paths ask one per record), and of verifying a signed policy (once per setPolicy and open).
// Medians and p90 from bench/harness.mjs; writes
// bench/results/authority-<arch>[-emulated]-<runtime>-<date>[-n].json.
//
//   node bench/authority.mjs [--out report.json]

import { generateSigner, signPolicy, verifyPolicy } from '../dist/node.js';
import { compilePolicy } from '../dist/crypto/policy.js';
import { hostInfo, measure, fmtTime, saveReport } from './harness.mjs';

const args = process.argv.slice(2);
const outArg = args.includes('--out') ? args[args.indexOf('--out') + 1] : undefined;

const authority = generateSigner();
const rules = [
  { scope: 'billing', allow: ['read', 'write', 'migrate', 'restore'] },
  { scope: 'hr', purposes: ['payroll', 'audit'], allow: ['read'] },
  { scope: 'public', allow: ['read', 'migrate'] },
  ...Array.from({ length: 60 }, (_, i) => ({ scope: `team-${i}`, allow: i % 2 ? ['read'] : ['read', 'migrate'] })),
  { scope: '*', allow: ['read'] },
];
const signed = signPolicy({ version: 1, rules }, authority.secretKey, authority.publicKey);
const decider = compilePolicy(verifyPolicy(signed, [authority.publicKey]));
// Records as a migration meets them: mixed scopes (some unruled), some with a purpose.
const scopes = Array.from(
  { length: 4096 },
  (_, i) => ['billing', 'hr', 'public', `team-${i % 60}`, `other-${i % 9}`][i % 5],
);
const purposes = Array.from({ length: 4096 }, (_, i) => (i % 3 === 0 ? 'payroll' : undefined));
let i = 0;
const PER_CALL = 1024;
const decision = measure(() => {
  let n = 0;
  for (let k = 0; k < PER_CALL; k++, i = (i + 1) & 4095) if (decider.allows('migrate', scopes[i], purposes[i])) n++;
  return n;
});
const verify = measure(() => verifyPolicy(signed, [authority.publicKey]));

const results = [
  {
    name: 'decision (compiled policy, per record)',
    medianNs: decision.median / PER_CALL,
    p90Ns: decision.p90 / PER_CALL,
  },
  { name: 'verifyPolicy (one ML-DSA-87 signature)', medianNs: verify.median, p90Ns: verify.p90 },
];
for (const r of results)
  console.log(`${r.name.padEnd(44)} median ${fmtTime(r.medianNs).padStart(10)}   p90 ${fmtTime(r.p90Ns).padStart(10)}`);
const host = hostInfo();
const out = saveReport('authority', { host, rules: rules.length, signedBytes: signed.length, results }, outArg);
console.log(`signed policy of ${rules.length} rules: ${signed.length} B; report: ${out}`);
