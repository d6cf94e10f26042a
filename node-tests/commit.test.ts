// The commit pipeline on its own (src/engine/commit.ts), driven by fake hooks over a memory page
// store: a draft is installed only after a durable write, a failure leaves the installed manifest,
// registry, key ring and counters exactly as they were, hooks run in order, and a refusing
// `prepare` writes nothing. Then the store-level regression this design fixes: a collection that
// names its suite while another commit fails. Then the hook contract: `on` returns the hooks'
// removal, an `applied` hook that throws never rejects a durable commit (the failure is kept in
// `failure`, the hooks after it run), and a foreign commit enters through `apply`, runs the same
// `applied` hooks (never `prepare` or `sealed`) and is installed only if its `prepare` succeeds.
import { describe, it, expect } from 'vitest';
import { openMemoryPageStore, openStore, generateRecipient } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { CommitPipeline, type AppliedCommit, type CommitPage } from '../src/engine/commit';
import { KeyRing } from '../src/engine/keys';
import { Registry } from '../src/engine/registry';
import { newManifest, unlockManifest, STORE_ID_LABEL } from '../src/engine/manifest';
import { hex } from '../src/_encoding';
import { faulty, type Faults } from './support/faulty-page-store';
import type { PageStore } from '../src/storage/page-store';

const r = generateRecipient('classical');

async function pipelineOver(faults: Faults = {}) {
  const medium = new MemoryMedium();
  const pages = faulty(await openMemoryPageStore({ medium }), faults);
  const keys = new KeyRing();
  keys.createGeneration(2, [r.publicKey]);
  keys.unlock(r.secretKey);
  const registry = new Registry({ active: 2 });
  const manifest = newManifest(hex(keys.storeKey(STORE_ID_LABEL, 16)), keys.records(), registry.records(), 2, [
    r.publicKey,
  ]);
  const pipeline = new CommitPipeline(pages, keys, manifest, registry);
  return { pipeline, pages, keys, medium };
}

const snapshot = (p: CommitPipeline, keys: KeyRing) => ({
  manifest: JSON.stringify(p.manifest),
  registry: JSON.stringify(p.registry.records()),
  generations: keys.generations(),
});

/** The stored manifest, opened with the recipient's key (its body is sealed). */
const decodeManifest = (raw: Uint8Array) => {
  const { manifest, keys } = unlockManifest(raw, r.secretKey);
  keys.close();
  return manifest;
};

describe('commit pipeline', () => {
  it('installs a draft only after its commit is durable; a failed commit changes nothing', async () => {
    const faults: Faults = {};
    const { pipeline, pages, keys } = await pipelineOver(faults);
    await pipeline.run((d) => {
      d.sequences(3);
      d.manifest.defaultSuite = 1;
    });
    expect(pipeline.manifest.nextSequence).toBe(4);
    expect(decodeManifest((await pages.readManifest())!).defaultSuite).toBe(1);
    const before = snapshot(pipeline, keys);
    const stored = await pages.readManifest();
    let aborted = 0;
    faults.failNextCommit = 'io';
    await expect(
      pipeline.run((d) => {
        d.sequences(10);
        d.addPage({ id: d.pageId(), bytes: new Uint8Array([1, 2, 3]) });
        d.manifest.defaultSuite = 3;
        d.registry.setState(3, 'active');
        d.registry.setState(2, 'quarantined');
        d.keyring.createGeneration(3, [r.publicKey]);
        d.onAbort(() => aborted++);
      }),
    ).rejects.toMatchObject({ code: 'IO_ERROR' });
    expect(aborted).toBe(1);
    expect(snapshot(pipeline, keys)).toEqual(before);
    expect(pipeline.registry.state(2)).toBe('active');
    expect(pipeline.registry.state(3)).toBe('decrypt-only');
    expect(await pages.readManifest()).toEqual(stored);
    expect(await pages.listPages()).toEqual([]);
    // A task that throws writes nothing either, and the queue goes on.
    await expect(
      pipeline.run((d) => {
        d.manifest.nextSequence = 99;
        throw new Error('task failed');
      }),
    ).rejects.toThrow('task failed');
    expect(snapshot(pipeline, keys)).toEqual(before);
    await pipeline.run((d) => void d.keyring.createGeneration(3, [r.publicKey]));
    expect(keys.generations()).toEqual([1, 2]);
    expect(decodeManifest((await pages.readManifest())!).keyring.map((k) => k.generation)).toEqual([0, 1, 2]); // 0: the store secret
    await pages.close();
  });

  it('runs prepare hooks before the write and applied hooks after it, in order; a refusing prepare writes nothing', async () => {
    const { pipeline, pages, keys } = await pipelineOver();
    const log: string[] = [];
    let refuse = false;
    pipeline.on({
      prepare: (d) => {
        log.push(`prepare A ${d.manifest.nextSequence}`);
        d.manifest.defaultSuite = 3; // a prepare hook may edit the draft
      },
      applied: (c: AppliedCommit) => void log.push(`applied A ${c.manifest.nextSequence}`),
    });
    pipeline.on({
      prepare: () => {
        log.push('prepare B');
        if (refuse) throw new RangeError('refused');
      },
      applied: async (c: AppliedCommit) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        log.push(`applied B ${c.manifest.nextSequence}`);
      },
    });
    const first = pipeline.run((d) => void d.sequences(1));
    const second = pipeline.run((d) => void d.sequences(2));
    await Promise.all([first, second]);
    expect(log).toEqual([
      'prepare A 2',
      'prepare B',
      'applied A 2',
      'applied B 2',
      'prepare A 4',
      'prepare B',
      'applied A 4',
      'applied B 4',
    ]);
    expect(pipeline.manifest.defaultSuite).toBe(3);
    const before = snapshot(pipeline, keys);
    const stored = await pages.readManifest();
    refuse = true;
    log.length = 0;
    await expect(pipeline.run((d) => d.addPage({ id: d.pageId(), bytes: new Uint8Array(8) }))).rejects.toThrow(
      'refused',
    );
    expect(log).toEqual(['prepare A 4', 'prepare B']);
    expect(snapshot(pipeline, keys)).toEqual(before);
    expect(await pages.readManifest()).toEqual(stored);
    expect(await pages.listPages()).toEqual([]);
    await pages.close();
  });

  it('a discarded draft writes nothing and runs no hook', async () => {
    const { pipeline, pages } = await pipelineOver();
    let applied = 0;
    pipeline.on({ applied: () => void applied++ });
    const result = await pipeline.run((d) => {
      d.sequences(5);
      d.discard();
      return 'nothing to do';
    });
    expect(result).toBe('nothing to do');
    expect(applied).toBe(0);
    expect(pipeline.manifest.nextSequence).toBe(1);
    expect(await pages.readManifest()).toBeUndefined();
    await pages.close();
  });
});

