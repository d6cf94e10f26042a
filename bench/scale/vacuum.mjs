// The SQLite compaction of the scale benchmark (bench/scale.mjs), run in a worker thread: VACUUM
// is synchronous in better-sqlite3 and would hold the thread it runs on, so it gets a connection
// and a thread of its own while the parent's connection keeps reading (WAL mode lets it).
//
//   new Worker('vacuum.mjs', { workerData: { file } })  →  posts { vacuumMs }

import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const db = new Database(workerData.file);
const t = performance.now();
db.exec('VACUUM');
const vacuumMs = performance.now() - t;
db.close();
parentPort.postMessage({ vacuumMs });
