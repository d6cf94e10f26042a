// An adversarial fuzzer of forks against restore (DESIGN §11, docs/authority.md "Restore"). Each
// case writes a store in memory — puts, updates, deletes, governance scopes, checkpoints, maybe a
// policy change, a compaction or a migration — and copies its medium at a random commit. A removed
// recipient, who holds the store secret but no signer key, then writes on the copy: forged values,
// covered records updated or deleted, scopes widened past the restore gate, a compaction or a
// migration of its own, maybe a checkpoint signed by another key, a key directory rewritten to
// point at other versions, leaves or generations, a manifest whose authority is stripped, widened
// or rolled back, whose schema is changed or collection dropped, or that lists another recipient.
// Meanwhile the live store goes on writing (and may remove that recipient). The fork is then
// restored, with the live store or without (naming the policy, keys and recipients, or not).
//
// The model: the versions (id → value and scope) the trusted signer covered — written before the
// fork's last checkpoint — and the live store's current state. Every restored record must be a
// version the signer covered, or (with `live`) the live store's current one, and present in the
// live store; its scope must be one the current policy lets restore; the new store pins the
// store's own authority keys only and has the recipients it should; the counts add up to the
// fork's records; every failure is a PqdbError. What the copy's own manifest decides when no
// option names it (docs/authority.md) is not held against it. Seeded and bounded
// (PQDB_FORK_CASES, default 300; PQDB_FORK_SEED; PQDB_FORK_VERBOSE prints each refusal).
import { describe, it, expect } from 'vitest';
import {
  openStore,
  generateRecipient,
  generateSigner,
  openMemoryPageStore,
  restoreStore,
  signPolicy,
  PqdbError,
  type Store,
} from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { engineOf as partsOf } from '../src/engine/store';
import { b64 } from '../src/_encoding';
import type { Location } from '../src/engine/directory';
import { Rng } from './cases/_util';

const CASES = Number(process.env.PQDB_FORK_CASES ?? 300);
const SEED = Number(process.env.PQDB_FORK_SEED ?? 20261206);
const owner = generateRecipient('classical');
const removed = generateRecipient('classical');
const signer = generateSigner();
const other = generateSigner(); // the fork's own signer: never trusted
const policyKey = generateSigner();
const intruder = generateRecipient('classical'); // a recipient a fork lists
const forgerKey = generateSigner(); // an authority key the fork would pin
const schema = { v: 'string' } as const;
const DOMAIN = 'fork-fuzz';
const SCOPES = [undefined, 'hr', 'ops', 'eng'] as const;
const gov = (scope: string | undefined) => (scope === undefined ? '{}' : JSON.stringify({ scope }));

/** hr may never be restored; version 2 takes `restore` from ops too. */
const RULES: Record<number, { scope: string; allow: string[] }[]> = {
  1: [
    { scope: 'hr', allow: ['read', 'write', 'migrate'] },
    { scope: '*', allow: ['read', 'write', 'migrate', 'restore'] },
  ],
  2: [
    { scope: 'hr', allow: ['read', 'write', 'migrate'] },
    { scope: 'ops', allow: ['read', 'write', 'migrate'] },
    { scope: '*', allow: ['read', 'write', 'migrate', 'restore'] },
  ],
};
const POLICY: Record<number, Uint8Array> = Object.fromEntries(
  [1, 2].map((v) => [
    v,
    signPolicy({ version: v, rules: RULES[v], domain: DOMAIN } as never, policyKey.secretKey, policyKey.publicKey),
  ]),
);
/** Whether policy `version` lets a record of governance text `g` be restored. */
const restorable = (version: number, g: string) => {
  const scope = (JSON.parse(g) as { scope?: string }).scope;
  return !(scope === 'hr' || (version >= 2 && scope === 'ops'));
};

const copyMedium = (m: MemoryMedium): MemoryMedium => {
  const c = new MemoryMedium();
  for (const [id, p] of m.pages) c.pages.set(id, p); // stored pages are never written in place
  c.manifest = m.manifest;
  return c;
};

/** The history of the base store as a model. */
class Model {
  /** Versions the trusted signer covered: id → "value\0governance". */
  covered = new Map<string, Set<string>>();
  /** Written since the last checkpoint. */
  pending: [string, string][] = [];
  /** Directory locations, per id, covered or not (the fork's attacker reuses them). */
  coveredLocs = new Map<string, Location[]>();
  pendingLocs: [string, Location][] = [];
  current = new Map<string, { v: string; g: string }>();
  policy = 1;
  checkpoints = 0;
  migrated = false;

