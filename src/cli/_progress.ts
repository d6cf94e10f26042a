// Progress bars for the pqdb verbs: one line on stderr, redrawn in place with '\r', 30 columns,
// at most every 100 ms (the last step always). The callers enable them only on a terminal or with
// --progress, never with --json, so piped output stays clean. Node only.

/// <reference types="node" />
import { io } from './_io';
import type { MigrationProgress } from '../engine/migration/run';

const BAR_COLUMNS = 30;
const REDRAW_MS = 100;

const count = (x: number) => x.toLocaleString('en-US');

/** `done` of `total` as '#' then '.' over BAR_COLUMNS; full when total is 0, clamped to the bar. */
function bar(done: number, total: number): string {
  const filled =
    total === 0 ? BAR_COLUMNS : Math.max(0, Math.min(BAR_COLUMNS, Math.round((done / total) * BAR_COLUMNS)));
  return `${'#'.repeat(filled)}${'.'.repeat(BAR_COLUMNS - filled)}`;
}

/**
 * The verifier's progress callback: `phase [####....] done/total`, ending the line at the last step.
 * Draws nothing unless `enabled`.
 * @example
 * verifyStore(pages, { onProgress: verifyProgress(process.stderr.isTTY === true) });
 */
export function verifyProgress(enabled: boolean): (p: { phase: string; done: number; total: number }) => void {
  if (!enabled) return () => undefined;
  let last = 0;
  return ({ phase, done, total }) => {
    const now = Date.now();
    if (done < total && now - last < REDRAW_MS) return;
    last = now;
    io.stderr.write(
      `\r  ${phase.padEnd(7)} [${bar(done, total)}] ${count(done)}/${count(total)}${done >= total ? '\n' : ''}`,
    );
  };
}

/**
 * The migration's progress callback: `phase [####....] accounted/to-do  rate records/s  ETA s`, the
 * rate measured from the first report (a resumed migration starts part-way). Redraws at most every
 * 100 ms while copying and at every report of the other phases; never ends the line (the caller does).
 * Draws nothing unless `enabled`.
 * @example
 * store.migrate({ to, onProgress: migrationProgress(process.stderr.isTTY === true) });
 */
export function migrationProgress(enabled: boolean): (p: MigrationProgress) => void {
  const started = Date.now();
  let done0: number | undefined;
  let last = 0;
  return (p) => {
    const accounted = p.copied + p.superseded + p.deleted + p.withheld + p.failed;
    done0 ??= accounted;
    const now = Date.now();
    if (!enabled || (now - last < REDRAW_MS && p.phase === 'copying')) return;
    last = now;
    const todo = Math.max(0, p.total - p.inserted);
    const rate = ((accounted - done0) / Math.max(1, now - started)) * 1000;
    const eta = rate > 0 ? Math.ceil((todo - accounted) / rate) : 0;
    io.stderr.write(
      `\r  ${p.phase.padEnd(10)} [${bar(accounted, todo)}] ${count(accounted)}/${count(todo)}  ${count(Math.round(rate))} records/s  ETA ${eta} s   `,
    );
  };
}

/**
 * A progress callback for import and export: `label [####....] done/total unit  rate unit/s`, at
 * most every 100 ms, ending the line at the last step (done ≥ total). Draws nothing unless `enabled`.
 * @example
 * const step = countProgress(true, 'import', 'bytes'); step(512, 1024); step(1024, 1024);
 */
export function countProgress(enabled: boolean, label: string, unit: string): (done: number, total: number) => void {
  if (!enabled) return () => undefined;
  const started = Date.now();
  let last = 0;
  return (done, total) => {
    const now = Date.now();
    if (done < total && now - last < REDRAW_MS) return;
    last = now;
    const rate = Math.round((done / Math.max(1, now - started)) * 1000);
    io.stderr.write(
      `\r  ${label.padEnd(7)} [${bar(done, total)}] ${count(done)}/${count(total)} ${unit}  ${count(rate)} ${unit}/s   ${done >= total ? '\n' : ''}`,
    );
  };
}
