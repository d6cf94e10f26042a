// The component microbenchmark's measuring code, shared by Node (bench/component.mjs), Chromium
// (bench/component-browser.mjs) and its small test (node-tests/component-bench.test.ts). It uses no
// Node built-in: pqdb is loaded from a dist/ URL and the clock is passed in.
//
// Method (the industry article's, on pqdb's real code path):
//   - Two arms that differ only in how the key generation's 32-byte root is established: the
//     classical arm wraps it in an X25519 key envelope, the PQC arm in the ML-KEM-1024 + X25519
//     hybrid envelope (src/crypto/envelope.ts). Each arm wraps its root once, unwraps it with the
//     recipient's secret key, derives the data key as the store's key ring does
//     (deriveDataKey(root, generation salt, suite, generation, governance "{}")) and expands it once
//     with gcmsiv.withKey, the keyed AEAD the store caches per (suite, generation, governance).
//   - One 115-byte record, sealed and opened with AES-256-GCM-SIV under the store's nonce
//     (0^4 ‖ be64(sequence)) and record AAD (16-byte header ‖ be16(|collection|) ‖ collection ‖
//     be16(|id|) ‖ id); operation i has its own sequence and id, as consecutive writes of a store.
//     The AAD is checked against sealRecord's output, so it is the store's byte for byte.
//   - 16 warm-up operations per arm and direction, then `ops` operations each timed on its own. The
//     arms alternate operation by operation in ABBA order (even i: classical then PQC; odd i: PQC
//     then classical) so drift hits both alike; all encryptions run first, then the decryptions of
//     their ciphertexts. Encryption writes into the record's slot (as a commit seals into its page);
//     decryption returns a new plaintext (as a read does).
//   - Besides the keyed AEAD, two extra rows on the same schedule: the one-shot
//     gcmsiv(key, nonce, aad).encrypt()/decrypt(), and the store's whole sealRecord/openRecord path
//     (header, AAD and argument checks included).
//   - Batched figures beside the per-operation ones: samples of `batch` back-to-back operations,
//     the arms alternating sample by sample, reported as time per operation. A single operation lasts
//     about as long as a browser clock tick; a batch lasts many.
//   - Byte accounting from real objects: ciphertexts, envelopes, a signed checkpoint over a real
//     Merkle tree of `leaves` sealed records, an inclusion proof from it and a sealed export that
//     verifies.

/** The article's figures, printed beside pqdb's. */
export const ARTICLE = Object.freeze({
  recordBytes: 115,
  aead: 'AES-256-GCM-SIV',
  warmup: 16,
  ops: 2000,
  medianNs: {
    'x86_64 (WSL2)': { encrypt: { classical: 451, pqc: 451 }, decrypt: { classical: 441, pqc: 441 } },
    Graviton3: { encrypt: { classical: 1172, pqc: 1171 }, decrypt: { classical: 1188, pqc: 1188 } },
  },
  ciphertextBytes: { classical: 131, pqc: 131 },
  /** ML-KEM-1024 ciphertext + wrapped key, per recipient. */
  envelopeSubtotalBytes: 1616,
  signatureBytesPerBatch: 4627,
});

export const DEFAULTS = Object.freeze({
  ops: 2000,
  warmup: 16,
  /** Operations per batched sample. */
  batch: 100,
  /** Leaves of the Merkle tree the proof and checkpoint come from. */
  leaves: 100_000,
  recordBytes: 115,
  suite: 'gcmsiv-hkdf384',
  generation: 1,
  collection: 'records',
  /** Back-to-back clock reads of the clock probe. */
  clockReads: 100_000,
  /**
   * Only the first leaf is a sealed record's, the others random hashes: the tree, proof and
   * checkpoint have the same shape and sizes, without sealing and hashing every record (tests).
   */
  syntheticLeaves: false,
  /** Which arm's keys are established (and its objects made) first: 'classical' or 'pqc'. */
  establishFirst: 'classical',
});

/**
 * The drivers' options from their command line (`--quick`, `--ops`, `--batch`, `--leaves`,
 * `--warmup`, `--establish-first`).
 * @param {string[]} args
 */
export function componentOptions(args) {
  const arg = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
  const quick = args.includes('--quick');
  const num = (name, fallback) => {
    const v = Number(arg(name, fallback));
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`${name} expected a positive integer`);
    return v;
  };
  return {
    ops: num('--ops', quick ? 200 : DEFAULTS.ops),
    batch: num('--batch', quick ? 20 : DEFAULTS.batch),
    leaves: num('--leaves', quick ? 10_000 : DEFAULTS.leaves),
    warmup: num('--warmup', DEFAULTS.warmup),
    establishFirst: arg('--establish-first', DEFAULTS.establishFirst),
  };
}