  wrote(store: Store, id: string, v: string | undefined, g: string): void {
    if (v === undefined) {
      this.current.delete(id);
      return;
    }
    this.current.set(id, { v, g });
    this.pending.push([id, `${v}\0${g}`]);
    const loc = partsOf(store).directory.get('d', id);
    if (loc !== undefined) this.pendingLocs.push([id, { ...loc }]);
  }
  signed(): void {
    for (const [id, k] of this.pending) (this.covered.get(id) ?? this.covered.set(id, new Set()).get(id)!).add(k);
    for (const [id, l] of this.pendingLocs) (this.coveredLocs.get(id) ?? this.coveredLocs.set(id, []).get(id)!).push(l);
    this.pending = [];
    this.pendingLocs = [];
    this.checkpoints++;
  }
  frozen(): { covered: Map<string, Set<string>>; locs: Map<string, Location[]>; policy: number; checkpoints: number } {
    return {
      covered: new Map([...this.covered].map(([id, s]) => [id, new Set(s)])),
      locs: new Map([...this.coveredLocs].map(([id, l]) => [id, [...l]])),
      policy: this.policy,
      checkpoints: this.checkpoints,
    };
  }
}

let serial = 0;
const IDS = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];

/** One random write of the base (live) store, kept in the model. */
async function liveStep(rng: Rng, store: Store, model: Model, allowHeavy: boolean): Promise<string> {
  const docs = store.collection('d', { schema });
  const k = rng.int(20);
  if (k < 9) {
    const id = IDS[rng.int(IDS.length)];
    const scope = SCOPES[rng.int(SCOPES.length)];
    const v = `v${serial++}`;
    await docs.put(id, { v }, scope !== undefined ? { governance: { scope } } : undefined);
    model.wrote(store, id, v, gov(scope));
    return 'put';
  }
  if (k < 11) {
    const ids = [...new Set(Array.from({ length: 1 + rng.int(4) }, () => IDS[rng.int(IDS.length)]))];
    const vals = ids.map((id) => ({ id, v: `v${serial++}`, scope: SCOPES[rng.int(SCOPES.length)] }));
    await store.batch((tx) => {
      for (const x of vals)
        tx.put(docs, x.id, { v: x.v }, x.scope !== undefined ? { governance: { scope: x.scope } } : undefined);
    });
    for (const x of vals) model.wrote(store, x.id, x.v, gov(x.scope));
    return 'batch';
  }
  if (k < 14) {
    const id = IDS[rng.int(IDS.length)];
    if (!docs.has(id)) return 'noop';
    await docs.delete(id);
    model.wrote(store, id, undefined, '');
    return 'delete';
  }
  if (k < 17) {
    await store.checkpoint();
    model.signed();
    return 'checkpoint';
  }
  if (k === 17 && model.policy === 1) {
    await store.setPolicy(POLICY[2]);
    model.policy = 2;
    return 'policy-2';
  }
  if (k === 18 && allowHeavy) {
    const signedBefore = store.checkpoints().length;
    const r = await store.compact({ minDeadFraction: 0.3 });
    // Before it raises the history floor, a compaction signs a checkpoint of the whole log.
    if (store.checkpoints().length > signedBefore) model.signed();
    // Moved records are new leaves of the same versions: the model of values is unchanged, but the
    // old locations may point at pages compaction deleted.
    return r.recordsMoved > 0 ? 'compact' : 'noop';
  }
  if (k === 19 && allowHeavy && !model.migrated) {
    // A migration signs the old generation to its end before opening the new one.
    model.migrated = true;
    await store.migrate({ to: 'cnsa2-gcm-hkdf384-commit' });
    model.signed();
    model.checkpoints--; // no checkpoint of the new generation yet
    return 'migrate';
  }
  return 'noop';
}

