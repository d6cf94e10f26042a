// verifyStore's time and memory on a store with many checkpoints: N records written in commits of
// --batch records, a signed checkpoint after every --every records (and after the last), then the
// store is verified (with the secret key and the
// signer public key) in a fresh process whose peak RSS is read from the OS (getrusage maxrss).
// The heap figure is the largest V8 heap + ArrayBuffer total seen at verifyStore's progress calls
// and once after it returns (sampled, so a lower bound on the true peak).
//
//   node bench/verify-memory.mjs [--records 32000] [--every 100] [--batch 100] [--store dir] [--out report.json]
//   (default report: bench/results/verify-memory-<arch>[-emulated]-<runtime>-<date>[-n].json)
//
// --store keeps the store in `dir` (created when missing, reused when present) so several builds
// can be measured on the same bytes.

import { mkdtempSync, rmSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import { openStore, generateRecipient, generateSigner, openNodeFsPageStore, verifyStore } from '../dist/node.js';

const args = process.argv.slice(2);
const arg = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const MiB = (b) => +(b / 2 ** 20).toFixed(1);

if (args[0] === '--child') {
  // The measured process: open the store read-only and verify it once.
  const { dir, unlock, signerPublicKey } = JSON.parse(args[1]);
  const pages = await openNodeFsPageStore(dir, { readOnly: true });
  const heapNow = () => {
    const m = process.memoryUsage();
    return m.heapUsed + m.arrayBuffers;
  };
  const rssBefore = process.memoryUsage().rss;
  const heapBefore = heapNow();
  let heapPeak = heapBefore;
  const t0 = performance.now();
  const report = await verifyStore(pages, {
    unlock: Buffer.from(unlock, 'base64'),
    signerPublicKey: Buffer.from(signerPublicKey, 'base64'),
    onProgress: () => (heapPeak = Math.max(heapPeak, heapNow())),
  });
  const ms = performance.now() - t0;
  heapPeak = Math.max(heapPeak, heapNow());
  await pages.close();
  const maxRss = process.resourceUsage().maxRSS * 1024;
  process.stdout.write(
    JSON.stringify({
      ok: report.ok,
      complete: report.complete,
      problems: report.problems.length,
      counts: report.counts,
      ms: Math.round(ms),
      rssBeforeMiB: MiB(rssBefore),
      peakRssMiB: MiB(maxRss),
      peakRssAboveStartMiB: MiB(maxRss - rssBefore),
      heapPeakAboveStartMiB: MiB(heapPeak - heapBefore),
    }),
  );
  process.exit(0);
}

const N = Number(arg('--records', 32_000));
const EVERY = Number(arg('--every', 100));
const BATCH = Number(arg('--batch', Math.min(EVERY, 100)));
const kept = arg('--store', undefined);
const dir = kept ?? mkdtempSync(join(tmpdir(), 'pqdb-verify-bench-'));
const keysFile = join(dir, '..', `${dir.split('/').pop()}.keys.json`);

let keys;
if (kept !== undefined && existsSync(join(dir, 'MANIFEST')) && existsSync(keysFile)) {
  keys = JSON.parse((await import('node:fs')).readFileSync(keysFile, 'utf8'));
} else {
  const recipient = generateRecipient('classical');
  const signer = generateSigner();
  const t0 = performance.now();
  const store = await openStore({
    location: dir,
    create: true,
    recipients: [recipient.publicKey],
    unlock: recipient.secretKey,
    signer: signer.secretKey,
    signerPublicKey: signer.publicKey,
    autoCheckpoint: false,
  });
  const words = store.collection('words', { schema: { lemma: 'string', n: 'integer' } });
  let checkpoints = 0;
  for (let at = 0; at < N; at += BATCH) {
    const end = Math.min(N, at + BATCH);
    await store.batch((tx) => {
      for (let i = at; i < end; i++) tx.put(words, `w${i}`, { lemma: `word ${i}`, n: i });
    });
    if (end === N || Math.floor(end / EVERY) > Math.floor(at / EVERY)) {
      await store.checkpoint();
      checkpoints++;
    }
  }
  await store.close();
  keys = {
    unlock: Buffer.from(recipient.secretKey).toString('base64'),
    signerPublicKey: Buffer.from(signer.publicKey).toString('base64'),
  };
  if (kept !== undefined) writeFileSync(keysFile, JSON.stringify(keys));
  console.error(
    `wrote ${N} records in ${Math.ceil(N / BATCH)} commits, ${checkpoints} checkpoints in ${Math.round(performance.now() - t0)} ms`,
  );
}

const child = spawnSync(
  process.execPath,
  [fileURLToPath(import.meta.url), '--child', JSON.stringify({ dir, ...keys })],
  { encoding: 'utf8', maxBuffer: 1 << 24 },
);
if (child.status !== 0) {
  process.stderr.write(child.stderr);
  process.exit(1);
}
// The harness is loaded here, in the parent only, so that the measured child's memory stays as it was.
const { hostInfo, saveReport } = await import('./harness.mjs');
const result = {
  host: hostInfo(),
  records: N,
  checkpointEvery: EVERY,
  batch: BATCH,
  node: process.version,
  ...JSON.parse(child.stdout),
};
console.log(JSON.stringify(result, null, 2));
const out = arg('--out', undefined);
console.error(`report: ${saveReport('verify-memory', result, out)}`);
if (kept === undefined) rmSync(dir, { recursive: true, force: true });
