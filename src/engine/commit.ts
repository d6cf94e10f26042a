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
//
// The pipeline is the only installer of the manifest, the registry and the key ring. A commit
// another writer made (a store following its primary, a replica: follow.ts verifies it) enters
// through `apply` (the model is Pebble's AllocateSeqNum(prepare, apply)): it runs in the same
// queue, installs the verified manifest and runs the same `applied` hooks in order, with an
// AppliedCommit marked `foreign`. Hooks are added with `on`, which returns their removal. An
// `applied` hook runs after the commit is durable, so its failure never rejects the write: it is
// kept in `failure` (store.info() reports it) and the remaining hooks still run.

import { PqdbError } from '../errors';
import type { PageStore } from '../storage/page-store';
import type { Value } from './codec';
import type { MerkleAppender } from '../crypto/merkle';
import type { KeyRing, KeyringDraft } from './keys';
import { Registry } from './registry';
import { encodePage, pageKey, type IndexedOp, type PageWriteOp } from './page-format';
import { SALT_BYTES } from '../crypto/record';
import { cloneManifest, encodeManifest, keyringEntries, MANIFEST_KEY_LABEL, type Manifest } from './manifest';
import { PagePins } from './pins';
import { sliceSpent, yieldToEventLoop } from '../_yield';

/** Records from which a commit yields before each of its long stages (reads first). */
const SLICED_COMMIT_OPS = 64;

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
  /**
   * A commit another writer made to this store (followed or replicated), installed by `apply` on a
   * read-only store. Hooks that write (checkpoints, compaction) must not act on it.
   */
  readonly foreign: boolean;
  /**
   * Every commit page of the commit, in page order: at most one for a commit of this pipeline, any
   * number for a foreign one (the commits a follower takes in one step).
   */
  readonly commitPages: readonly CommitPage[];
  /** The commit page of a commit this pipeline sealed, if it had record operations (never set for a foreign commit: read `commitPages`). */
  readonly page?: CommitPage;
  /** Every page written (the commit pages first). */
  readonly pages: readonly PageOut[];
  readonly deletes: readonly number[];
  /**
   * The record operations, in order. For a foreign commit they are derived from its pages' operations
   * and carry no `value` (its records are sealed: read them from the store).
   */
  readonly writes: readonly Write[];
  /** The manifest as sealed and written (read it, never change it): what a replica is sent. */
  readonly sealedManifest: Uint8Array;
}

/**
 * A commit another writer made, verified against the installed state (follow.ts) and durable below
 * the store: what `apply` installs. Its registry and key ring are the installed ones (a commit that
 * changes them is opened anew, never applied).
 */
export interface ForeignCommit {
  readonly manifest: Manifest;
  /** `manifest` as sealed and stored. */
  readonly sealedManifest: Uint8Array;
  /** Its commit pages in page order, decoded (with their leaves and compact ranges where computed). */
  readonly commitPages: readonly CommitPage[];
  /** Every page it wrote; defaults to `commitPages`. */
  readonly pages?: readonly PageOut[];
  readonly deletes?: readonly number[];
}

/** An `applied` hook that failed: the commit it ran for is durable and stays installed. */
export interface HookFailure {
  readonly error: unknown;
  /** The commit counter of the commit the hook ran for. */
  readonly commit: number;
  readonly foreign: boolean;
}