/** Forged operations by the removed recipient on the fork; returns what was done. */
async function forge(
  rng: Rng,
  medium: MemoryMedium,
  fz: ReturnType<Model['frozen']>,
  deletedIds: string[],
): Promise<string[]> {
  const done: string[] = [];
  const withOther = rng.int(8) === 0;
  const pages = await openMemoryPageStore({ medium });
  let att: Store;
  try {
    att = await openStore({
      storage: pages,
      unlock: removed.secretKey,
      autoCheckpoint: false,
      ...(withOther ? { signer: other.secretKey, signerPublicKey: other.publicKey } : {}),
    });
  } catch (e) {
    await pages.close().catch(() => undefined);
    if (!(e instanceof PqdbError)) throw e;
    done.push(`open-refused:${e.code}`);
    return done;
  }
  try {
    const docs = att.collection('d', { schema });
    const forgedLocs: [string, Location][] = [];
    const n = 1 + rng.int(5);
    for (let i = 0; i < n; i++) {
      const k = rng.int(10);
      const id = IDS[rng.int(IDS.length)];
      const scope = SCOPES[rng.int(SCOPES.length)];
      const g = scope !== undefined ? { governance: { scope } } : undefined;
      try {
        if (k < 2) {
          await docs.put(`n${rng.int(3)}`, { v: `forged${serial++}` }, g);
          done.push('put-new');
        } else if (k < 5) {
          await docs.put(id, { v: `forged${serial++}` }, g);
          done.push('update');
        } else if (k < 7 && docs.has(id)) {
          // The same value, under a scope the restore gate lets through.
          const now = await docs.get(id);
          await docs.put(id, now!, rng.int(2) ? { governance: { scope: 'eng' } } : undefined);
          done.push('widen-scope');
        } else if (k < 9 && docs.has(id)) {
          await docs.delete(id);
          done.push('delete');
        } else if (k === 9 && rng.int(3) === 0) {
          // A new key generation of the fork's own: nothing the trusted key signed covers it.
          await att.migrate({ to: rng.int(2) ? 'cnsa2-gcm-hkdf384-commit' : 'gcmsiv-hkdf384' });
          done.push('migrate');
        } else if (k === 9) {
          await att.compact({ minDeadFraction: 0.1 });
          done.push('compact');
        }
        const loc = partsOf(att).directory.get('d', id);
        if (loc !== undefined) forgedLocs.push([id, { ...loc }]);
      } catch (e) {
        if (!(e instanceof PqdbError)) throw e;
        done.push(`refused:${e.code}`);
      }
    }
    if (withOther) {
      try {
        await att.checkpoint();
        done.push('other-signer-checkpoint');
      } catch (e) {
        if (!(e instanceof PqdbError)) throw e;
        done.push(`other-signer-refused:${e.code}`);
      }
    }
    // A key directory rewritten (persisted without a signature, as a store without signer keys does).
    if (rng.int(3) === 0) {
      const p = partsOf(att);
      const all = [...fz.locs].flatMap(([id, ls]) => ls.map((l) => [id, l] as [string, Location]));
      const pick = <T>(xs: T[]) => xs[rng.int(xs.length)];
      const kind = rng.int(8);
      if (all.length > 0) {
        const [id, loc] = pick(all);
        const others = all.filter(([x]) => x !== id);
        if (kind === 0) {
          p.directory.set('d', id, { ...loc });
          done.push('dir-stale-version');
        } else if (kind === 1 && deletedIds.length > 0) {
          const dead = pick(deletedIds);
          const ls = fz.locs.get(dead);
          if (ls !== undefined) {
            p.directory.set('d', dead, { ...pick(ls) });
            done.push('dir-resurrect');
          }
        } else if (kind === 2 && others.length > 0) {
          p.directory.set('d', id, { ...pick(others)[1] });
          done.push('dir-other-id');
        } else if (kind === 3) {
          const g = pick(SCOPES.map(gov).filter((x) => x !== loc.governance));
          p.directory.set('d', id, { ...loc, governance: g });
          done.push('dir-scope');
        } else if (kind === 4 && others.length > 0) {
          p.directory.set('d', id, { ...loc, leafIndex: pick(others)[1].leafIndex });
          done.push('dir-leaf');
        } else if (kind === 5) {
          p.directory.set('d', id, { ...loc, sequence: loc.sequence + 1 + rng.int(3) });
          done.push('dir-sequence');
        } else if (kind === 6) {
          p.directory.set('d', id, { ...loc, generation: loc.generation === 1 ? 2 : 1 });
          done.push('dir-generation');
        } else if (forgedLocs.length > 0) {
          const [fid, floc] = pick(forgedLocs);
          p.directory.set('d', fid, { ...floc, leafIndex: rng.int(Math.max(1, floc.leafIndex)) });
          done.push('dir-forged-leaf-down');
        }
      }
      try {
        await p.checkpoints.persist();
      } catch (e) {
        if (!(e instanceof PqdbError)) throw e;
        done.push(`persist-refused:${e.code}`);
      }
    }
    // The manifest's authority rewritten (sealed under the store secret, which the fork holds).
    const m = rng.int(10);
    if (m === 4) {
      // Another recipient listed for the store a restore makes.
      await partsOf(att).pipeline.run((draft) => {
        draft.manifest.recipients = [...(draft.manifest.recipients ?? []), b64(intruder.publicKey)];
      });
      done.push('recipient-listed');
    }
    if (m === 3 && partsOf(att).pipeline.manifest.collections.d !== undefined) {
      // The collection's schema rewritten (the signed bytes would read as another type), or dropped.
      const drop = rng.int(3) === 0;
      await partsOf(att).pipeline.run((draft) => {
        if (drop) delete draft.manifest.collections.d;
        else draft.manifest.collections.d = { ...draft.manifest.collections.d, schema: { v: 'bytes' } };
      });
      done.push(drop ? 'collection-undeclared' : 'schema-changed');
    } else if (m < 3) {
      const what = ['authority-stripped', 'authority-key-added', 'policy-rolled-back'][m];
      if (m !== 2 || fz.policy === 2) {
        await partsOf(att).pipeline.run((draft) => {
          const a = draft.manifest.authority!;
          if (m === 0) delete draft.manifest.authority;
          else if (m === 1) draft.manifest.authority = { ...a, keys: [...a.keys, b64(forgerKey.publicKey)] };
          else draft.manifest.authority = { ...a, policy: b64(POLICY[1]) };
        });
        done.push(what);
      }
    }
  } finally {
    await att.close();
  }
  return done;
}

