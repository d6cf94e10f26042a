// The browser side of the live-migration evaluation in Chromium (bench/migration-browser.mjs and
// browser-tests/migration.spec.mjs): a store on IndexedDB, through the bundled dist/browser.js
// exactly as users load it, holding WordNet synsets sealed under 'gcmsiv-hkdf256' that migrate to
// 'gcmsiv-hkdf384' while two reader loops in this page keep a fixed schedule of reads.
//
// Everything the evaluation must not lose lives in the runner (Node), not here: the runner polls
// finished requests and progress reports out with `window.pqdbMigration.poll()` and keeps them, so
// a reload (the browser's stand-in for a killed process) loses only what was in flight. The keys
// are handed back to the page after each reload.
//
// Clock: every timestamp is `performance.timeOrigin + performance.now()` (milliseconds since the
// Unix epoch), comparable across reloads of the page and with the runner's schedule.
//
// Values are hashed here with WebCrypto's SHA-384 over their canonical JSON (object keys sorted),
// not with pqdb's hashes, and the runner compares them with the expected-data manifest it computed
// in Node before the run.

import * as pqdb from 'pqdb';

type Value = { lemma: string; pos: string; gloss: string; offset: number };
type Store = Awaited<ReturnType<typeof pqdb.openStore>>;
type Collection = ReturnType<Store['collection']>;
type Keys = { recipientPublic: string; unlock: string; signerPublic: string; signerSecret: string };

const COLLECTION = 'synsets';
const SCHEMA = { lemma: 'string', pos: 'string', gloss: 'string', offset: 'integer' } as const;
const INDEX = { text: ['lemma', 'gloss'] };
const FROM_SUITE = 'gcmsiv-hkdf256';

const now = (): number => performance.timeOrigin + performance.now();
const hex = (u8: Uint8Array): string => Array.from(u8, (b) => b.toString(16).padStart(2, '0')).join('');
const unhex = (h: string): Uint8Array => new Uint8Array((h.match(/../g) ?? []).map((b) => parseInt(b, 16)));
const describe = (e: unknown): string =>
  e instanceof Error ? `${(e as { code?: string }).code ?? e.name}: ${e.message}` : String(e);

/** JSON with object keys sorted at every level (bench/migration/common.mjs canonicalJson). */
function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

async function digestHex(algorithm: 'SHA-384' | 'SHA-256', text: string): Promise<string> {
  return hex(new Uint8Array(await crypto.subtle.digest(algorithm, new TextEncoder().encode(text))));
}

/** mulberry32 (bench/migration/common.mjs prng): the first output for `seed`, in [0, 1). */
function firstDraw(seed: number): number {
  let t = (seed + 0x6d2b79f5) >>> 0;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

/** One scheduled read; `done` once its outcome (and the value's hash) is known. */
interface ReadRecord {
  reader: number;
  k: number;
  id: string;
  scheduledAt: number;
  startedAt: number;
  endedAt?: number;
  /** 'value' (hash set), 'absent' (no record under the id) or 'error' (error set). */
  status?: 'value' | 'absent' | 'error';
  hash?: string;
  error?: string;
  done: boolean;
}

/** A progress report of the migration, with when it arrived. */
type ProgressReport = pqdb.MigrationProgress & { at: number };

interface WriteRecord {
  kind: 'update' | 'insert' | 'delete';
  id: string;
  value?: Value;
  sentAt?: number;
  ackAt?: number;
  existed?: boolean;
  error?: string;
  progressAtSend?: ProgressReport;
}

let store: Store | undefined;
let words: Collection | undefined;
let readerIds: string[] = [];
const readers: { timer?: ReturnType<typeof setTimeout>; stopped: boolean }[] = [];
let stopAt = Infinity;
/** Requests started on this page and not yet handed to the runner. */
let records: ReadRecord[] = [];
let progress: ProgressReport[] = [];
let writes: WriteRecord[] = [];
/** Main-thread tasks over 50 ms (PerformanceObserver 'longtask'), since the page loaded. */
let longTasks: { at: number; ms: number }[] = [];
try {
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) longTasks.push({ at: performance.timeOrigin + e.startTime, ms: e.duration });
  }).observe({ type: 'longtask', buffered: true });
} catch {
  // No Long Tasks API: the evidence then lists none.
}
let migration: { startedAt: number; result?: unknown; error?: string; doneAt?: number } | undefined;