describe('the hook contract', () => {
  it('on() returns the removal of exactly that registration', async () => {
    const { pipeline, pages } = await pipelineOver();
    const log: string[] = [];
    const a = { applied: () => void log.push('a') };
    const offA = pipeline.on(a);
    const offA2 = pipeline.on(a); // the same hooks twice: two registrations
    const offB = pipeline.on({ applied: () => void log.push('b') });
    expect(pipeline.hookCount).toBe(3);
    await pipeline.run((d) => void d.sequences(1));
    expect(log).toEqual(['a', 'a', 'b']);
    offA();
    offA(); // idempotent: the second registration of `a` stays
    expect(pipeline.hookCount).toBe(2);
    log.length = 0;
    await pipeline.run((d) => void d.sequences(1));
    expect(log).toEqual(['a', 'b']);
    offA2();
    offB();
    log.length = 0;
    await pipeline.run((d) => void d.sequences(1));
    expect(log).toEqual([]);
    expect(pipeline.hookCount).toBe(0);
    await pages.close();
  });

  it('an applied hook that throws or rejects never rejects the durable commit; the failure is kept and the next hooks run', async () => {
    const { pipeline, pages } = await pipelineOver();
    const log: string[] = [];
    pipeline.on({
      applied: () => {
        throw new Error('sync hook failed');
      },
    });
    pipeline.on({ applied: async () => Promise.reject(new Error('async hook failed')) });
    pipeline.on({ applied: (c) => void log.push(`after ${c.manifest.commit}`) });
    expect(pipeline.failure).toBeUndefined();
    let after = 0;
    const result = await pipeline.run((d) => {
      d.sequences(1);
      d.afterCommit(() => {
        after++;
        throw new Error('afterCommit failed');
      });
      return 'done';
    });
    expect(result).toBe('done');
    expect(after).toBe(1);
    expect(log).toEqual([`after ${pipeline.manifest.commit}`]);
    expect(pipeline.failure).toMatchObject({ commit: pipeline.manifest.commit, foreign: false });
    expect((pipeline.failure!.error as Error).message).toBe('async hook failed'); // the last one
    // The commit is durable: the stored manifest is the installed one.
    expect(decodeManifest((await pages.readManifest())!).commit).toBe(pipeline.manifest.commit);
    await pages.close();
  });
});