export const ARMS = Object.freeze(['classical', 'pqc']);
export const ARM_LABELS = Object.freeze({ classical: 'classical (X25519)', pqc: 'PQC (ML-KEM-1024 + X25519)' });
export const VARIANTS = Object.freeze(['keyed', 'oneShot', 'store']);
export const VARIANT_LABELS = Object.freeze({
  keyed: 'gcmsiv.withKey(dataKey).encrypt/decrypt (the store’s keyed AEAD)',
  oneShot: 'gcmsiv(dataKey, nonce, aad).encrypt/decrypt (one-shot)',
  store: 'sealRecord/openRecord (the store’s whole record path)',
});

/**
 * Loads the pieces of pqdb the benchmark uses from a built dist/ directory (a URL ending in '/').
 * The files come from one esbuild graph, so they share one set of WebAssembly instances.
 */
export async function loadPqdb(distBase) {
  const at = (f) => new URL(f, distBase).href;
  const [api, crypto, proofs] = await Promise.all([
    import(at('record-api.js')),
    import(at('crypto.js')),
    import(at('crypto/proofs.js')),
  ]);
  return { api, crypto, proofs };
}

/** Node's clock: process.hrtime.bigint(), in nanoseconds. */
export function hrtimeClock() {
  const read = globalThis.process.hrtime.bigint;
  return { name: 'process.hrtime.bigint()', read, diffNs: (a, b) => Number(b - a) };
}

/** The browser's clock: performance.now(), in milliseconds (its resolution depends on isolation). */
export function performanceClock() {
  const perf = globalThis.performance;
  return { name: 'performance.now()', read: () => perf.now(), diffNs: (a, b) => (b - a) * 1e6 };
}

/**
 * The clock's resolution and cost. resolutionNs: the smallest non-zero difference of consecutive
 * reads (over `reads` back-to-back pairs and 200 waits for the next tick); medianTickNs: the median
 * of those waits' steps; emptyRegionNs: what a timed region with nothing in it measures (median and
 * mean of the pairs), the overhead every per-operation sample carries; readNs: one read's cost.
 */
export function probeClock(clock, reads = DEFAULTS.clockReads) {
  const { read, diffNs } = clock;
  const pairs = new Float64Array(reads);
  for (let i = 0; i < reads; i++) {
    const a = read();
    const b = read();
    pairs[i] = diffNs(a, b);
  }
  const ticks = new Float64Array(200);
  for (let k = 0; k < ticks.length; k++) {
    const a = read();
    let b = read();
    for (let spins = 0; diffNs(a, b) === 0 && spins < 1e7; spins++) b = read();
    ticks[k] = diffNs(a, b);
  }
  const t0 = read();
  for (let i = 0; i < reads; i++) read();
  const readNs = diffNs(t0, read()) / (reads + 1);
  let resolution = Infinity;
  let zeros = 0;
  for (const d of pairs) {
    if (d === 0) zeros++;
    else if (d > 0 && d < resolution) resolution = d;
  }
  for (const d of ticks) if (d > 0 && d < resolution) resolution = d;
  const empty = summarize(pairs);
  return {
    clock: clock.name,
    resolutionNs: round(resolution, 1),
    medianTickNs: round(summarize(ticks).median, 1),
    emptyRegionNs: { median: round(empty.median, 1), mean: round(empty.mean, 1) },
    zeroPairFraction: round(zeros / reads, 4),
    readNs: round(readNs, 1),
    reads,
  };
}

/** median (mean of the middle two for an even count), p90 (nearest rank), mean, min, max. */
export function summarize(samples) {
  const s = Float64Array.from(samples).sort();
  const n = s.length;
  if (n === 0) return { n: 0, median: NaN, p90: NaN, mean: NaN, min: NaN, max: NaN };
  let sum = 0;
  for (const x of s) sum += x;
  const median = n % 2 === 1 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  return { n, median, p90: s[Math.ceil(0.9 * n) - 1], mean: sum / n, min: s[0], max: s[n - 1] };
}

function round(x, digits = 0) {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

function check(cond, what) {
  if (!cond) throw new Error(`component bench: ${what}`);
}

function equal(a, b) {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i] ^ b[i];
  return d === 0;
}

const enc = new TextEncoder();
const randomBytes = (n) => globalThis.crypto.getRandomValues(new Uint8Array(n));

/** A 115-byte (or `bytes`-byte) JSON record, the same every run. */
export function makeRecord(bytes = DEFAULTS.recordBytes) {
  const head = '{"id":"c-000042","name":"Ada Lovelace","email":"ada@example.org","role":"analyst","note":"';
  const tail = '"}';
  check(bytes >= head.length + tail.length, `a record needs at least ${head.length + tail.length} bytes`);
  const note = 'first analytical engine'.padEnd(bytes - head.length - tail.length, '.');
  const r = enc.encode(head + note.slice(0, bytes - head.length - tail.length) + tail);
  check(r.length === bytes, 'record length');
  return r;
}

/** The store's record header: version 1 ‖ suite ‖ flags 0 ‖ 0 ‖ be32(generation) ‖ be64(sequence). */
function headerOf(suiteId, generation, sequence) {
  const h = new Uint8Array(16);
  const dv = new DataView(h.buffer);
  h[0] = 1;
  h[1] = suiteId;
  dv.setUint32(4, generation);
  dv.setUint32(8, Math.floor(sequence / 2 ** 32));
  dv.setUint32(12, sequence >>> 0);
  return h;
}