type Tally = Record<string, number>;
const bump = (t: Tally, k: string) => (t[k] = (t[k] ?? 0) + 1);

async function runCase(i: number, rng: Rng, tally: Record<string, Tally>, bad: string[]): Promise<void> {
  const medium = new MemoryMedium();
  const model = new Model();
  const base = await openStore({
    storage: await openMemoryPageStore({ medium }),
    create: true,
    recipients: [owner.publicKey, removed.publicKey],
    unlock: owner.secretKey,
    signer: signer.secretKey,
    signerPublicKey: signer.publicKey,
    authorityPublicKey: [policyKey.publicKey],
    authorityDomain: DOMAIN,
    autoCheckpoint: false,
  });
  const row = (k: string) => (tally[k] ??= {});
  try {
    await base.setPolicy(POLICY[1]);
    const steps: string[] = [];
    const before = 2 + rng.int(14);
    for (let s = 0; s < before; s++) steps.push(await liveStep(rng, base, model, true));
    if (rng.int(8) !== 0 && model.checkpoints === 0 && !model.migrated) {
      await base.checkpoint();
      model.signed();
    }
    // The fork: the medium as it stands at this commit.
    const fz = model.frozen();
    const forkMedium = copyMedium(medium);
    const deletedIds = [...fz.covered.keys()].filter((id) => !model.current.has(id));
    const forged = await forge(rng, forkMedium, fz, deletedIds);
    // The live store goes on writing; it may remove the recipient and change its policy.
    const after = rng.int(6);
    for (let s = 0; s < after; s++) await liveStep(rng, base, model, false);
    const dropped = rng.int(2) === 0;
    if (dropped) await base.removeRecipient(removed.publicKey);
    const useLive = rng.int(2) === 0;
    const seen = await peek(forkMedium);
    if (useLive && rng.int(5) !== 0) {
      // Catch up with the fork's commit (else the restore refuses it as newer than the live store).
      const docs = base.collection('d', { schema });
      while (base.info().commit < (seen?.commit ?? 0)) {
        const v = `v${serial++}`;
        await docs.put('z', { v });
        model.wrote(base, 'z', v, '{}');
      }
    }
    const givePolicy = !useLive && rng.int(2) === 0;
    const giveKeys = rng.int(2) === 0;
    const scenario = `${useLive ? 'live' : givePolicy ? 'alone+policy' : 'alone'}${giveKeys ? '+keys' : ''}`;
    const label = `case ${i} [${scenario}] base=${steps.join(',')} forged=${forged.join(',')}`;
    const target = await openMemoryPageStore();
    let outcome: string;
    try {
      const res = await restoreStore(await openMemoryPageStore({ medium: forkMedium }), {
        storage: target,
        unlock: owner.secretKey,
        // With `live`, the trusted key defaults to the live store's signer key.
        ...(useLive && rng.int(2) === 0 ? {} : { trustedSigner: signer.publicKey }),
        ...(useLive ? { live: base } : {}),
        ...(givePolicy ? { policy: POLICY[model.policy] } : {}),
        ...(giveKeys ? { authorityPublicKey: policyKey.publicKey } : {}),
        ...(giveKeys && !useLive ? { recipients: [owner.publicKey] } : {}), // all a caller without `live` names
      });
      try {
        // Without `live`, what the copy's own manifest says decides what no option names: its
        // pinned keys (unless `authorityPublicKey` is given) and its policy (unless `policy` is).
        const stripped = forged.includes('authority-stripped');
        const gate =
          useLive || givePolicy
            ? model.policy
            : stripped
              ? giveKeys
                ? 'no-restore'
                : undefined
              : forged.includes('policy-rolled-back')
                ? 1
                : fz.policy;
        const pinned = useLive || giveKeys || !forged.some((f) => f.startsWith('authority-'));
        const problems = await check(res, fz, model, useLive, gate, pinned);
        // Every record of the fork's directory is counted once.
        const sum = res.restored + res.fromLive + res.withheld + res.deleted + res.unsigned;
        if (seen !== undefined && sum !== seen.records) problems.push(`counts add up to ${sum}, not ${seen.records}`);
        // A recipient the live store removed gets nothing of the new store.
        const recips = partsOf(res.store).pipeline.manifest.recipients ?? [];
        if (useLive && dropped && recips.includes(b64(removed.publicKey)))
          problems.push('the removed recipient is one');
        if (useLive && recips.includes(b64(intruder.publicKey))) problems.push('a recipient the fork listed is one');
        if (giveKeys && !useLive && (recips.length !== 1 || recips[0] !== b64(owner.publicKey)))
          problems.push(`recipients ${recips.length}, not the one given`);
        outcome = problems.length === 0 ? 'ok' : 'WRONG';
        for (const p of problems) bad.push(`${label}: ${p}`);
        const t = row(scenario);
        for (const k of ['restored', 'fromLive', 'withheld', 'deleted', 'unsigned'] as const)
          t[k] = (t[k] ?? 0) + res[k];
        for (const r of res.refused) bump(t, `refused ${r.reason}`);
      } finally {
        await res.store.close();
      }
    } catch (e) {
      if (e instanceof PqdbError) {
        outcome = `PqdbError ${e.code}`;
        if (process.env.PQDB_FORK_VERBOSE) console.log(`${label}: ${e.code} ${e.message}`);
      } else {
        outcome = 'NOT-PQDB';
        bad.push(`${label}: ${String((e as Error)?.stack ?? e)}`);
      }
    }
    bump(row(scenario), outcome);
    for (const f of new Set(forged.map((x) => x.replace(/:.*/, '')))) bump(row(`forged ${f}`), outcome);
  } finally {
    await base.close();
  }
}

