// The commit pipeline (DESIGN §2, §6): the only writer of the PageStore. Every change of a store —
// a put, a migration's copy chunk, a phase change, a checkpoint, a retirement, an index reseal, a
// registry or recipient change — is a task run in one queue. A task edits a *draft*: a copy of the
// installed manifest, the registry and the key ring's persisted form, the record operations of one
// commit page and any other pages to add or delete. The pipeline then runs the `prepare` hooks
// (which may edit the draft or refuse it), seals the commit page, writes everything and the
// manifest in one atomic PageStore commit, and only once that is durable installs the draft and
// runs the `applied` hooks in commit order. A failure anywhere drops the draft: nothing was
// installed, so nothing is rolled back by hand (the install-after-durable rule of Pebble's
// version edits).
//
// Page ids and write sequences are allocated from the draft manifest, so a failed commit hands them
// out again (see docs/security.md on why no AES-GCM nonce depends on that alone).

import { PqdbError } from '../errors';
import type { PageStore } from '../storage/page-store';
import type { Value } from './codec';
import type { MerkleAppender } from '../crypto/merkle';
import type { KeyRing, KeyringDraft } from './keys';
import { Registry } from './registry';
import { encodePage, pageKey, type IndexedOp, type PageWriteOp } from './page-format';
import { SALT_BYTES } from '../crypto/record';
import { cloneManifest, encodeManifest, keyringEntries, MANIFEST_KEY_LABEL, type Manifest } from './manifest';

/** A page to write: its id (allocated from the draft) and bytes. */
export interface PageOut {
  id: number;
  bytes: Uint8Array;
}

/** The commit page of a commit: its record operations and where each record landed. */
export interface CommitPage extends PageOut {
  generation: number;
  ops: readonly IndexedOp[];
  /** The Merkle leaf hashes of its operations, once a `sealed` hook computed them. */
  leaves?: Uint8Array;
  /** Its generation's compact range with those leaves appended (set with `leaves`). */
  appender?: MerkleAppender;
}

/** A record operation of a commit as the hooks see it (values only for users' puts). */
export interface Write {
  kind: 'put' | 'delete';
  collection: string;
  id: string;
  /** The value written (a user's put). */
  value?: Value;
  /** Written by a migration's copy (the value is unchanged). */
  copy?: boolean;
}

/** What a durable commit wrote, handed to `applied` hooks in commit order. */
export interface AppliedCommit {
  /** The manifest now installed. */
  readonly manifest: Manifest;
  /** The commit page of the record operations, if the commit had any. */
  readonly page?: CommitPage;
  /** Every page written (the commit page first, when there is one). */
  readonly pages: readonly PageOut[];
  readonly deletes: readonly number[];
  readonly writes: readonly Write[];
  /** The manifest as sealed and written (read it, never change it): what a replica is sent. */
  readonly sealedManifest: Uint8Array;
}

export interface CommitHooks {
  /** Runs before the commit is sealed (synchronously): may edit the draft, or throw to refuse it. */
  prepare?(draft: Draft): void;
  /** Runs once the commit page is sealed, before the manifest is (synchronously): may edit the draft. */
  sealed?(draft: Draft, page: CommitPage): void;
  /** Runs after the commit is durable and installed, in commit order. */
  applied?(commit: AppliedCommit): void | Promise<void>;
}

/** A task's edits: nothing of it takes effect unless its commit is durable. */
export class Draft {
  /** A copy of the installed manifest to edit. */
  readonly manifest: Manifest;
  readonly pages: PageOut[] = [];
  readonly deletes: number[] = [];
  readonly writes: Write[] = [];
  readonly #ops: PageWriteOp[] = [];
  readonly #installed: Registry;
  readonly #keys: KeyRing;
  #registry?: Registry;
  #keyring?: KeyringDraft;
  readonly #abort: (() => void)[] = [];
  readonly #after: (() => void)[] = [];
  #discarded = false;
  #salt?: Uint8Array;