/** The store's record AAD: header ‖ be16(|collection|) ‖ collection ‖ be16(|id|) ‖ id. */
function aadOf(header, collection, id) {
  const c = enc.encode(collection);
  const i = enc.encode(id);
  const out = new Uint8Array(header.length + 4 + c.length + i.length);
  out.set(header);
  let at = header.length;
  out[at++] = c.length >> 8;
  out[at++] = c.length & 0xff;
  out.set(c, at);
  at += c.length;
  out[at++] = i.length >> 8;
  out[at++] = i.length & 0xff;
  out.set(i, at);
  return out;
}

/** The store's nonce: 0^4 ‖ be64(sequence). */
function nonceOf(sequence) {
  const n = new Uint8Array(12);
  const dv = new DataView(n.buffer);
  dv.setUint32(4, Math.floor(sequence / 2 ** 32));
  dv.setUint32(8, sequence >>> 0);
  return n;
}

const idOf = (i) => `r${String(i).padStart(6, '0')}`;

/**
 * One arm's key establishment, as a store does it for a key generation: a random root wrapped for
 * one recipient (`type` 'classical' or 'hybrid'), unwrapped with the recipient's secret key, the
 * data key derived from it and expanded once for the keyed AEAD.
 */
function establish(pq, clock, type, o) {
  const { api, crypto } = pq;
  const t = [clock.read()];
  const recipient = api.generateRecipient(type);
  t.push(clock.read());
  const root = randomBytes(32);
  const envelope = api.wrapRoot(root, recipient.publicKey, o.suite, o.generation);
  t.push(clock.read());
  const unwrapped = api.unwrapRoot(envelope, recipient.secretKey);
  t.push(clock.read());
  check(equal(unwrapped, root), `${type} envelope unwraps to its root`);
  const salt = randomBytes(32); // the generation's salt, kept in the manifest
  const dataKey = api.deriveDataKey(unwrapped, salt, o.suite, o.generation);
  t.push(clock.read());
  const aead = crypto.gcmsiv.withKey(dataKey);
  t.push(clock.read());
  const ns = (k) => round(clock.diffNs(t[k], t[k + 1]));
  return {
    type,
    recipient,
    root,
    envelope,
    dataKey,
    aead,
    keyed: { key: dataKey, aead },
    establishNs: { keygen: ns(0), wrap: ns(1), unwrap: ns(2), deriveDataKey: ns(3), withKey: ns(4) },
  };
}

/** Per-operation inputs shared by both arms: operation i is the write of sequence base + i. */
function opInputs(n, o, suiteId) {
  const base = 1000;
  const inputs = { ids: [], nonces: [], aads: [], headers: [], addresses: [] };
  for (let i = 0; i < n; i++) {
    const sequence = base + i;
    const id = idOf(i);
    const header = headerOf(suiteId, o.generation, sequence);
    inputs.ids.push(id);
    inputs.headers.push(header);
    inputs.nonces.push(nonceOf(sequence));
    inputs.aads.push(aadOf(header, o.collection, id));
    inputs.addresses.push({ collection: o.collection, id, generation: o.generation, sequence, salt: undefined });
  }
  return inputs;
}

/** Per-op timing of `fn(arm, i)` for both arms, ABBA-interleaved, after `warmup` untimed ops each. */
function timePerOp(clock, arms, ops, warmup, fn) {
  const { read, diffNs } = clock;
  const samples = arms.map(() => new Float64Array(ops));
  for (let w = 0; w < warmup; w++) for (const arm of arms) fn(arm, w % ops);
  for (let i = 0; i < ops; i++) {
    for (let j = 0; j < 2; j++) {
      const k = (i & 1) === 0 ? j : 1 - j;
      const arm = arms[k];
      const t0 = read();
      fn(arm, i);
      const t1 = read();
      samples[k][i] = diffNs(t0, t1);
    }
  }
  return samples;
}

/** Batched timing: samples of `batch` ops, the arms alternating sample by sample (ABBA). */
function timeBatched(clock, arms, ops, batch, fn) {
  const { read, diffNs } = clock;
  const count = Math.max(1, Math.floor(ops / batch));
  const samples = arms.map(() => new Float64Array(count));
  for (let s = 0; s < count; s++) {
    for (let j = 0; j < 2; j++) {
      const k = (s & 1) === 0 ? j : 1 - j;
      const arm = arms[k];
      const first = (s * batch) % ops;
      const t0 = read();
      for (let b = 0; b < batch; b++) fn(arm, (first + b) % ops);
      const t1 = read();
      samples[k][s] = diffNs(t0, t1) / batch;
    }
  }
  return samples;
}

