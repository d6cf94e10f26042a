// Page pins (Pebble's Checkpoint is the model): a reader that took the page list of one commit
// (a backup, src/engine/copies.ts) pins it, and reads the pages outside the commit queue while
// writes go on. Pages are immutable and only a commit deletes them, so a pin has one thing to do:
// hold back the deletions of the commits made while it is held.
//
// A commit's deletions still take effect in the engine at that commit (the manifest, the key
// directory, the cache and the replicas no longer name the pages); only the page store's delete
// waits. The ids held back are listed in the manifest that commit writes (`heldPages`, sealed with
// it), so a crash while a pin is held leaves pages that the store names as deleted, never pages
// taken for live ones: opening skips them (replay and verify name them) and a writable open
// deletes them. Once the last pin is released, one commit deletes them and clears the list; a
// commit that fails to do so leaves the list for the next commit, which deletes them when no pin is
// held. A held-back delete is thus done by the release, by a later commit or by the next open.

import type { Manifest } from './manifest';

/** The deletions a commit makes now, and the ones it holds back while pinned. */
export class PagePins {
  #held = 0;

  /** Whether a pin is held. */
  get pinned(): boolean {
    return this.#held > 0;
  }

  /**
   * Holds back page deletions until the returned release is called (once; again is a no-op).
   * Returns whether that release was the last one: then the held-back pages are to be deleted.
   */
  pin(): () => boolean {
    this.#held++;
    let released = false;
    return () => {
      if (released) return false;
      released = true;
      return --this.#held === 0;
    };
  }

  /**
   * In a commit, after its `prepare` hooks: the page ids the page store deletes now. While pinned,
   * none: the commit's deletions are added to the draft manifest's `heldPages`. Otherwise every one,
   * with the pages held back before (added to `deletes`, so the commit reports them, and a replica
   * that was sent them drops them); `heldPages` goes.
   */
  hold(m: Manifest, deletes: number[]): readonly number[] {
    if (this.#held > 0) {
      if (deletes.length > 0) m.heldPages = [...new Set([...(m.heldPages ?? []), ...deletes])];
      return [];
    }
    if (m.heldPages !== undefined) {
      const known = new Set(deletes);
      for (const id of m.heldPages) if (!known.has(id)) deletes.push(id);
      delete m.heldPages;
    }
    return deletes;
  }
}

/** What `pinPages` needs of the commit pipeline. */
export interface Pinnable {
  readonly pins: PagePins;
  readonly manifest: Manifest;
  run(task: () => void): Promise<unknown>;
}

/** A pin on a store's pages (pinPages). */
export interface PageRelease {
  /**
   * Releases the pin inside a task of the pipeline: that task's commit deletes the pages held back
   * (when it is the last pin). Once; returns whether it released.
   */
  inCommit(): boolean;
  /**
   * Releases the pin (unless released already) and, when it was the last one, deletes the pages
   * held back in a commit of its own; when that commit fails (the store closed, an I/O error), they
   * stay listed in the manifest for a later commit or the next open (see above). Never throws.
   */
  release(): Promise<void>;
}

/** Pins the pages of `pipeline`'s store until the pin is released (PageRelease). */
export function pinPages(pipeline: Pinnable): PageRelease {
  const release = pipeline.pins.pin();
  let done = false;
  return {
    inCommit: () => {
      if (done) return false;
      done = true;
      release();
      return true;
    },
    release: async () => {
      if (done) return;
      done = true;
      if (!release() || pipeline.manifest.heldPages === undefined) return;
      await pipeline.run(() => undefined).catch(() => undefined);
    },
  };
}