function open(name: string, keys: Keys, create: boolean, readOnly = false): Promise<Store> {
  return pqdb.openStore({
    location: name,
    storage: 'indexeddb',
    create,
    readOnly,
    recipients: [unhex(keys.recipientPublic)],
    unlock: unhex(keys.unlock),
    suite: FROM_SUITE,
    ...(readOnly ? {} : { signer: unhex(keys.signerSecret) }),
    signerPublicKey: unhex(keys.signerPublic),
    autoCheckpoint: false,
  });
}

const api = {
  /** A recipient (hybrid ML-KEM-1024 + X25519) and an ML-DSA-87 signer, hex; the runner keeps them. */
  keygen(): Keys {
    const r = pqdb.generateRecipient();
    const s = pqdb.generateSigner();
    return {
      recipientPublic: hex(r.publicKey),
      unlock: hex(r.secretKey),
      signerPublic: hex(s.publicKey),
      signerSecret: hex(s.secretKey),
    };
  },

  now,

  /** Deletes any database of that name, then creates the store and its collection. */
  async create(name: string, keys: Keys): Promise<{ storage: string }> {
    await new Promise<void>((resolve, reject) => {
      const r = indexedDB.deleteDatabase(name);
      r.onsuccess = () => resolve();
      r.onerror = () => reject(r.error);
    });
    store = await open(name, keys, true);
    words = store.collection(COLLECTION, { schema: SCHEMA, index: INDEX });
    return { storage: store.info().storage };
  },

  /** Writes rows [id, lemma, pos, gloss, offset] (a JSON array: it crosses the driver faster than objects) in order, one commit per `batch`. */
  async load(json: string, batch: number): Promise<number> {
    const rows = JSON.parse(json) as [string, string, string, string, number][];
    const t0 = performance.now();
    for (let i = 0; i < rows.length; i += batch) {
      await store!.batch((tx) => {
        for (const [id, lemma, pos, gloss, offset] of rows.slice(i, i + batch))
          tx.put(words!, id, { lemma, pos, gloss, offset });
      });
    }
    return performance.now() - t0;
  },

  /** Builds the lexical index (so the checkpoint seals it) and takes one signed checkpoint. */
  async seal(): Promise<{ indexMs: number; checkpointMs: number; size: number }> {
    const t0 = performance.now();
    await words!.search('entity', { limit: 1 });
    const t1 = performance.now();
    await store!.checkpoint();
    return { indexMs: t1 - t0, checkpointMs: performance.now() - t1, size: words!.size };
  },

  /** Reopens the store after a reload (a migration under way resumes by itself). */
  async reopen(name: string, keys: Keys): Promise<{ openMs: number; openedAt: number; migration: unknown }> {
    const t0 = performance.now();
    store = await open(name, keys, false);
    words = store.collection(COLLECTION, { schema: SCHEMA, index: INDEX });
    return { openMs: performance.now() - t0, openedAt: now(), migration: store.migration() };
  },

  /** The ids readers draw from, newline-joined (one string crosses the driver far faster than 100,000). */
  setIds(joined: string): number {
    readerIds = joined.split('\n');
    return readerIds.length;
  },

  /**
   * Starts `count` reader loops: reader r's request k is scheduled at t0 + r·interval/count +
   * k·interval (the readers interleave evenly) and reads a random id (mulberry32 seeded with
   * seed, r and k, so a restarted page draws the same ids). Requests scheduled before now are
   * skipped: after a reload, the schedule carries on where the clock is.
   */
  startReaders(o: { t0: number; intervalMs: number; count: number; seed: number }): number {
    stopAt = Infinity;
    const startedAt = now();
    for (let r = 0; r < o.count; r++) {
      const base = o.t0 + (r * o.intervalMs) / o.count;
      const state = { stopped: false } as { timer?: ReturnType<typeof setTimeout>; stopped: boolean };
      readers[r] = state;
      const arm = (k: number): void => {
        const scheduledAt = base + k * o.intervalMs;
        if (scheduledAt >= stopAt || state.stopped) return;
        state.timer = setTimeout(
          () => {
            fire(r, k, scheduledAt, o.seed);
            arm(k + 1);
          },
          Math.max(0, scheduledAt - now()),
        );
      };
      arm(Math.max(0, Math.ceil((startedAt - base) / o.intervalMs)));
    }
    return startedAt;
  },

  /** No request is scheduled at or after `at`; resolves once every started request has settled. */
  async stopReaders(at: number): Promise<void> {
    stopAt = at;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, at - now())));
    for (const r of readers) {
      r.stopped = true;
      clearTimeout(r.timer);
    }
    while (records.some((x) => !x.done)) await new Promise((resolve) => setTimeout(resolve, 10));
  },

  /**
   * Starts the migration. With `writes`, the first copying report issues them (each awaited, in
   * order); with `signalHalf`, once they are acknowledged and half the records are accounted,
   * calls window.pqdbMigrationHalf(poll()) (exposed by the runner, which reloads the page) once.
   */
  migrate(o: { to: string; chunkRecords: number; writes?: WriteRecord[]; signalHalf?: boolean }): number {
    let writesStarted = false;
    let writesAcked = o.writes === undefined;
    let signalled = false;
    writes = o.writes ?? [];
    const startedAt = now();
    migration = { startedAt };
    const issue = async (at: ProgressReport): Promise<void> => {
      for (const w of writes) {
        w.sentAt = now();
        w.progressAtSend = at;
        try {
          if (w.kind === 'delete') w.existed = await words!.delete(w.id);
          else await words!.put(w.id, w.value!);
          w.ackAt = now();
        } catch (e) {
          w.error = describe(e);
        }
      }
      writesAcked = true;
    };
    store!
      .migrate({
        to: o.to as Parameters<Store['migrate']>[0]['to'],
        chunkRecords: o.chunkRecords,
        onProgress: (p) => {
          const report = { at: now(), ...p };
          progress.push(report);
          if (!writesStarted && p.phase === 'copying') {
            writesStarted = true;
            if (o.writes !== undefined) void issue(report);
          }
          const accounted = p.copied + p.superseded + p.deleted;
          if (o.signalHalf && !signalled && writesAcked && p.phase === 'copying' && accounted >= p.total / 2) {
            signalled = true;
            (
              globalThis as unknown as { pqdbMigrationHalf?: (snapshot: ReturnType<typeof api.poll>) => void }
            ).pqdbMigrationHalf?.(api.poll());
          }
        },
      })
      .then(
        (result) => {
          migration!.doneAt = now();
          migration!.result = result;
        },
        (e) => {
          migration!.doneAt = now();
          migration!.error = describe(e);
        },
      );
    return startedAt;
  },

  /**
   * Hands the runner what happened since the last poll: finished requests (removed here), those
   * still in flight (kept), progress reports and long tasks (removed), the writes and the migration's outcome.
   */
  poll(): {
    at: number;
    done: ReadRecord[];
    pending: ReadRecord[];
    progress: ProgressReport[];
    writes: WriteRecord[];
    migration: typeof migration;
    longTasks: { at: number; ms: number }[];
  } {
    const done = records.filter((r) => r.done);
    const pending = records.filter((r) => !r.done);
    records = pending;
    const p = progress;
    progress = [];
    const lt = longTasks;
    longTasks = [];
    return { at: now(), done, pending, progress: p, writes, migration, longTasks: lt };
  },

  async close(): Promise<number> {
    const t0 = performance.now();
    await store?.close();
    store = undefined;
    words = undefined;
    return performance.now() - t0;
  },

  /**
   * The cold check, after a reload: opens the store read-only and returns the migration's status,
   * [id, SHA-384 of the value] of every record in id order, the suite and generation sealed in the
   * export of each `exportIds` (verifySealed on `proofIds`), the result set of every query (count
   * and SHA-256 of the sorted ids, newline-joined); then closes it and runs verifyStore over the
   * IndexedDB page store.
   */
  async verify(o: {
    name: string;
    keys: Keys;
    queries: { query: string; mode: 'all' | 'any'; prefix: boolean }[];
    exportIds: string[];
    proofIds: string[];
  }) {
    const signerPublicKey = unhex(o.keys.signerPublic);
    const t0 = performance.now();
    const s = await open(o.name, o.keys, false, true);
    const w = s.collection(COLLECTION, { schema: SCHEMA, index: INDEX });
    const openMs = performance.now() - t0;
    const status = s.migration();
    const size = w.size;
    const t1 = performance.now();
    const hashes: [string, string][] = [];
    for await (const { id, value } of w.scan({})) hashes.push([id, await digestHex('SHA-384', canonicalJson(value))]);
    const recordsMs = performance.now() - t1;
    const t2 = performance.now();
    const sealed: { id: string; suite: number; generation: number }[] = [];
    const proofs = new Set(o.proofIds);
    let proofsVerified = 0;
    const proofProblems: string[] = [];
    for (const id of o.exportIds) {
      const exported = await w.exportSealed(id);
      // docs/format.md: "PQDX" ‖ 1 ‖ be16 checkpoint length ‖ … ‖ be32 record length ‖ record (suite at byte 1, be32 generation at 4).
      const dv = new DataView(exported.buffer, exported.byteOffset, exported.byteLength);
      const at = 7 + dv.getUint16(5) + 4;
      sealed.push({ id, suite: exported[at + 1], generation: dv.getUint32(at + 4) });
      if (proofs.has(id)) {
        const r = pqdb.verifySealed(exported, signerPublicKey);
        if (r.valid && r.id === id) proofsVerified++;
        else if (proofProblems.length < 10) proofProblems.push(`${id}: ${JSON.stringify(r)}`);
      }
    }
    const exportsMs = performance.now() - t2;
    const t3 = performance.now();
    const search: { count: number; idsHash: string }[] = [];
    for (const q of o.queries) {
      const got = await w.search(q.query, { mode: q.mode, prefix: q.prefix, limit: size + 10 });
      const ids = got.map((r) => r.id).sort();
      search.push({ count: ids.length, idsHash: await digestHex('SHA-256', ids.join('\n')) });
    }
    const searchMs = performance.now() - t3;
    await s.close();
    const t4 = performance.now();
    const pages = await pqdb.openIndexedDbPageStore(o.name);
    let report;
    try {
      report = await pqdb.verifyStore(pages, { unlock: unhex(o.keys.unlock), signerPublicKey });
    } finally {
      await pages.close();
    }
    const verifyStoreMs = performance.now() - t4;
    const estimate = await navigator.storage.estimate();
    return {
      migration: status,
      size,
      hashes,
      sealed,
      proofsVerified,
      proofProblems,
      search,
      verifyStore: {
        ok: report.ok,
        complete: report.complete,
        counts: report.counts,
        skipped: report.skipped,
        problems: report.problems.slice(0, 20),
        problemCount: report.problems.length,
      },
      storageUsageBytes: estimate.usage ?? null,
      timingsMs: { open: openMs, records: recordsMs, exports: exportsMs, search: searchMs, verifyStore: verifyStoreMs },
    };
  },

  async drop(name: string): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const r = indexedDB.deleteDatabase(name);
      r.onsuccess = () => resolve();
      r.onerror = () => reject(r.error);
    });
  },

  userAgent: () => navigator.userAgent,
};

function fire(reader: number, k: number, scheduledAt: number, seed: number): void {
  const id =
    readerIds[Math.floor(firstDraw((seed * 1_000_003 + reader * 7_919_993 + k * 2_654_435) >>> 0) * readerIds.length)];
  const rec: ReadRecord = { reader, k, id, scheduledAt, startedAt: now(), done: false };
  records.push(rec);
  const c = words;
  if (c === undefined) {
    rec.endedAt = now();
    rec.status = 'error';
    rec.error = 'NOT_OPEN: no store open';
    rec.done = true;
    return;
  }
  c.get(id).then(
    async (v) => {
      rec.endedAt = now();
      if (v === undefined) rec.status = 'absent';
      else {
        rec.status = 'value';
        rec.hash = await digestHex('SHA-384', canonicalJson(v));
      }
      rec.done = true;
    },
    (e) => {
      rec.endedAt = now();
      rec.status = 'error';
      rec.error = describe(e);
      rec.done = true;
    },
  );
}

(globalThis as unknown as { pqdbMigration: typeof api }).pqdbMigration = api;