function stats(samples, digits) {
  const s = summarize(samples);
  return {
    median: round(s.median, 1),
    p90: round(s.p90, 1),
    mean: round(s.mean, 1),
    min: round(s.min, 1),
    max: round(s.max, 1),
    n: s.n,
    // Medians of the first, second, third and last quarter of the samples, in order: the drift
    // (V8 tiering JavaScript and WebAssembly up, a shared machine's load) over the run.
    quarterMedians: [0, 1, 2, 3].map((q) =>
      round(summarize(samples.subarray(Math.floor((q * s.n) / 4), Math.floor(((q + 1) * s.n) / 4))).median, 1),
    ),
    samplesNs: Array.from(samples, (x) => round(x, digits)),
  };
}

/**
 * Runs the whole benchmark with the pqdb of `loadPqdb` and a clock (hrtimeClock or
 * performanceClock); returns the report body (no host facts: the caller adds them).
 * @param {Partial<typeof DEFAULTS>} [options]
 */
export function runComponent(pq, clock, options = {}) {
  const o = { ...DEFAULTS, ...options };
  check(Number.isInteger(o.ops) && o.ops >= 2, '"ops" expected an integer ≥ 2');
  check(Number.isInteger(o.batch) && o.batch >= 1, '"batch" expected an integer ≥ 1');
  const { api, crypto } = pq;
  const suite = api.suite(o.suite);
  check(suite.aead === 'gcmsiv', `suite ${o.suite} is not an AES-256-GCM-SIV suite`);
  const clockInfo = probeClock(clock, o.clockReads);
  const record = makeRecord(o.recordBytes);

  // A throwaway establishment per arm first: the timed one then excludes WebAssembly instantiation.
  for (const type of ['classical', 'hybrid']) establish(pq, clock, type, o).aead.destroy();
  // The arm whose keys are established first also has its objects made first (`establishFirst`).
  check(o.establishFirst === 'classical' || o.establishFirst === 'pqc', '"establishFirst" expected classical or pqc');
  const first = establish(pq, clock, o.establishFirst === 'pqc' ? 'hybrid' : 'classical', o);
  const second = establish(pq, clock, o.establishFirst === 'pqc' ? 'classical' : 'hybrid', o);
  const arms = o.establishFirst === 'pqc' ? [second, first] : [first, second];
  const inputs = opInputs(o.ops, o, suite.id);
  const { nonces, aads, addresses, ids } = inputs;
  const sealedBytes = api.sealedLength(suite.id, record.length);
  for (const arm of arms) {
    // Slots as a commit page holds them: header written, ciphertext ‖ tag sealed after it.
    arm.sealed = inputs.headers.map((h) => {
      const s = new Uint8Array(sealedBytes);
      s.set(h);
      return s;
    });
    arm.bodies = arm.sealed.map((s) => s.subarray(api.HEADER_BYTES));
    arm.oneShotCt = new Array(o.ops);
    arm.storeSealed = inputs.headers.map(() => new Uint8Array(sealedBytes));
    arm.opened = new Array(o.ops);
  }
  // The AAD and nonce are the store's: the keyed AEAD's output under them is sealRecord's body.
  for (const arm of arms) {
    const viaStore = api.sealRecord(suite.id, arm.keyed, addresses[0], record);
    const direct = arm.aead.encrypt(nonces[0], record, aads[0]);
    check(equal(viaStore.subarray(0, api.HEADER_BYTES), inputs.headers[0]), 'record header is the store’s');
    check(equal(viaStore.subarray(api.HEADER_BYTES), direct), 'record AAD and nonce are the store’s');
  }

  const ops = {
    keyed: {
      encrypt: (arm, i) => arm.aead.encrypt(nonces[i], record, aads[i], arm.bodies[i]),
      decrypt: (arm, i) => (arm.opened[i] = arm.aead.decrypt(nonces[i], arm.bodies[i], aads[i])),
    },
    oneShot: {
      encrypt: (arm, i) => (arm.oneShotCt[i] = crypto.gcmsiv(arm.dataKey, nonces[i], aads[i]).encrypt(record)),
      decrypt: (arm, i) => (arm.opened[i] = crypto.gcmsiv(arm.dataKey, nonces[i], aads[i]).decrypt(arm.oneShotCt[i])),
    },
    store: {
      encrypt: (arm, i) => api.sealRecord(suite.id, arm.keyed, addresses[i], record, 0, arm.storeSealed[i]),
      decrypt: (arm, i) =>
        (arm.opened[i] = api.openRecord(arm.storeSealed[i], o.collection, ids[i], () => arm.keyed).plaintext),
    },
  };
  const perOp = {};
  const batched = {};
  const digits = clock.name.startsWith('performance') ? 1 : 0;
  for (const variant of VARIANTS) {
    perOp[variant] = { classical: {}, pqc: {} };
    for (const direction of ['encrypt', 'decrypt']) {
      const s = timePerOp(clock, arms, o.ops, o.warmup, ops[variant][direction]);
      if (direction === 'decrypt')
        for (const arm of arms)
          for (let i = 0; i < o.ops; i++) check(equal(arm.opened[i], record), `${variant} decrypt opens the record`);
      perOp[variant].classical[direction] = stats(s[0], digits);
      perOp[variant].pqc[direction] = stats(s[1], digits);
    }
  }
  for (const variant of VARIANTS) {
    batched[variant] = { classical: {}, pqc: {} };
    for (const direction of ['encrypt', 'decrypt']) {
      const s = timeBatched(clock, arms, o.ops, o.batch, ops[variant][direction]);
      batched[variant].classical[direction] = { opsPerSample: o.batch, ...stats(s[0], 2) };
      batched[variant].pqc[direction] = { opsPerSample: o.batch, ...stats(s[1], 2) };
    }
  }
  // Every path gave the same bytes: SIV is deterministic for (key, nonce, AAD, plaintext).
  for (const arm of arms)
    for (let i = 0; i < o.ops; i++) {
      check(equal(arm.oneShotCt[i], arm.bodies[i]), 'one-shot and keyed ciphertexts agree');
      check(equal(arm.storeSealed[i], arm.sealed[i]), 'sealRecord and keyed ciphertexts agree');
    }

  const bytes = byteAccounting(pq, arms, record, inputs, suite, o);
  const establishment = Object.fromEntries(arms.map((a, k) => [ARMS[k], a.establishNs]));
  for (const arm of arms) {
    arm.aead.destroy();
    arm.dataKey.fill(0);
    arm.root.fill(0);
    arm.recipient.secretKey.fill(0);
  }
  return {
    bench: 'component',
    method: {
      recordBytes: record.length,
      record: new TextDecoder().decode(record),
      aead: 'AES-256-GCM-SIV',
      suite: suite.name,
      generation: o.generation,
      aadBytes: aads[0].length,
      aad: `store record AAD: 16-byte header (version, suite, flags, 0, be32 generation, be64 sequence) ‖ be16 ‖ "${o.collection}" ‖ be16 ‖ id ("${ids[0]}"…); nonce 0^4 ‖ be64(sequence); operation i writes sequence ${addresses[0].sequence} + i`,
      keyEstablishment: {
        classical: 'X25519 key envelope (wrapRoot/unwrapRoot, type classical), once per arm',
        pqc: 'ML-KEM-1024 + X25519 hybrid key envelope (wrapRoot/unwrapRoot, type hybrid), once per arm',
        dataKey:
          'deriveDataKey(root, 32-byte generation salt, suite, generation, governance "{}") then gcmsiv.withKey, as the store key ring does',
      },
      warmup: o.warmup,
      establishFirst: o.establishFirst,
      ops: o.ops,
      batch: o.batch,
      leaves: o.leaves,
      leafSource: o.syntheticLeaves
        ? 'leaf 0 a sealed record, the others random hashes'
        : 'every leaf a sealed record (recordLeafHashes, as a commit computes them)',
      order:
        'arms alternate op by op in ABBA order (even ops classical first, odd ops PQC first); per variant all encryptions, then the decryptions of their ciphertexts; variants keyed, oneShot, store in turn; batched samples afterwards, arms alternating sample by sample',
      encryptOutput: 'keyed and store rows seal into a preallocated record slot (as a commit page); one-shot allocates',
      decryptOutput: 'a new plaintext array per operation (as a read)',
      timing: `${clock.name} around each operation; samples are raw (the empty-region overhead below is not subtracted)`,
      establishment: 'establishmentNs: one timed run per arm (after a throwaway one), not a benchmark',
      statistics: 'median (mean of the middle two), p90 (nearest rank), mean, min, max; samplesNs keeps every sample',
      wasmFlavor: crypto.wasmFlavor(),
    },
    clock: clockInfo,
    establishmentNs: establishment,
    perOp,
    batched,
    bytes,
    article: ARTICLE,
  };
}

