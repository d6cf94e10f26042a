// The verifier without a recipient secret key: the manifest's body is sealed, so the pages are
// found by their kind. Nothing here is authenticated (the report says so, and is not complete).

import type { PageStore } from '../../storage/page-store';
import type { Manifest } from '../manifest';
import { pageKind, logPageRange } from '../page-format';
import { getU64 } from '../../_bytes';
import { b64 } from '../../_encoding';
import { sha384 } from '../../kernels/sha2';

/** What the verifier needs of a manifest. */
export type View = Pick<Manifest, 'nextPageId' | 'logs' | 'indexes' | 'checkpointPages' | 'retired' | 'floors'>;

/**
 * Without a recipient secret key the manifest's body is sealed: the pages are classified by their
 * kind instead (checkpoint pages in page order, log pages by the range their head names; index pages
 * are counted). Nothing here is authenticated; checkpoint signatures are, with the signer's key.
 */
export async function viewOfPages(pages: PageStore): Promise<View> {
  const logs: Record<string, { pageId: number; from: number; to: number }[]> = {};
  const checkpointPages: number[] = [];
  const indexes: Record<string, { pageId: number; afterPage: number }> = {};
  const floors: NonNullable<Manifest['floors']> = {};
  let last = 0;
  for (const pageId of await pages.listPages().catch(() => [] as number[])) {
    const page = await pages.readPage(pageId).catch(() => undefined);
    last = Math.max(last, pageId);
    if (page === undefined) continue;
    const kind = pageKind(page);
    if (kind === 'checkpoint') checkpointPages.push(pageId);
    else if (kind === 'index') indexes[`(index page ${pageId})`] = { pageId, afterPage: 0 };
    else if (kind === 'floor' && page.length >= 17) {
      const dv = new DataView(page.buffer, page.byteOffset, page.length);
      floors[dv.getUint32(5)] = { pageId, size: getU64(dv, 9), hash: b64(sha384(page)) };
    } else if (kind === 'log') {
      const range = logPageRange(page);
      if (range !== undefined) (logs[range.generation] ??= []).push({ pageId, from: range.from, to: range.to });
    }
  }
  for (const refs of Object.values(logs)) refs.sort((a, b) => a.from - b.from);
  return { nextPageId: last + 1, logs, indexes, checkpointPages, retired: [], floors };
}