/** The commit number and record count of the store on `m` (opened read-only), if it opens. */
async function peek(m: MemoryMedium): Promise<{ commit: number; records: number } | undefined> {
  const storage = await openMemoryPageStore({ medium: copyMedium(m) });
  try {
    const s = await openStore({ storage, unlock: owner.secretKey, readOnly: true });
    const info = s.info();
    await s.close();
    return { commit: info.commit, records: Object.values(info.collections).reduce((a, b) => a + b, 0) };
  } catch (e) {
    if (!(e instanceof PqdbError)) throw e;
    await storage.close().catch(() => undefined);
    return undefined;
  }
}

async function check(
  res: Awaited<ReturnType<typeof restoreStore>>,
  fz: ReturnType<Model['frozen']>,
  model: Model,
  useLive: boolean,
  /** The policy version that must decide (undefined: the fork's forged one; 'no-restore': none may). */
  gate: number | 'no-restore' | undefined,
  /** Whether the new store must pin the store's own authority key (and only it). */
  pinned: boolean,
): Promise<string[]> {
  const problems: string[] = [];
  const np = partsOf(res.store);
  let docs: ReturnType<Store['collection']>;
  try {
    docs = res.store.collection('d', { schema });
  } catch (e) {
    // Without `live`, nothing outside the copy names a collection's schema: the new store keeps the
    // copy's, and an application opening the collection with its own is told they differ.
    if (e instanceof RangeError && !useLive) return [];
    return [`the new store's collection does not open: ${String(e)}`];
  }
  let held = 0;
  for (const [name, entries] of np.directory.collections()) {
    for (const [id, loc] of entries) {
      held++;
      if (name !== 'd') {
        problems.push(`a collection ${name} restored`);
        continue;
      }
      const v = (await docs.get(id))?.v;
      const k = `${v}\0${loc.governance}`;
      const live = model.current.get(id);
      const isCovered = fz.covered.get(id)?.has(k) === true;
      const isLive = live !== undefined && live.v === v && live.g === loc.governance;
      if (useLive) {
        if (live === undefined) problems.push(`${id}=${v} restored though the live store does not hold it`);
        else if (!isCovered && !isLive)
          problems.push(`${id}=${v} ${loc.governance}: neither signed nor the live version`);
      } else if (!isCovered) problems.push(`${id}=${v} ${loc.governance}: a version the trusted signer never covered`);
      if (gate === 'no-restore') problems.push(`${id} restored from a fork whose authority was stripped`);
      else if (gate !== undefined && !restorable(gate, loc.governance))
        problems.push(`${id} restored under ${loc.governance}, which policy ${gate} does not let restore`);
    }
  }
  if (res.restored + res.fromLive !== held)
    problems.push(`restored ${res.restored} + fromLive ${res.fromLive} != ${held} held`);
  if (!useLive && (res.fromLive !== 0 || res.deleted !== 0)) problems.push('fromLive or deleted without a live store');
  if (res.refused.length !== Math.min(res.unsigned, 1000))
    problems.push(`refused lists ${res.refused.length} of ${res.unsigned}`);
  const keys = np.pipeline.manifest.authority?.keys ?? [];
  if (pinned && (keys.length !== 1 || keys[0] !== b64(policyKey.publicKey)))
    problems.push(
      `the new store pins ${keys.length} authority keys: ${keys.includes(b64(forgerKey.publicKey)) ? "the fork's among them" : "not the store's"}`,
    );
  return problems;
}

