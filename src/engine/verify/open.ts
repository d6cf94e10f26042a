// The verifier's manifest step: reads the manifest's framing and header and, with a recipient
// secret key, unlocks it (its MAC, the store secret, every key generation). Without the key the
// pages are found by their kind (unkeyed.ts). Nothing the manifest says is used once it does not
// authenticate: the run then stops with that problem.

import { PqdbError } from '../../errors';
import { fromHex } from '../../_encoding';
import { readManifest, unlockManifest, type ManifestHeader } from '../manifest';
import { viewOfPages } from './unkeyed';
import type { OpenedStore, VerifyRun } from './run';

/** The store `run` verifies, opened; undefined when the run stops (reported). */
export async function openStore(run: VerifyRun): Promise<OpenedStore | undefined> {
  const { pages, options } = run;
  let header: ManifestHeader;
  let raw: Uint8Array;
  try {
    const read = await pages.readManifest();
    if (read === undefined)
      throw new PqdbError('NOT_FOUND', `no pqdb store here: the ${pages.kind} page store holds no manifest`);
    raw = read;
    header = run.header = readManifest(raw).header;
  } catch (e) {
    run.fail('manifest', e);
    return undefined;
  }
  const storeId = fromHex(header.storeId);
  if (options.decryptRecords === false && options.unlock !== undefined)
    run.skipped.push('decryption of record versions (left to the caller, which opens every record it uses)');
  if (options.unlock === undefined) {
    run.skipped.push('decryption and the manifest body (no recipient secret key): pages are found by their kind');
    return { header, storeId, manifest: await viewOfPages(pages) };
  }
  try {
    const { keys, manifest } = unlockManifest(raw, options.unlock, { keyCacheSize: 64 });
    return { header, storeId, keys, manifest };
  } catch (e) {
    run.fail('manifest', e, 'AUTH_FAILED');
    return undefined;
  }
}