/** Byte accounting from real objects (see the file header). */
function byteAccounting(pq, arms, record, inputs, suite, o) {
  const { api, crypto } = pq;
  const [classical, pqc] = arms;
  // Ciphertext per record: the AEAD's output for the record, per arm (they must be equal).
  const ct = arms.map((a) => crypto.gcmsiv(a.dataKey, inputs.nonces[0], inputs.aads[0]).encrypt(record).length);
  check(ct[0] === ct[1], `ciphertexts differ between arms (${ct[0]} vs ${ct[1]})`);
  const sealed = arms.map((a) => api.sealRecord(suite.id, a.keyed, inputs.addresses[0], record).length);
  check(sealed[0] === sealed[1], 'sealed records differ between arms');

  // Envelopes: the parts measured from real objects. The wrapped root is an AES-256-GCM-SIV
  // encryption of the 32-byte root; the classical KEM ciphertext is an X25519 public key; the
  // prefix is what remains of the classical envelope; the hybrid's KEM ciphertext what remains of
  // it, of which the ML-KEM-1024 part is checked against a real ML-KEM-1024 encapsulation.
  const wrapped = crypto.gcmsiv(randomBytes(32), new Uint8Array(12)).encrypt(randomBytes(32)).length;
  const x25519Public = crypto.x25519.getPublicKey(randomBytes(32)).length;
  const prefix = classical.envelope.length - x25519Public - wrapped;
  const hybridKem = pqc.envelope.length - prefix - wrapped;
  const kp = crypto.ml_kem1024.keygen();
  const mlkemCt = crypto.ml_kem1024.encapsulate(kp.publicKey).cipherText.length;
  check(hybridKem === mlkemCt + x25519Public, 'hybrid KEM ciphertext = ML-KEM-1024 ciphertext ‖ X25519 public key');
  check(pqc.envelope.length - classical.envelope.length === mlkemCt, 'hybrid − classical = ML-KEM-1024 ciphertext');
  check(api.readEnvelope(pqc.envelope).type === 'hybrid' && api.readEnvelope(classical.envelope).type === 'classical');

  const merkle = merkleAccounting(pq, pqc, record, suite, o);
  const n = merkle.leaves;
  const per = (b) => round(b / n, 6);
  const perRecord = (envelope) => ({
    envelope: per(envelope),
    signature: per(merkle.signatureBytes),
    signedCheckpoint: per(merkle.signedCheckpointBytes),
    proof: merkle.proofBytes,
    total: round(envelope / n + merkle.signatureBytes / n + merkle.proofBytes, 6),
  });
  return {
    plaintextPerRecord: record.length,
    ciphertextPerRecord: { classical: ct[0], pqc: ct[1], equal: ct[0] === ct[1] },
    sealedRecord: { classical: sealed[0], pqc: sealed[1], headerBytes: api.HEADER_BYTES, tagBytes: api.TAG_BYTES },
    envelopePerRecipient: {
      classical: {
        total: classical.envelope.length,
        prefix,
        x25519EphemeralPublicKey: x25519Public,
        wrappedRoot: wrapped,
      },
      pqc: {
        total: pqc.envelope.length,
        prefix,
        mlKem1024Ciphertext: mlkemCt,
        x25519EphemeralPublicKey: x25519Public,
        wrappedRoot: wrapped,
        mlKemCiphertextPlusWrappedRoot: mlkemCt + wrapped,
      },
      pqcMinusClassical: pqc.envelope.length - classical.envelope.length,
      prefixHolds: 'version, type, suite, 0, be32 generation, 16-byte recipient id',
    },
    signaturePerCheckpoint: {
      mlDsa87Signature: merkle.signatureBytes,
      signedCheckpoint: merkle.signedCheckpointBytes,
      checkpointBody: merkle.checkpointBytes,
      signerKeyId: merkle.signerKeyIdBytes,
      verified: merkle.checkpointVerified,
    },
    inclusionProof: {
      leaves: n,
      leafIndex: merkle.leafIndex,
      hashes: merkle.proofHashes,
      hashBytes: merkle.hashBytes,
      bytes: merkle.proofBytes,
      verified: merkle.proofVerified,
      overAllLeaves: merkle.overAllLeaves,
    },
    sealedExport: merkle.export,
    perRecordAtLeaves: {
      leaves: n,
      assumption:
        'one key generation with one recipient and one signed checkpoint over all leaves; the proof is computed on demand for a record that is exported or verified (not stored per record)',
      classical: perRecord(classical.envelope.length),
      pqc: perRecord(pqc.envelope.length),
      pqcMinusClassical: per(pqc.envelope.length - classical.envelope.length),
    },
    timingsMs: merkle.timingsMs,
  };
}

