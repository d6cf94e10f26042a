// `pqdb verify <location>`: opens the file store read-only and checks every page, record, Merkle
// leaf, checkpoint signature and proof with the independent verifier (src/engine/verify/); prints
// its summary, or with --json the full report. It changes nothing on disk and runs while a writer
// holds the store. Node only.
//
// Exit status: 0 every check holds; 1 a check failed (a store whose framing is corrupt counts);
// 2 the store cannot be opened; 3 nothing failed but checks were skipped for want of a key.

/// <reference types="node" />
import { io } from './_io';
import { openNodeFsPageStore } from '../storage/node-fs';
import { verifyStore, formatVerifyReport } from '../engine/verify';
import { PqdbError } from '../errors';
import type { Keys } from './_keys';
import { recordPin } from './_pin';
import { verifyProgress } from './_progress';
import { errorText } from './_report';
import { checkPin } from './_store';

/**
 * Runs `pqdb verify`; returns the exit status. The caller owns `keys` (and wipes them).
 * @throws whatever the page store throws on closing; index.ts turns it into one line and status 2.
 * @example
 * const code = await verify('/var/lib/app/store', { json: true }, keys);
 */
export async function verify(
  location: string,
  options: { json?: boolean; quiet?: boolean; progress?: boolean; 'expect-checkpoint'?: string },
  keys: Keys,
): Promise<number> {
  let pages;
  try {
    pages = await openNodeFsPageStore(location, { readOnly: true, create: false });
  } catch (e) {
    if (options.json)
      io.stdout.write(
        `${JSON.stringify({ ok: false, complete: false, location, problems: [{ where: 'storage', code: e instanceof PqdbError ? e.code : 'IO_ERROR', message: (e as Error).message }] }, null, 2)}\n`,
      );
    else io.stderr.write(`pqdb verify: cannot open ${location}: ${errorText(e)}\n`);
    return e instanceof PqdbError && e.code === 'CORRUPTION' ? 1 : 2;
  }
  try {
    let seen: { storeId: string; commit: number } | undefined;
    if (keys.pin !== undefined)
      try {
        seen = checkPin(await pages.readManifest(), keys);
      } catch (e) {
        if (!(e instanceof PqdbError)) throw e;
        const problem = { where: 'manifest', code: e.code, message: e.message };
        if (options.json)
          io.stdout.write(
            `${JSON.stringify({ ok: false, complete: false, location, problems: [problem] }, null, 2)}\n`,
          );
        else io.stderr.write(`pqdb verify: ${location}: ${errorText(e)}\n`);
        return 1;
      }
    const pin = options['expect-checkpoint'];
    const report = await verifyStore(pages, {
      unlock: keys.unlock,
      signerPublicKey: keys.signerPublicKey,
      ...(pin !== undefined ? { expectCheckpoint: /^\d+$/.test(pin) ? Number(pin) : pin } : {}),
      onProgress: verifyProgress(options.progress === true && !options.json && !options.quiet),
    });
    if (seen !== undefined && report.ok) recordPin(keys.pin, seen);
    if (options.json) io.stdout.write(`${JSON.stringify({ location, ...report }, null, 2)}\n`);
    else if (!options.quiet || !report.ok) io.stdout.write(`${formatVerifyReport(report, location)}\n`);
    return !report.ok ? 1 : report.complete ? 0 : 3;
  } finally {
    await pages.close();
  }
}