describe('fork fuzzer', () => {
  it(
    `${CASES} forks by a removed recipient restored: only signed or live versions come back`,
    async () => {
      const rng = new Rng(SEED);
      const tally: Record<string, Tally> = {};
      const bad: string[] = [];
      for (let i = 0; i < CASES; i++) await runCase(i, rng, tally, bad);
      console.log(`fork fuzzer (seed ${SEED}, ${CASES} cases):\n${JSON.stringify(tally, null, 1)}`);
      expect(bad).toEqual([]);
    },
    Math.max(120_000, CASES * 3000),
  );
});

describe('the authority keys a restore pins', () => {
  /** A store with a policy (hr may not be restored), one checkpoint, and its medium forked. */
  async function forkedWith(edit: (a: { keys: string[]; policy?: string }) => unknown) {
    const medium = new MemoryMedium();
    const store = await openStore({
      storage: await openMemoryPageStore({ medium }),
      create: true,
      recipients: [owner.publicKey, removed.publicKey],
      unlock: owner.secretKey,
      signer: signer.secretKey,
      signerPublicKey: signer.publicKey,
      authorityPublicKey: [policyKey.publicKey],
      authorityDomain: DOMAIN,
      autoCheckpoint: false,
    });
    await store.setPolicy(POLICY[1]);
    const docs = store.collection('d', { schema });
    await docs.put('a', { v: 'a' });
    await docs.put('s', { v: 'secret' }, { governance: { scope: 'hr' } });
    await store.checkpoint();
    await store.close();
    const fork = copyMedium(medium);
    // The removed recipient rewrites the fork's manifest: it is sealed under the store secret only.
    const att = await openStore({ storage: await openMemoryPageStore({ medium: fork }), unlock: removed.secretKey });
    await partsOf(att).pipeline.run((draft) => {
      const a = { ...draft.manifest.authority! };
      if (edit(a) === 'strip') delete draft.manifest.authority;
      else draft.manifest.authority = a;
    });
    await att.close();
    return { medium, fork };
  }
  const restoreAlone = async (m: MemoryMedium, extra: object) =>
    restoreStore(await openMemoryPageStore({ medium: m }), {
      storage: await openMemoryPageStore(),
      unlock: owner.secretKey,
      trustedSigner: signer.publicKey,
      policy: POLICY[1],
      ...extra,
    });

  it('a fork that pins another authority key too, or none, is refused when the keys are given', async () => {
    const widened = await forkedWith((a) => void a.keys.push(b64(forgerKey.publicKey)));
    await expect(restoreAlone(widened.fork, { authorityPublicKey: policyKey.publicKey })).rejects.toMatchObject({
      code: 'AUTH_FAILED',
      message: expect.stringMatching(/pins other authority keys/),
    });
    const stripped = await forkedWith(() => 'strip');
    await expect(
      restoreAlone(stripped.fork, { authorityPublicKey: [policyKey.publicKey], policy: undefined }),
    ).rejects.toMatchObject({ code: 'AUTH_FAILED', message: expect.stringMatching(/pins no authority key/) });
    // The store's own copy restores under the keys given, and pins them alone.
    const own = await restoreAlone(widened.medium, { authorityPublicKey: policyKey.publicKey });
    expect(own).toMatchObject({ restored: 1, withheld: 1, unsigned: 0 });
    expect(partsOf(own.store).pipeline.manifest.authority?.keys).toEqual([b64(policyKey.publicKey)]);
    expect(own.store.collection('d', { schema }).has('s')).toBe(false);
    await own.store.close();
    // With the live store, its keys are the ones that must match.
    const live = await openStore({
      storage: await openMemoryPageStore({ medium: widened.medium }),
      unlock: owner.secretKey,
      signer: signer.secretKey,
      signerPublicKey: signer.publicKey,
    });
    await expect(
      restoreStore(await openMemoryPageStore({ medium: copyMedium(widened.medium) }), {
        storage: await openMemoryPageStore(),
        unlock: owner.secretKey,
        live,
        authorityPublicKey: forgerKey.publicKey,
      }),
    ).rejects.toMatchObject({ code: 'AUTH_FAILED' });
    await live.close();
  });
});