  /** @internal Made by CommitPipeline.run. */
  constructor(installed: Manifest, registry: Registry, keys: KeyRing) {
    this.manifest = cloneManifest(installed);
    this.#installed = registry;
    this.#keys = keys;
  }

  /** The crypto registry to edit (a copy of the installed one). */
  get registry(): Registry {
    return (this.#registry ??= new Registry({ records: this.#installed.records() }));
  }

  /** The registry as this commit would leave it, without copying it when it is not edited. */
  get currentRegistry(): Registry {
    return this.#registry ?? this.#installed;
  }

  /** The key ring's persisted form to edit (roots it creates are wiped if the commit fails). */
  get keyring(): KeyringDraft {
    return (this.#keyring ??= this.#keys.draft());
  }

  /** The next page id. */
  pageId(): number {
    return this.manifest.nextPageId++;
  }

  /** The first of `n` consecutive write sequences. */
  sequences(n: number): number {
    const base = this.manifest.nextSequence;
    this.manifest.nextSequence += n;
    return base;
  }

  /**
   * The commit salt the commit page will carry (16 random bytes, drawn on the first call), for
   * records sealed before the page is encoded (RecordIO.putSealed). A dropped draft takes its salt
   * with it: a retried commit draws a fresh one.
   */
  commitSalt(): Uint8Array {
    if (this.#salt === undefined) globalThis.crypto.getRandomValues((this.#salt = new Uint8Array(SALT_BYTES)));
    return this.#salt;
  }

  addPage(page: PageOut): void {
    this.pages.push(page);
  }

  deletePage(pageId: number): void {
    this.deletes.push(pageId);
  }

  /** Adds a record operation to the commit page (sealed when the commit is). */
  write(op: PageWriteOp, write: Write): void {
    this.#ops.push(op);
    this.writes.push(write);
  }

  /** Runs if the commit does not happen (after the draft is dropped). */
  onAbort(fn: () => void): void {
    this.#abort.push(fn);
  }

  /** Runs once the commit is durable and installed, before the `applied` hooks. */
  afterCommit(fn: () => void): void {
    this.#after.push(fn);
  }

  /** Ends the task without a commit (nothing to write). */
  discard(): void {
    this.#discarded = true;
  }

  /** @internal The commit salt, if commitSalt drew one. */ get drawnSalt(): Uint8Array | undefined {
    return this.#salt;
  }
  /** @internal */ get discarded(): boolean {
    return this.#discarded;
  }
  /** @internal */ get ops(): readonly PageWriteOp[] {
    return this.#ops;
  }
  /** @internal */ get editedRegistry(): Registry | undefined {
    return this.#registry;
  }
  /** @internal */ get editedKeyring(): KeyringDraft | undefined {
    return this.#keyring;
  }
  /** @internal */ aborted(): void {
    this.#keyring?.discard();
    for (const fn of this.#abort) fn();
  }
  /** @internal */ committed(): void {
    for (const fn of this.#after) fn();
  }
}

export class CommitPipeline {
  readonly #pages: PageStore;
  readonly #keys: KeyRing;
  #manifest: Manifest;
  #sealed: Uint8Array | undefined;
  #registry: Registry;
  readonly #hooks: CommitHooks[] = [];
  #queue: Promise<unknown> = Promise.resolve();
  #check: () => void;

  /**
   * @param check runs before every task (it throws when the store is closed or read-only).
   */
  constructor(
    pages: PageStore,
    keys: KeyRing,
    manifest: Manifest,
    registry: Registry,
    check: () => void = () => {},
    sealed?: Uint8Array,
  ) {
    this.#sealed = sealed;
    this.#pages = pages;
    this.#keys = keys;
    this.#manifest = manifest;
    this.#registry = registry;
    this.#check = check;
  }

  /** The installed manifest: read it, never edit it (edit a draft). */
  get manifest(): Manifest {
    return this.#manifest;
  }

  /**
   * The installed manifest as sealed and stored (read it, never change it): the bytes it was opened
   * from, then each commit's. Undefined for a new store before its first commit.
   */
  get sealedManifest(): Uint8Array | undefined {
    return this.#sealed;
  }

  /** The installed crypto registry: read it, never edit it (edit a draft's). */
  get registry(): Registry {
    return this.#registry;
  }

  /**
   * Installs a manifest another writer committed to the same store, once the caller has verified it
   * against the pages it adds and made both durable (a read-only store following its primary:
   * follow.ts). Its registry and key ring are the installed ones.
   */
  adopt(manifest: Manifest, sealed: Uint8Array): void {
    this.#manifest = manifest;
    this.#sealed = sealed;
  }

  /** Registers hooks; they run in registration order. */
  hook(hooks: CommitHooks): void {
    this.#hooks.push(hooks);
  }

  /** Runs `fn` alone in the queue (after every task queued before it); it writes nothing itself. */
  exclusive<T>(fn: () => Promise<T> | T): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** Resolves once every task queued so far has finished. */
  idle(): Promise<void> {
    return this.#queue.then(() => undefined);
  }

  /**
   * Queues a task: it edits a fresh draft, which is then committed (unless the task discards it)
   * and installed once durable. Resolves with the task's result after the `applied` hooks ran.
   * @throws whatever the task, a `prepare` hook or the PageStore throws; the draft is dropped.
   */
  run<T>(task: (draft: Draft) => Promise<T> | T): Promise<T> {
    return this.exclusive(async () => {
      this.#check();
      const draft = new Draft(this.#manifest, this.#registry, this.#keys);
      let result: T;
      let applied: AppliedCommit | undefined;
      try {
        result = await task(draft);
        if (draft.discarded) {
          draft.aborted();
          return result;
        }
        applied = await this.#commit(draft);
      } catch (e) {
        draft.aborted();
        throw e;
      }
      draft.committed();
      for (const h of this.#hooks) await h.applied?.(applied);
      return result;
    });
  }

  /** Seals and writes the draft in one PageStore commit, then installs it. */
  async #commit(draft: Draft): Promise<AppliedCommit> {
    for (const h of this.#hooks) h.prepare?.(draft);
    const m = draft.manifest;
    let page: CommitPage | undefined;
    if (draft.ops.length > 0) {
      if (draft.editedKeyring !== undefined)
        throw new PqdbError('INTERNAL', 'a commit that changes the key ring cannot write records');
      const id = draft.pageId();
      const generation = this.#keys.current();
      const key = this.#keys.generationKey(generation, 'page', pageKey);
      const encoded = encodePage(id, generation, key, draft.ops, draft.drawnSalt);
      page = { id, generation, bytes: encoded.bytes, ops: encoded.index };
      for (const h of this.#hooks) h.sealed?.(draft, page);
    }
    const registry = draft.editedRegistry;
    const keyring = draft.editedKeyring;
    if (registry !== undefined) m.registry = registry.records();
    if (keyring !== undefined) m.keyring = keyringEntries(keyring.records);
    const pages = page !== undefined ? [page, ...draft.pages] : draft.pages;
    m.commit++;
    const manifest = encodeManifest(m, this.#keys.storeKey(MANIFEST_KEY_LABEL));
    await this.#pages.commit({
      pages: pages.map((p) => ({ id: p.id, bytes: p.bytes })),
      deletes: draft.deletes,
      manifest,
      transfer: true,
    });
    // Durable: the draft becomes the store's state.
    this.#manifest = m;
    this.#sealed = manifest;
    if (registry !== undefined) this.#registry = registry;
    if (keyring !== undefined) this.#keys.install(keyring);
    return { manifest: m, page, pages, deletes: draft.deletes, writes: draft.writes, sealedManifest: manifest };
  }
}