/**
 * A Merkle tree over `o.leaves` records sealed under `arm`'s data key (the benchmark's record under
 * ids r000000…, consecutive sequences; with `o.syntheticLeaves` only the first, the other leaves
 * random hashes), their leaves computed as a commit does (blind and commit salt zero); the inclusion
 * proof of the first, a signed ML-DSA-87 checkpoint over the root and the sealed export that
 * carries both, verified.
 */
function merkleAccounting(pq, arm, record, suite, o) {
  const { api, crypto, proofs } = pq;
  const { merkle } = crypto;
  const perfNow = () => globalThis.performance.now();
  const t0 = perfNow();
  const leaves = o.leaves;
  const storeId = randomBytes(16);
  const governance = '{}';
  // Leaves computed as a commit does, in chunks of sealed records (only the first with syntheticLeaves).
  const sealedLeaves = o.syntheticLeaves ? 1 : leaves;
  const chunk = Math.min(sealedLeaves, 10_000);
  const buffers = Array.from({ length: chunk }, () => new Uint8Array(api.sealedLength(suite.id, record.length)));
  const hashes = new Uint8Array(leaves * merkle.HASH_BYTES);
  let first;
  const base = 1000;
  for (let c = 0; c < sealedLeaves; c += chunk) {
    const items = [];
    for (let j = 0; j < chunk && c + j < sealedLeaves; j++) {
      const i = c + j;
      const address = { collection: o.collection, id: idOf(i), generation: o.generation, sequence: base + i };
      api.sealRecord(suite.id, arm.keyed, address, record, 0, buffers[j]);
      if (i === 0) first = { ...address, record: buffers[j].slice() };
      items.push({ ...address, suite: suite.id, record: buffers[j], governance });
    }
    hashes.set(proofs.recordLeafHashes(storeId, items), c * merkle.HASH_BYTES);
  }
  for (let at = sealedLeaves * merkle.HASH_BYTES; at < hashes.length; at += 65_536)
    hashes.set(randomBytes(Math.min(65_536, hashes.length - at)), at);
  const t1 = perfNow();
  const tree = new merkle.MerkleHashTree(hashes);
  const root = tree.root();
  const leafIndex = 0;
  const proof = tree.inclusionProof(leafIndex);
  const t2 = perfNow();
  const leafHash = hashes.subarray(0, merkle.HASH_BYTES);
  const proofVerified = merkle.verifyInclusionOfHash(leafHash, leafIndex, leaves, proof, root);
  check(proofVerified, 'inclusion proof verifies');

  // Proof length over every leaf (RFC 9162 PATH: one sibling per level where one exists), checked
  // against real proofs at a spread of indices.
  let min = Infinity;
  let max = 0;
  let sum = 0;
  const levels = Math.ceil(Math.log2(Math.max(leaves, 1)));
  const pathLength = (index) => {
    let len = 0;
    for (let l = 0, i = index, width = leaves; l < levels + 1 && width > 1; l++, i = Math.floor(i / 2)) {
      if ((i ^ 1) < width) len++;
      width = Math.ceil(width / 2);
    }
    return len;
  };
  for (let i = 0; i < leaves; i++) {
    const len = pathLength(i);
    if (len < min) min = len;
    if (len > max) max = len;
    sum += len;
  }
  const step = Math.max(1, Math.floor(leaves / 97));
  for (let i = 0; i < leaves; i += step) check(tree.inclusionProof(i).length === pathLength(i), 'proof length formula');
  check(tree.inclusionProof(leaves - 1).length === pathLength(leaves - 1), 'proof length formula (last leaf)');

  const signer = crypto.ml_dsa87.keygen();
  const checkpoint = { storeId, generation: o.generation, size: leaves, root, previous: new Uint8Array(48) };
  const t3 = perfNow();
  const signed = proofs.signCheckpoint(checkpoint, signer.secretKey, signer.publicKey);
  const t4 = perfNow();
  const checkpointVerified = proofs.verifyCheckpoint(signed, signer.publicKey) !== undefined;
  check(checkpointVerified, 'signed checkpoint verifies');
  const checkpointBytes = proofs.encodeCheckpoint(checkpoint).length;
  const signerKeyIdBytes = proofs.signerKeyId(signer.publicKey).length;
  const signatureBytes = signed.length - checkpointBytes - signerKeyIdBytes;
  const bareSignature = crypto.ml_dsa87.sign(new Uint8Array(1), signer.secretKey).length;
  check(signatureBytes === bareSignature, 'signed checkpoint carries one ML-DSA-87 signature');

  const leafData = proofs.leafData(
    storeId,
    first.collection,
    first.id,
    first.sequence,
    suite.id,
    first.generation,
    first.record,
    governance,
  );
  const exported = proofs.encodeExport({
    leafData,
    record: first.record,
    governance,
    leafIndex,
    proof,
    signedCheckpoint: signed,
    salt: new Uint8Array(16),
  });
  const verified = proofs.verifySealed(exported, signer.publicKey);
  check(verified.valid, `sealed export verifies (${verified.reason})`);
  const opened = proofs.openSealed(exported, () => arm.keyed);
  check(equal(opened.plaintext, record), 'sealed export opens to the record');
  const proofBytes = proof.reduce((a, p) => a + p.length, 0);
  return {
    leaves,
    leafIndex,
    proofHashes: proof.length,
    hashBytes: proof[0]?.length ?? merkle.HASH_BYTES,
    proofBytes,
    proofVerified,
    overAllLeaves: {
      minHashes: min,
      maxHashes: max,
      meanHashes: round(sum / leaves, 4),
      meanBytes: round((sum / leaves) * merkle.HASH_BYTES, 2),
    },
    signatureBytes,
    signedCheckpointBytes: signed.length,
    checkpointBytes,
    signerKeyIdBytes,
    checkpointVerified,
    export: {
      bytes: exported.length,
      parts: {
        header: 7,
        leafData: leafData.length,
        record: 4 + first.record.length,
        governance: 2 + enc.encode(governance).length,
        leafIndexAndCount: 9,
        proof: proofBytes,
        signedCheckpoint: signed.length,
        commitSalt: 16,
      },
      verified: verified.valid,
    },
    timingsMs: {
      sealAndLeafHashes: round(t1 - t0, 1),
      treeAndProof: round(t2 - t1, 1),
      signCheckpoint: round(t4 - t3, 1),
    },
  };
}