describe('foreign commits (pipeline.apply)', () => {
  const page = (id: number): CommitPage => ({
    id,
    generation: 1,
    bytes: new Uint8Array([id]),
    ops: [
      { kind: 'put', collection: 'w', id: `p${id}`, offset: 0, length: 1, sequence: id, governance: '' },
      { kind: 'put', collection: 'w', id: `c${id}`, offset: 0, length: 1, sequence: id, governance: '', copy: true },
      { kind: 'delete', collection: 'w', id: `d${id}`, sequence: id },
    ],
  });

  it('installs the manifest, runs the applied hooks in order with the commit marked foreign, never prepare or sealed', async () => {
    const { pipeline, pages } = await pipelineOver();
    await pipeline.run((d) => void d.sequences(1));
    const log: string[] = [];
    const seen: AppliedCommit[] = [];
    pipeline.on({
      prepare: () => void log.push('prepare'),
      sealed: () => void log.push('sealed'),
      applied: (c) => void (log.push('applied A'), seen.push(c)),
    });
    pipeline.on({
      applied: () => {
        log.push('applied B');
        throw new Error('B failed');
      },
    });
    pipeline.on({ applied: async () => void log.push('applied C') });
    const manifest = structuredClone(pipeline.manifest);
    manifest.commit += 2;
    manifest.nextPageId = 3;
    const sealedManifest = new Uint8Array([9, 9, 9]);
    const commitPages = [page(1), page(2)];
    const applied = await pipeline.apply(() => ({ manifest, sealedManifest, commitPages }));
    expect(log).toEqual(['applied A', 'applied B', 'applied C']);
    expect(seen).toEqual([applied]);
    expect(applied).toMatchObject({
      foreign: true,
      manifest,
      sealedManifest,
      commitPages,
      pages: commitPages,
      deletes: [],
    });
    expect(applied.page).toBeUndefined();
    expect(applied.writes).toEqual([
      { kind: 'put', collection: 'w', id: 'p1' },
      { kind: 'put', collection: 'w', id: 'c1', copy: true },
      { kind: 'delete', collection: 'w', id: 'd1' },
      { kind: 'put', collection: 'w', id: 'p2' },
      { kind: 'put', collection: 'w', id: 'c2', copy: true },
      { kind: 'delete', collection: 'w', id: 'd2' },
    ]);
    expect(pipeline.manifest).toBe(manifest);
    expect(pipeline.sealedManifest).toBe(sealedManifest);
    expect(pipeline.failure).toMatchObject({ commit: manifest.commit, foreign: true });
    // An own commit after it (no record written): not foreign, no commit page.
    await pipeline.run((d) => void d.sequences(1));
    expect(seen[1]).toMatchObject({ foreign: false, commitPages: [] });
    await pages.close();
  });

  it('runs in the queue after the tasks before it; a prepare that throws, or a commit not newer, installs nothing and runs no hook', async () => {
    const { pipeline, pages } = await pipelineOver();
    let applied = 0;
    pipeline.on({ applied: () => void applied++ });
    const order: string[] = [];
    const task = pipeline.run(async (d) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      d.sequences(1);
      order.push('task');
    });
    const foreign = pipeline.apply(() => {
      order.push('prepare');
      const manifest = structuredClone(pipeline.manifest);
      manifest.commit++;
      return { manifest, sealedManifest: new Uint8Array(1), commitPages: [] };
    });
    await Promise.all([task, foreign]);
    expect(order).toEqual(['task', 'prepare']);
    expect(applied).toBe(2);
    const before = pipeline.manifest;
    await expect(
      pipeline.apply(() => {
        throw new RangeError('refused');
      }),
    ).rejects.toThrow('refused');
    await expect(
      pipeline.apply(() => ({ manifest: structuredClone(before), sealedManifest: new Uint8Array(1), commitPages: [] })),
    ).rejects.toMatchObject({ code: 'INTERNAL' });
    const changed = structuredClone(before);
    changed.commit++;
    changed.registry = [];
    await expect(
      pipeline.apply(() => ({ manifest: changed, sealedManifest: new Uint8Array(1), commitPages: [] })),
    ).rejects.toMatchObject({ code: 'INTERNAL' });
    expect(pipeline.manifest).toBe(before);
    expect(applied).toBe(2);
    await pages.close();
  });
});

describe('collections and failed commits', () => {
  it('a collection that names its suite while another commit fails writes with that suite, and the registry agrees after reopen', async () => {
    const medium = new MemoryMedium();
    const faults: Faults = {};
    const handles: PageStore[] = [];
    const open = async (create: boolean) => {
      const storage = faulty(await openMemoryPageStore({ medium }), faults);
      handles.push(storage); // a PageStore passed in stays the caller's to close
      return openStore({ storage, create, recipients: [r.publicKey], unlock: r.secretKey });
    };
    const store = await open(true);
    const a = store.collection('a', { schema: { n: 'integer' } });
    faults.failNextCommit = 'io';
    const failing = a.put('x', { n: 1 });
    // Opened while that commit is under way.
    const b = store.collection('b', { schema: { n: 'integer' }, suite: 'cnsa2-gcm-hkdf384-commit' });
    await expect(failing).rejects.toMatchObject({ code: 'IO_ERROR' });
    expect(store.registry.list().find((e) => e.suite.id === 3)?.state).toBe('decrypt-only'); // nothing committed yet
    await b.put('y', { n: 2 });
    const states = () => Object.fromEntries(store.registry.list().map((e) => [e.suite.id, e.state]));
    expect(states()).toMatchObject({ 2: 'active', 3: 'active' });
    const seen = states();
    await store.close();
    await handles.pop()!.close();
    const again = await open(false);
    expect(Object.fromEntries(again.registry.list().map((e) => [e.suite.id, e.state]))).toEqual(seen);
    const manifest = decodeManifest((await handles[0].readManifest())!);
    expect(manifest.collections.b.suite).toBe(3);
    expect(manifest.collections.a).toBeUndefined(); // its only write failed
    const b2 = again.collection('b', { schema: { n: 'integer' } });
    expect(await b2.get('y')).toEqual({ n: 2 });
    await again.close();
    await handles[0].close();
  });
});
