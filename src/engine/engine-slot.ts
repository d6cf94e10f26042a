// The engine a Store serves (store.ts). Most stores serve the one engine they opened. A store that
// follows its writer (follower.ts) swaps it for one opened anew, and keeps the replaced one for the
// reads still running on it: reads go through `pinned`, which counts them against the engine they
// started on.

import type { PageStore } from '../storage/page-store';
import type { Engine } from './engine';
import { openEngine } from './open-engine';
import { Follower, followOptions, followView, type FollowOptions } from './follower';
import type { StoreOptions } from './store-options';

export class EngineSlot {
  #engine: Engine;
  readonly #follower: Follower<Engine> | undefined;

  private constructor(engine: Engine, follower?: (slot: EngineSlot) => Follower<Engine>) {
    this.#engine = engine;
    this.#follower = follower?.(this);
  }

  /**
   * Opens the engine of `options` on `pages`: for good, or, with `options.follow`, following the
   * writer (`following`; `declare` gives each engine opened anew the store's collections).
   * @throws as openEngine; TypeError for a bad `follow`
   */
  static async open(pages: PageStore, options: StoreOptions, declare: (next: Engine) => void): Promise<EngineSlot> {
    const follow = followOptions(options.follow);
    if (follow === undefined) return EngineSlot.of(await openEngine(pages, options));
    return EngineSlot.following(pages, options, follow, declare);
  }

  /** A slot that serves `engine` for good. */
  static of(engine: Engine): EngineSlot {
    return new EngineSlot(engine);
  }

  /**
   * Opens a read-only engine on a view of `pages` and follows the writer: each engine opened anew
   * is installed after `declare` gave it the store's collections. Resolves once following started.
   * @throws as openEngine; PqdbError NOT_OPEN when the page store was closed meanwhile
   */
  static async following(
    pages: PageStore,
    options: StoreOptions,
    follow: FollowOptions,
    declare: (next: Engine) => void,
  ): Promise<EngineSlot> {
    const view = followView(pages, options.readOnly);
    const first = await openEngine(view, { ...options, follow: false });
    const storeId = first.info().storeId;
    const slot = new EngineSlot(first, (s) => {
      const install = (next: Engine): Engine => {
        const old = s.#engine;
        s.#engine = next;
        declare(next);
        return old;
      };
      const reopen = (next: PageStore, minCommit: number) => openEngine(next, { ...options, storeId, minCommit });
      return new Follower<Engine>(view, { state: () => s.#engine, reopen, install }, follow);
    });
    await slot.#follower!.start().catch(async (e: unknown) => {
      await slot.close();
      throw e;
    });
    return slot;
  }

  /** The engine served now. */
  get engine(): Engine {
    return this.#engine;
  }

  /** Runs `read` on the engine served now; a following store keeps that engine for it until it is done. */
  pinned<T>(read: (e: Engine) => Promise<T>): Promise<T> {
    const e = this.#engine;
    return this.#follower === undefined ? read(e) : this.#follower.pinned(e, () => read(e));
  }

  /** Stops following, then closes the engine served now (waiting for its pending commits). */
  async close(): Promise<void> {
    await this.#follower?.close();
    await this.#engine.close();
  }
}