const int = (x) => Math.round(x).toLocaleString('en-US');
const ns = (x) => (x >= 100 ? int(x) : x.toFixed(1));

/** A readable table of a report (runtime names the column set, e.g. 'node v20.20.2'). */
export function formatReport(r, runtime) {
  const lines = [];
  const m = r.method;
  const c = r.clock;
  lines.push(
    `pqdb component microbenchmark — ${runtime}, WASM ${m.wasmFlavor}`,
    `record ${m.recordBytes} B, AAD ${m.aadBytes} B (the store's record AAD), ${m.aead} (${m.suite}); ${m.warmup} warm-up + ${m.ops} timed ops per arm and direction; arms ABBA-interleaved`,
    `clock ${c.clock}: resolution ${ns(c.resolutionNs)} ns (smallest non-zero step), median tick ${ns(c.medianTickNs)} ns, empty timed region median ${ns(c.emptyRegionNs.median)} ns / mean ${ns(c.emptyRegionNs.mean)} ns, one read ${ns(c.readNs)} ns`,
    '',
  );
  const head = [
    'path',
    'dir',
    'arm',
    'median',
    'p90',
    'mean',
    'min',
    'max',
    `×${m.batch} median`,
    `×${m.batch} p90`,
    'article x86 / Graviton3',
  ];
  const rows = [head];
  for (const variant of VARIANTS) {
    for (const dir of ['encrypt', 'decrypt']) {
      for (const arm of ARMS) {
        const s = r.perOp[variant][arm][dir];
        const b = r.batched[variant][arm][dir];
        const a = variant === 'keyed' ? ARTICLE.medianNs : undefined;
        rows.push([
          variant,
          dir,
          arm,
          ns(s.median),
          ns(s.p90),
          ns(s.mean),
          ns(s.min),
          ns(s.max),
          ns(b.median),
          ns(b.p90),
          a ? `${int(a['x86_64 (WSL2)'][dir][arm])} / ${int(a.Graviton3[dir][arm])}` : '',
        ]);
      }
    }
  }
  const widths = head.map((_, k) => Math.max(...rows.map((row) => row[k].length)));
  for (const row of rows)
    lines.push(row.map((cell, k) => (k < 3 ? cell.padEnd(widths[k]) : cell.padStart(widths[k]))).join('  '));
  lines.push('(ns per operation; ×N: batched samples of N operations)');
  const est = (arm) => {
    const t = r.establishmentNs[arm];
    return `wrap ${int(t.wrap / 1000)} µs, unwrap ${int(t.unwrap / 1000)} µs, data key ${int((t.deriveDataKey + t.withKey) / 1000)} µs`;
  };
  lines.push(`key establishment, once per arm (not a benchmark): classical ${est('classical')}; PQC ${est('pqc')}`, '');
  const b = r.bytes;
  const e = b.envelopePerRecipient;
  const p = b.inclusionProof;
  const at = b.perRecordAtLeaves;
  lines.push(
    `ciphertext per record        classical ${b.ciphertextPerRecord.classical} B, PQC ${b.ciphertextPerRecord.pqc} B (article 131 / 131); sealed with header ${b.sealedRecord.classical} / ${b.sealedRecord.pqc} B`,
    `key envelope per recipient   classical ${e.classical.total} B = ${e.classical.prefix} prefix + ${e.classical.x25519EphemeralPublicKey} X25519 + ${e.classical.wrappedRoot} wrapped root`,
    `                             PQC ${int(e.pqc.total)} B = ${e.pqc.prefix} prefix + ${int(e.pqc.mlKem1024Ciphertext)} ML-KEM-1024 ciphertext + ${e.pqc.x25519EphemeralPublicKey} X25519 + ${e.pqc.wrappedRoot} wrapped root`,
    `                             ML-KEM ciphertext + wrapped root ${int(e.pqc.mlKemCiphertextPlusWrappedRoot)} B (article 1,616); PQC − classical ${int(e.pqcMinusClassical)} B`,
    `signature per checkpoint     ML-DSA-87 ${int(b.signaturePerCheckpoint.mlDsa87Signature)} B (article 4,627); signed checkpoint ${int(b.signaturePerCheckpoint.signedCheckpoint)} B`,
    `inclusion proof              ${p.hashes} × ${p.hashBytes} B = ${int(p.bytes)} B at ${int(p.leaves)} records (leaf ${p.leafIndex}; over all leaves ${p.overAllLeaves.minHashes}–${p.overAllLeaves.maxHashes} hashes, mean ${p.overAllLeaves.meanBytes} B)`,
    `sealed export                ${int(b.sealedExport.bytes)} B (record, leaf, proof, signed checkpoint; verifies)`,
    `per record at ${int(at.leaves)}     classical ${at.classical.envelope} (envelope) + ${at.classical.signature} (signature) + ${at.classical.proof} (proof) = ${at.classical.total} B`,
    `                             PQC ${at.pqc.envelope} + ${at.pqc.signature} + ${at.pqc.proof} = ${at.pqc.total} B (PQC adds ${at.pqcMinusClassical} B per record)`,
  );
  return lines.join('\n');
}