describe('the collections a restore takes from a fork', () => {
  /** A store with one checkpointed record, its medium forked, and the fork's manifest edited. */
  async function forked(edit: (collections: Record<string, unknown>) => void) {
    const medium = new MemoryMedium();
    const store = await openStore({
      storage: await openMemoryPageStore({ medium }),
      create: true,
      recipients: [owner.publicKey, removed.publicKey],
      unlock: owner.secretKey,
      signer: signer.secretKey,
      signerPublicKey: signer.publicKey,
    });
    await store.collection('d', { schema }).put('a', { v: 'a' });
    await store.checkpoint();
    await store.close();
    const fork = copyMedium(medium);
    const att = await openStore({ storage: await openMemoryPageStore({ medium: fork }), unlock: removed.secretKey });
    await partsOf(att).pipeline.run((draft) => edit(draft.manifest.collections as Record<string, unknown>));
    await att.close();
    const live = await openStore({
      storage: await openMemoryPageStore({ medium }),
      unlock: owner.secretKey,
      signer: signer.secretKey,
      signerPublicKey: signer.publicKey,
    });
    for (let i = 0; i < 3; i++) await live.collection('d', { schema }).put('b', { v: `b${i}` }); // past the fork's commit
    return { live, fork };
  }
  const restoreFrom = async (fork: MemoryMedium, extra: object) =>
    restoreStore(await openMemoryPageStore({ medium: fork }), {
      storage: await openMemoryPageStore(),
      unlock: owner.secretKey,
      trustedSigner: signer.publicKey,
      ...extra,
    });

  it("a fork whose schema is not the live store's is refused", async () => {
    const { live, fork } = await forked((c) => void (c.d = { ...(c.d as object), schema: { v: 'bytes' } }));
    await expect(restoreFrom(fork, { live })).rejects.toMatchObject({
      code: 'CORRUPTION',
      message: expect.stringMatching(/schema of collection d is not the live store's/),
    });
    await live.close();
  });

  it('a fork whose manifest does not declare a collection its directory holds is CORRUPTION', async () => {
    const { live, fork } = await forked((c) => void delete c.d);
    for (const extra of [{ live }, {}])
      await expect(restoreFrom(copyMedium(fork), extra)).rejects.toMatchObject({
        code: 'CORRUPTION',
        message: expect.stringMatching(/holds collection d, which its manifest does not declare/),
      });
    await live.close();
  });
});
