// The dedicated worker of browser-tests/page/worker.html: pqdb's worker engine, loaded from the built
// package exactly as an app loads it (a worker has no import map: the path is the package's file).
import { serveWorkerEngine } from '/dist/worker.js';

serveWorkerEngine();
