// `pqdb posture <location>`: the store's cryptographic bill of materials, a CycloneDX 1.6 CBOM
// (Store.posture, docs/posture.md), as JSON on stdout or in the new file --out FILE. The store is
// opened read-only with the recipient secret key (no lock: it runs beside a writer); the signer
// public key given with --signer-public (or PQDB_SIGNER_PUBLIC) appears in the BOM. Node only.
//
// Exit status: 0 written; 2 a usage error, a store that cannot be opened, an --out file that exists.

/// <reference types="node" />
import { io } from './_io';
import { writeNew } from './_files';
import type { Keys } from './_keys';
import { cannotOpen } from './_report';
import { openCliStore, requireUnlock } from './_store';

/**
 * Runs `pqdb posture`; returns the exit status. The caller owns `keys` (and wipes them).
 * @throws UsageError without the recipient secret key; PqdbError IO_ERROR when --out FILE exists or
 * cannot be written (index.ts prints either as one line, status 2).
 * @example
 * const code = await posture('/var/lib/app/store', { out: 'cbom.json' }, keys);
 */
export async function posture(
  location: string,
  options: { out?: string; json?: boolean },
  keys: Keys,
): Promise<number> {
  requireUnlock(keys);
  let opened;
  try {
    opened = await openCliStore(location, keys, { write: false });
  } catch (e) {
    return cannotOpen('posture', location, e);
  }
  let bom;
  try {
    bom = opened.store.posture();
  } finally {
    await opened.close();
  }
  const text = `${JSON.stringify(bom, null, 2)}\n`;
  const { out } = options;
  if (out === undefined) {
    io.stdout.write(text);
    return 0;
  }
  writeNew(out, text);
  const storeId = opened.manifest.storeId;
  const report = { location, storeId, out, serialNumber: bom.serialNumber, components: bom.components.length };
  io.stdout.write(
    options.json === true
      ? `${JSON.stringify(report, null, 2)}\n`
      : `pqdb posture: CycloneDX 1.6 CBOM of store ${storeId} (${report.components} components) in ${out}\n`,
  );
  return 0;
}
