// The verifier's key-directory step (DESIGN §11 "roles from the manifest, not from magic bytes"):
// the persisted key directory the authenticated manifest names is opened before any other page is
// looked at, because it says what the pages it covers are — the live commit pages up to its
// `afterPage` (with the generation, length and commit salt of each) and the partitions of its base.
// A page's magic bytes never decide its role: a page the directory lists as a live commit page must
// open as one, whatever its first bytes say, and a directory page copied over it fails there.
//
// Each snapshot opens under the store's directory key (its pages' AEAD binds page id, place and
// count); a base's partitions are checked once the page pass has read them (`checkParts`). Nothing
// here is trusted before it authenticates: a snapshot that does not open gives a problem and lists
// no page.

import { PqdbError } from '../../errors';
import type { PageStore } from '../../storage/page-store';
import type { KeyRing } from '../keys';
import type { DirectoryRef } from '../manifest';
import { checkPart, type PageInfo } from '../directory';
import { decodeSnapshot, openSnapshot, partSource, DIRECTORY_KEY_LABEL, type SnapshotHeader } from '../directory';

/** What the persisted key directory says of the store's pages. */
export interface DirectoryRoles {
  /** The last commit page the directory covers (0 without a persisted directory). */
  readonly afterPage: number;
  /** The live commit pages it covers, each with what it must be (dropped ones removed). */
  readonly covered: Map<number, PageInfo>;
  /** The pages of its base's partitions. */
  readonly parts: Set<number>;
  /** The snapshots' own pages as read here (undefined: unreadable, reported), for the page pass. */
  readonly heads: Map<number, Uint8Array | undefined>;
  /**
   * Checks every partition of each base (given the partition pages the page pass read) and each
   * snapshot's row count against the manifest. Reports through `fail`.
   */
  checkParts(partPage: (id: number) => Uint8Array | undefined): void;
}

/** Where the step reports a failed check (the verifier's `fail`). */
export type Fail = (where: string, e: unknown, code?: string) => void;

/**
 * Reads and opens the snapshots `ref` names. Never throws for bad data: a snapshot page that cannot
 * be read, opened or decoded is reported through `fail`, and that snapshot lists no page.
 */
export async function directoryRoles(
  pages: PageStore,
  ref: DirectoryRef | undefined,
  keys: KeyRing,
  fail: Fail,
): Promise<DirectoryRoles> {
  const covered = new Map<number, PageInfo>();
  const parts = new Set<number>();
  const heads = new Map<number, Uint8Array | undefined>();
  /** Per snapshot that opened: what checkParts still checks. */
  const opened: { i: number; header: SnapshotHeader; rows: number; expected: number }[] = [];
  const key = () => keys.storeKey(DIRECTORY_KEY_LABEL);
  for (const [i, s] of (ref?.snapshots ?? []).entries()) {
    const got: (Uint8Array | undefined)[] = [];
    for (const id of s.pages) {
      let page: Uint8Array | undefined;
      try {
        page = await pages.readPage(id);
      } catch (e) {
        fail(`page ${id}`, e);
      }
      heads.set(id, page);
      got.push(page);
    }
    if (got.some((p) => p === undefined)) continue; // reported: missing (by the caller) or unreadable
    let plain: Uint8Array | undefined;
    try {
      plain = openSnapshot(key(), s.pages, got as Uint8Array[]);
      const snap = decodeSnapshot(plain);
      if (snap.header.kind !== s.kind)
        throw new PqdbError('CORRUPTION', 'the persisted key directory does not match the manifest');
      // The salts are views into the plaintext, wiped below.
      for (const [id, info] of snap.added) covered.set(id, { ...info, salt: info.salt.slice() });
      for (const id of snap.dropped) covered.delete(id);
      for (const id of snap.header.parts?.pages.flat() ?? []) parts.add(id);
      const rows = snap.collections.reduce((n, c) => n + c.rows.n, 0);
      opened.push({ i, header: snap.header, rows, expected: s.rows });
    } catch (e) {
      fail(`directory snapshot ${i}`, e);
    } finally {
      plain?.fill(0);
    }
  }
  for (const id of ref?.dropped ?? []) covered.delete(id);
  return {
    afterPage: ref?.afterPage ?? 0,
    covered,
    parts,
    heads,
    checkParts(partPage) {
      for (const { i, header, rows: headRows, expected } of opened) {
        try {
          let rows = headRows;
          if (header.parts !== undefined) {
            // A base in partitions: each opens and passes what loading it checks.
            const source = partSource(header, key, partPage);
            for (let p = 0; p < header.parts.pages.length; p++) {
              const part = source.load(p);
              try {
                checkPart(source, p, part.collections);
                for (const c of part.collections) rows += c.rows.n;
              } finally {
                part.done();
              }
            }
          }
          if (rows !== expected)
            throw new PqdbError('CORRUPTION', 'the persisted key directory does not match the manifest');
        } catch (e) {
          fail(`directory snapshot ${i}`, e);
        }
      }
    },
  };
}
