// A read-only Store that follows the writer of a page store several hosts share (DESIGN §6, the
// postgres page store; docs/postgres.md): `openStore({ storage, unlock, readOnly: true, follow })`.
// The page store says when its view moved (FollowablePageStore.watch, LISTEN/NOTIFY in postgres);
// the follower then brings the store's engine state to the new manifest:
//
// - Commits that only add records are taken in place by follow.ts, the step a replica takes
//   (src/replication/replica.ts): the new manifest authenticates under the installed store
//   secret, equals the installed one but for its counters, heads and new collections, its pages are
//   new commit pages between the page counters, and their leaves give exactly the heads it names.
//   Nothing is opened again: the key directory, logs, page cache and loaded indexes follow.
// - Anything else (a checkpoint, a migration step, a key, registry or policy change, deleted
//   pages) opens the engine state anew from the pages, with every check opening runs, the store id
//   pinned and the commit counter required to move forward; the Store then serves from it.
//
// Each engine state reads through its own FollowedPages view, pinned to the manifest and page set
// it was built from, so a refresh of the page store below never shows it pages of a later commit,
// and a state a reopen replaced keeps serving the reads that started on it (its keys are wiped
// once the last of them is done). A manifest that fails any check is refused with a PqdbError
// given to `onError`; the store keeps its last good state and takes the next manifest that passes.
//
// Security caveats: what the page store holds is the adversary's (DESIGN §11). Everything taken is
// verified as described before it changes anything; a rollback to an older manifest is refused
// (ROLLBACK), a foreign or altered one does not authenticate (AUTH_FAILED), pages that do not give
// the manifest's logs are CORRUPTION. The follower cannot tell that the writer stopped, nor that the
// page store shows an older but consistent state at open: pin `minCommit` for that (DESIGN §11).

import { PqdbError } from '../errors';
import { equalBytes } from '../_bytes';
import { type FollowablePageStore, type PageStoreView } from '../storage/page-store';
import { readPagesOf } from '../storage/page-store-base';
import { FollowedPages } from './followed-pages';
import type { FollowedCommits } from './follow';
import type { CommitPipeline } from './commit';

/** What the follower uses of an engine state (engine.ts's Engine is one). */
export interface FollowState {
  readonly pipeline: Pick<CommitPipeline, 'manifest' | 'sealedManifest'>;
  /** Verifies records-only commits against the state: the step that applies them, or undefined (open anew). */
  prepareFollow(next: FollowedCommits): (() => Promise<void>) | undefined;
  /** Wipes a replaced state's keys (its pages stay: the state serving now reads them). */
  retire(): void;
}

export { FollowedPages, followView } from './followed-pages';

/** What `follow` reports after the store took a new manifest. */
export interface FollowEvent {
  /** The commit the store now serves (`store.info().commit`). */
  readonly commit: number;
  /** True when it was taken in place (records only); false when the engine state was opened anew. */
  readonly inPlace: boolean;
  /** The page store's manifest version the store now serves. */
  readonly version: number;
}

/**
 * The `follow` option of openStore: true, or callbacks.
 * @example openStore({ storage, unlock, readOnly: true, follow: { onCommit: (e) => log(e.commit), onError: (e) => log(e.code) } })
 */
export interface FollowOptions {
  /** Called after each new manifest the store took, in order. */
  onCommit?(event: FollowEvent): void;
  /**
   * Called when a new manifest is refused (AUTH_FAILED, CORRUPTION, ROLLBACK, FORMAT_VERSION) or
   * the page store cannot follow for a while (IO_ERROR, NOT_FOUND); the store keeps serving its
   * last good state. Without it such errors are dropped (never an unhandled rejection).
   */
  onError?(error: PqdbError): void;
}

/** Delay before a step that failed on the medium (IO_ERROR) is tried again, in ms. */
const RETRY_MS = 1000;

/** How the follower reaches the Store it drives (store.ts wires it). */
export interface FollowHost<S extends FollowState> {
  /** The engine state the store serves now. */
  state(): S;
  /** Opens an engine state on `view` (read-only, the store id pinned, at least commit `minCommit`). */
  reopen(view: FollowedPages, minCommit: number): Promise<S>;
  /** Makes the store serve `next`; returns the state it replaced. */
  install(next: S): S;
}

/**
 * The options of `follow` as given: undefined when the store does not follow.
 * @throws TypeError for a value that is neither a boolean nor an object of callbacks
 */
export function followOptions(follow: unknown): FollowOptions | undefined {
  if (follow === undefined || follow === false) return undefined;
  if (follow === true) return {};
  if (typeof follow !== 'object' || follow === null)
    throw new TypeError(`"follow" expected a boolean or an object, got ${typeof follow}`);
  const o = follow as FollowOptions;
  for (const k of ['onCommit', 'onError'] as const)
    if (o[k] !== undefined && typeof o[k] !== 'function') throw new TypeError(`"follow.${k}" expected a function`);
  return o;
}

/** Follows the writer for one Store: started once it opened, closed with it. */
export class Follower<S extends FollowState> {
  readonly #host: FollowHost<S>;
  readonly #options: FollowOptions;
  readonly #base: FollowablePageStore;
  #view: FollowedPages;
  #stop: (() => void) | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #closed = false;
  #retry: ReturnType<typeof setTimeout> | undefined;
  /** Reads under way per engine state; replaced states, closed once their reads are done. */
  readonly #pins = new Map<S, number>();
  readonly #retired = new Set<S>();