export interface CommitHooks {
  /** Runs before the commit is sealed (synchronously): may edit the draft, or throw to refuse it. Not run for foreign commits. */
  prepare?(draft: Draft): void;
  /** Runs once the commit page is sealed, before the manifest is (synchronously): may edit the draft. Not run for foreign commits. */
  sealed?(draft: Draft, page: CommitPage): void;
  /**
   * Runs after the commit is durable and installed, in commit order, for the pipeline's own commits
   * and foreign ones alike (see `AppliedCommit.foreign`). What it throws or rejects with is kept in
   * `CommitPipeline.failure`, never thrown to the writer; the hooks after it still run.
   */
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
  /** Each registration in its own entry, so one set of hooks registered twice is removed once. */
  readonly #hooks: { readonly hooks: CommitHooks }[] = [];
  #failure: HookFailure | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #check: () => void;
  /** Page deletions held back while a reader holds a pin (pins.ts). */
  readonly pins = new PagePins();

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
   * The last failure of an `applied` hook (or of a task's `afterCommit` step), kept until the
   * pipeline is dropped: the commit it ran for was durable and stays installed, and the write that
   * made it resolved. store.info() reports it as `afterCommitError`.
   */
  get failure(): HookFailure | undefined {
    return this.#failure;
  }

  /**
   * Registers hooks; they run in registration order. Returns their removal (idempotent).
   * @example const off = pipeline.on({ applied: (c) => ship(c) }); … off();
   */
  on(hooks: CommitHooks): () => void {
    const entry = { hooks };
    this.#hooks.push(entry);
    return () => {
      const i = this.#hooks.indexOf(entry);
      if (i >= 0) this.#hooks.splice(i, 1);
    };
  }

  /** How many hook registrations are in force (for tests of their removal). */
  get hookCount(): number {
    return this.#hooks.length;
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
      await this.#afterDurable(applied, () => draft.committed());
      return result;
    });
  }

  /**
   * Installs a commit another writer made (a read-only store following its primary, a replica),
   * in the queue after every task queued before it: `prepare` returns it, verified against the
   * installed state and durable below the store; the pipeline installs its manifest and runs the
   * `applied` hooks with it, marked `foreign`. No `prepare` or `sealed` hook runs (nothing is
   * sealed here), nor the `check` of tasks (a read-only store applies foreign commits: `prepare`
   * checks what it needs). Resolves with what the hooks were given.
   * @throws whatever `prepare` throws (nothing is installed); PqdbError INTERNAL for a commit not
   * newer than the installed one or that changes the registry or key ring (follow.ts never passes one)
   */
  apply(prepare: () => ForeignCommit | Promise<ForeignCommit>): Promise<AppliedCommit> {
    return this.exclusive(async () => {
      const c = await prepare();
      const m = c.manifest;
      if (m.commit <= this.#manifest.commit)
        throw new PqdbError(
          'INTERNAL',
          `foreign commit ${m.commit} is not newer than the installed ${this.#manifest.commit}`,
        );
      if (
        JSON.stringify(m.registry) !== JSON.stringify(this.#manifest.registry) ||
        JSON.stringify(m.keyring) !== JSON.stringify(this.#manifest.keyring)
      )
        throw new PqdbError('INTERNAL', `foreign commit ${m.commit} changes the registry or the key ring`);
      this.#manifest = m;
      this.#sealed = c.sealedManifest;
      const writes: Write[] = [];
      for (const page of c.commitPages)
        for (const op of page.ops)
          writes.push({
            kind: op.kind,
            collection: op.collection,
            id: op.id,
            ...(op.kind === 'put' && op.copy === true ? { copy: true } : {}),
          });
      const applied: AppliedCommit = {
        manifest: m,
        foreign: true,
        commitPages: c.commitPages,
        pages: c.pages ?? c.commitPages,
        deletes: c.deletes ?? [],
        writes,
        sealedManifest: c.sealedManifest,
      };
      await this.#afterDurable(applied);
      return applied;
    });
  }

  /**
   * Runs `first` (a task's afterCommit steps) and then every `applied` hook, each on its own: a
   * failure is kept in `failure` and the next one runs. Never throws: the commit is durable.
   */
  async #afterDurable(commit: AppliedCommit, first?: () => void): Promise<void> {
    const fail = (error: unknown) =>
      (this.#failure = { error, commit: commit.manifest.commit, foreign: commit.foreign });
    try {
      first?.();
    } catch (e) {
      fail(e);
    }
    // A snapshot: a hook removed (or added) meanwhile does not shift the ones still to run.
    for (const { hooks } of [...this.#hooks]) {
      try {
        await hooks.applied?.(commit);
      } catch (e) {
        fail(e);
      }
    }
  }

  /** Seals and writes the draft in one PageStore commit, then installs it. */
  async #commit(draft: Draft): Promise<AppliedCommit> {
    for (const { hooks } of this.#hooks) hooks.prepare?.(draft);
    const m = draft.manifest;
    // A commit of many records (a migration's chunk, a bulk batch) lets waiting reads in before
    // each of its long stages (encoding and sealing its page, hashing its leaves: a few ms each
    // for a chunk of 256); a small one runs them at once.
    const sliced = draft.ops.length >= SLICED_COMMIT_OPS;
    let page: CommitPage | undefined;
    if (draft.ops.length > 0) {
      if (sliced) await yieldToEventLoop();
      if (draft.editedKeyring !== undefined)
        throw new PqdbError('INTERNAL', 'a commit that changes the key ring cannot write records');
      const id = draft.pageId();
      const generation = this.#keys.current();
      const key = this.#keys.generationKey(generation, 'page', pageKey);
      const encoded = encodePage(id, generation, key, draft.ops, draft.drawnSalt);
      page = { id, generation, bytes: encoded.bytes, ops: encoded.index };
      if (sliced) await yieldToEventLoop();
      for (const { hooks } of this.#hooks) hooks.sealed?.(draft, page);
      if (sliced && sliceSpent()) await yieldToEventLoop();
    }
    const registry = draft.editedRegistry;
    const keyring = draft.editedKeyring;
    if (registry !== undefined) m.registry = registry.records();
    if (keyring !== undefined) m.keyring = keyringEntries(keyring.records);
    const pages = page !== undefined ? [page, ...draft.pages] : draft.pages;
    m.commit++;
    const deletes = this.pins.hold(m, draft.deletes);
    const manifest = encodeManifest(m, this.#keys.storeKey(MANIFEST_KEY_LABEL));
    await this.#pages.commit({
      pages: pages.map((p) => ({ id: p.id, bytes: p.bytes })),
      deletes,
      manifest,
      transfer: true,
    });
    // Durable: the draft becomes the store's state.
    this.#manifest = m;
    this.#sealed = manifest;
    if (registry !== undefined) this.#registry = registry;
    if (keyring !== undefined) this.#keys.install(keyring);
    return {
      manifest: m,
      foreign: false,
      commitPages: page !== undefined ? [page] : [],
      page,
      pages,
      deletes: draft.deletes,
      writes: draft.writes,
      sealedManifest: manifest,
    };
  }
}