  constructor(view: FollowedPages, host: FollowHost<S>, options: FollowOptions) {
    this.#view = view;
    this.#base = view.base;
    this.#host = host;
    this.#options = options;
  }

  /**
   * Starts watching the page store; resolves once its watching is in place.
   * @throws PqdbError NOT_OPEN when the page store was closed
   */
  async start(): Promise<void> {
    this.#stop = this.#base.watch(
      () => this.#kick(),
      (e) => this.#report(e),
    );
    await this.#base.ready();
    this.#kick(); // a commit made between opening and watching
  }

  /** Runs `read` counted against engine state `p`, which a reopen does not close under it. */
  async pinned<T>(p: S, read: () => Promise<T>): Promise<T> {
    this.#pins.set(p, (this.#pins.get(p) ?? 0) + 1);
    try {
      return await read();
    } finally {
      const n = this.#pins.get(p)! - 1;
      if (n > 0) this.#pins.set(p, n);
      else {
        this.#pins.delete(p);
        if (this.#retired.delete(p)) p.retire();
      }
    }
  }

  /** Stops following; waits for the step under way; wipes the replaced states' keys. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#stop?.();
    if (this.#retry !== undefined) clearTimeout(this.#retry);
    await this.#running;
    for (const p of this.#retired) p.retire();
    this.#retired.clear();
  }

  #kick(): void {
    if (this.#closed) return;
    if (this.#running !== undefined) {
      this.#again = true;
      return;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        try {
          if (await this.#step()) this.#again = true;
        } catch (e) {
          this.#report(e);
        }
      } while (this.#again && !this.#closed);
    })().finally(() => (this.#running = undefined));
  }

  /**
   * Brings the engine state to the page store's view. Resolves true when the view moved on while
   * a page of it was read (read it again).
   * @throws PqdbError for a manifest or pages refused (the state stays), IO_ERROR from the medium
   */
  async #step(): Promise<boolean> {
    const next = this.#base.view();
    const p = this.#host.state();
    const sealed = p.pipeline.sealedManifest;
    if (next.manifest === undefined || sealed === undefined || equalBytes(next.manifest, sealed)) return false;
    const installed = p.pipeline.manifest;
    // Records only: every page of the state is still there, and the others come after its counter.
    const pinned = this.#view.pin.pages;
    const added: number[] = [];
    let kept = 0;
    let onlyAdds = true;
    for (const id of next.pages.keys()) {
      if (id >= installed.nextPageId) added.push(id);
      else if (pinned.has(id)) kept++;
      else onlyAdds = false;
    }
    for (const id of pinned.keys()) if (id < installed.nextPageId) kept--;
    onlyAdds &&= kept === 0;
    let apply: (() => Promise<void>) | undefined;
    try {
      if (onlyAdds) {
        added.sort((a, b) => a - b);
        const bytes = await readPagesOf(this.#base, added);
        if (bytes.some((b) => b === undefined)) {
          if (this.#base.view() !== next) return true; // deleted by a later commit: take that one
          throw new PqdbError('CORRUPTION', 'a page the new manifest lists is missing');
        }
        const pages = added.map((id, i) => ({ id, bytes: bytes[i]! }));
        apply = p.prepareFollow({ pages, deletes: [], manifest: next.manifest });
      }
      if (apply !== undefined) {
        this.#view.advance(next);
        await apply();
        this.#taken(true, next);
        return false;
      }
      const view = new FollowedPages(this.#base, next);
      let state: S;
      try {
        state = await this.#host.reopen(view, installed.commit + 1);
      } catch (e) {
        // A page the view named was deleted by a later commit meanwhile: open on that one.
        if (this.#base.view() !== next && e instanceof PqdbError && e.code === 'CORRUPTION') return true;
        throw e;
      }
      const old = this.#host.install(state);
      this.#view = view;
      if (this.#pins.has(old)) this.#retired.add(old);
      else old.retire();
      this.#taken(false, next);
      return false;
    } catch (e) {
      if (e instanceof PqdbError && e.code === 'IO_ERROR') this.#retryLater();
      throw e;
    }
  }

  /** After a failure of the medium: tries again in a while, even if no commit comes. */
  #retryLater(): void {
    if (this.#closed || this.#retry !== undefined) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      this.#kick();
    }, RETRY_MS);
    (this.#retry as { unref?: () => void }).unref?.();
  }

  #taken(inPlace: boolean, view: PageStoreView): void {
    if (this.#closed) return;
    const event = { commit: this.#host.state().pipeline.manifest.commit, inPlace, version: view.version };
    try {
      this.#options.onCommit?.(event);
    } catch {
      // the application's callback: its failure is not the follower's
    }
  }

  #report(e: unknown): void {
    if (this.#closed) return;
    const error =
      e instanceof PqdbError
        ? e
        : new PqdbError('IO_ERROR', `following the writer: ${(e as Error)?.message ?? String(e)}`, { cause: e });
    try {
      this.#options.onError?.(error);
    } catch {
      // as above
    }
  }
}
