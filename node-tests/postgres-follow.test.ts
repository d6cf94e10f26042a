// A read-only Store following the writer of a postgres page store (openStore `follow`,
// src/engine/follower.ts), on a throwaway cluster (support/postgres.ts): records-only commits
// (puts, deletes, batches) taken in place without opening the store again, a checkpoint taken by
// opening the engine state anew, searches on the follower, a writer in another process
// (support/pg-writer.mjs), manifests put back or altered by the database's superuser refused with
// the follower keeping its last good state, and close() ending the LISTEN connection.
import { afterEach, describe, it, expect, vi } from 'vitest';
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { generateRecipient, generateSigner, openStore, type Store } from '../src/node';
import type { FollowEvent } from '../src/engine/follower';
import type { Change } from '../src/engine/changes';
import { PqdbError } from '../src/errors';
import { crc32c } from '../src/_crc32c';
import { openPostgresPageStore } from '../src/storage/postgres';
import { freshStoreName, usePostgres } from './support/postgres';

const cluster = usePostgres();
const r = generateRecipient('classical');
const signer = generateSigner();
const schema = { n: 'integer', s: 'string' } as const;
const text = { schema, index: { text: ['s'] } } as const;
const query = (sql: string, values: unknown[] = []) => cluster().admin.query(sql, values);

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const x of opened.splice(0).reverse()) await x.close().catch(() => undefined);
});
const track = <T extends { close(): Promise<void> }>(x: T): T => (opened.push(x), x);

async function writer(name: string): Promise<Store> {
  const storage = await openPostgresPageStore({ connectionString: cluster().connectionString, name });
  return track(
    await openStore({
      storage,
      create: true,
      recipients: [r.publicKey],
      unlock: r.secretKey,
      signer: signer.secretKey,
      signerPublicKey: signer.publicKey,
      autoCheckpoint: false,
    }),
  );
}

/** A following store with what it reported. */
async function follower(name: string) {
  const events: FollowEvent[] = [];
  const errors: PqdbError[] = [];
  const storage = await openPostgresPageStore({ connectionString: cluster().connectionString, name, readOnly: true });
  const store = track(
    await openStore({
      storage,
      unlock: r.secretKey,
      readOnly: true,
      follow: { onCommit: (e) => events.push(e), onError: (e) => errors.push(e) },
    }),
  );
  /** Resolves once the follower serves commit `commit` (or a later one). */
  const at = (commit: number) => within(10_000, () => (store.info().commit >= commit ? true : undefined));
  return { store, events, errors, at };
}

async function within<T>(ms: number, poll: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await poll();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`nothing within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const manifestRow = async (name: string) =>
  (await query('SELECT version, manifest FROM pqdb_manifest WHERE store = $1', [name])).rows[0] as {
    version: string;
    manifest: Buffer;
  };

/** As the superuser: replaces the manifest row (checksum column fixed up, version moved on) and notifies. */
async function pushManifest(name: string, bytes: Uint8Array): Promise<void> {
  const v = await query(
    'UPDATE pqdb_manifest SET manifest = $2, crc = $3, version = version + 1 WHERE store = $1 RETURNING version',
    [name, Buffer.from(bytes), crc32c(bytes) | 0],
  );
  await query('SELECT pg_notify($1, $2)', [`pqdb_${name}`, String(v.rows[0].version)]);
}

describe('a read-only Store following a postgres writer', () => {
  it('takes puts, deletes and batches in place (no open, no replay), and says where it stands', async () => {
    const name = freshStoreName('fin');
    const w = await writer(name);
    const wc = w.collection('c', { schema });
    await wc.put('a', { n: 1, s: 'one' });
    const f = await follower(name);
    const fc = f.store.collection('c', { schema });
    expect(await fc.get('a')).toEqual({ n: 1, s: 'one' });
    // Engine states opened anew from here on (each is an event that was not taken in place).
    const from = f.events.length;
    const reopened = () => f.events.slice(from).filter((e) => !e.inPlace).length;

    await wc.put('b', { n: 2, s: 'two' });
    await f.at(w.info().commit);
    expect(await fc.get('b')).toEqual({ n: 2, s: 'two' });
    await wc.delete('a');
    await f.at(w.info().commit);
    expect(await fc.get('a')).toBeUndefined();
    expect(fc.has('a')).toBe(false);
    await w.batch((tx) => {
      for (let i = 0; i < 50; i++) tx.put(wc, `k${i}`, { n: i, s: `batch ${i}` });
      tx.delete(wc, 'b');
      tx.put(wc, 'a', { n: 11, s: 'again' });
    });
    await f.at(w.info().commit);
    expect(fc.size).toBe(51);
    expect(await fc.get('k49')).toEqual({ n: 49, s: 'batch 49' });
    expect(await fc.get('a')).toEqual({ n: 11, s: 'again' });
    expect(await fc.get('b')).toBeUndefined();
    // Many commits back to back: the follower may take several at once, never misses one.
    for (let i = 0; i < 20; i++) await wc.put(`r${i}`, { n: i, s: `rapid ${i}` });
    await f.at(w.info().commit);
    expect(fc.size).toBe(71);
    expect(f.store.info().commit).toBe(w.info().commit);
    expect(f.store.info().collections).toEqual(w.info().collections);

    expect(reopened()).toBe(0);
    expect(f.events.length).toBeGreaterThan(0);
    expect(f.events.every((e) => e.inPlace)).toBe(true);
    expect(f.events.at(-1)!.commit).toBe(w.info().commit);
    expect(f.errors).toEqual([]);
    await expect(fc.put('x', { n: 0, s: 'no' })).rejects.toMatchObject({ code: 'READ_ONLY' });
  });

  it('a checkpoint opens the engine state anew; searches on the follower see what came before and after it', async () => {
    const name = freshStoreName('fcp');
    const w = await writer(name);
    const wc = w.collection('c', text);
    const f = await follower(name);
    const fc = f.store.collection('c', text); // the collection does not exist yet on the writer's side
    expect(fc.size).toBe(0);
    const heard: Change[] = [];
    fc.watch((c) => heard.push(c)); // the follower's listeners stay across a reopen
    // Engine states opened anew from here on (each is an event that was not taken in place).
    const from = f.events.length;
    const reopened = () => f.events.slice(from).filter((e) => !e.inPlace).length;
    await wc.put('a', { n: 1, s: 'red apple' }); // the collection's first records: in place too
    await wc.put('b', { n: 2, s: 'green apple' });
    await f.at(w.info().commit);
    expect((await fc.search('apple')).map((x) => x.id).sort()).toEqual(['a', 'b']);
    await wc.put('c', { n: 3, s: 'red cherry' });
    await f.at(w.info().commit);
    expect((await fc.search('red')).map((x) => x.id).sort()).toEqual(['a', 'c']); // the loaded index followed

    expect(reopened()).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(heard.flatMap((c) => c.ids)).toEqual(['a', 'b', 'c']); // the writer's commits, taken in place
    expect(heard.at(-1)!.commit).toBe(w.info().commit);
    const cp = await w.checkpoint();
    await f.at(w.info().commit);
    expect(reopened()).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(heard.at(-1)).toEqual({ commit: w.info().commit, collection: 'c', ids: [], reset: true });
    expect(f.events.at(-1)).toMatchObject({ commit: w.info().commit, inPlace: false });
    expect(f.store.checkpoints().at(-1)!.root).toEqual(cp.root);
    expect(f.store.info().checkpoint).toEqual(w.info().checkpoint);
    expect(await fc.get('b')).toEqual({ n: 2, s: 'green apple' });
    expect((await fc.search('apple')).map((x) => x.id).sort()).toEqual(['a', 'b']);

    // After the reopen, records-only commits are taken in place again.
    await wc.delete('a');
    await wc.put('d', { n: 4, s: 'red plum' });
    await f.at(w.info().commit);
    expect(reopened()).toBe(1);
    expect(f.events.at(-1)!.inPlace).toBe(true);
    expect((await fc.search('red')).map((x) => x.id).sort()).toEqual(['c', 'd']);
    expect(heard.filter((c) => c.reset === undefined).flatMap((c) => c.ids)).toEqual(['a', 'b', 'c', 'a', 'd']);
    expect(fc.size).toBe(3);
    expect(f.errors).toEqual([]);
  });

  it('reads keep being served while a reopen replaces the engine state under them', async () => {
    const name = freshStoreName('fread');
    const w = await writer(name);
    const wc = w.collection('c', { schema });
    for (let i = 0; i < 30; i++) await wc.put(`k${i}`, { n: i, s: 'v'.repeat(200) });
    const f = await follower(name);
    const fc = f.store.collection('c', { schema });
    const target = w.info().commit + 1;
    const readers = Array.from({ length: 4 }, async () => {
      const wrong: string[] = [];
      for (let round = 0; f.store.info().commit < target || round < 20; round++) {
        const i = round % 30;
        const v = await fc.get(`k${i}`);
        if (v?.n !== i) wrong.push(`k${i}: ${JSON.stringify(v)}`);
      }
      return wrong;
    });
    await w.checkpoint();
    expect(w.info().commit).toBe(target);
    expect((await Promise.all(readers)).flat()).toEqual([]);
    expect(f.events.at(-1)).toMatchObject({ commit: target, inPlace: false });
    expect(f.errors).toEqual([]);
  });

  it('a manifest put back (older) or altered by the superuser is refused; the follower keeps its last good state', async () => {
    const name = freshStoreName('ftamper');
    let w = await writer(name);
    let wc = w.collection('c', { schema });
    await wc.put('a', { n: 1, s: 'one' });
    const f = await follower(name);
    const fc = f.store.collection('c', { schema });
    const older = new Uint8Array((await manifestRow(name)).manifest);
    await wc.put('b', { n: 2, s: 'two' });
    await wc.put('c', { n: 3, s: 'three' });
    const commit = w.info().commit;
    await f.at(commit);
    const good = new Uint8Array((await manifestRow(name)).manifest);

    // An older manifest put back: a rollback.
    await pushManifest(name, older);
    await within(10_000, () => (f.errors.length >= 1 ? true : undefined));
    expect(f.errors[0]).toBeInstanceOf(PqdbError);
    expect(f.errors[0].code).toBe('ROLLBACK');
    expect(f.store.info().commit).toBe(commit);
    expect(await fc.get('c')).toEqual({ n: 3, s: 'three' });

    // The current manifest with one byte changed near its end (inside the sealed body).
    const altered = good.slice();
    altered[altered.length - 20] ^= 0x01;
    await pushManifest(name, altered);
    await within(10_000, () => (f.errors.length >= 2 ? true : undefined));
    expect(f.errors[1].code).toMatch(/^(AUTH_FAILED|CORRUPTION)$/);
    expect(f.store.info().commit).toBe(commit);
    expect(await fc.get('b')).toEqual({ n: 2, s: 'two' });
    expect(f.events.every((e) => e.commit <= commit)).toBe(true);

    // The good row back; the writer (its compare-and-swap overtaken by the superuser) reopens and goes on.
    await pushManifest(name, good);
    await expect(wc.put('d', { n: 4, s: 'four' })).rejects.toMatchObject({ code: 'CONFLICT' });
    await w.close();
    w = await writer(name);
    wc = w.collection('c', { schema });
    await wc.put('d', { n: 4, s: 'four' });
    await f.at(w.info().commit);
    expect(await fc.get('d')).toEqual({ n: 4, s: 'four' });
    expect(f.errors).toHaveLength(2);
  });

  it('a commit page changed by the superuser is refused (the follower stays), and taken once it is put right', async () => {
    const name = freshStoreName('fpage');
    const w = await writer(name);
    const wc = w.collection('c', { schema });
    await wc.put('a', { n: 1, s: 'one' });
    const before = new Uint8Array((await manifestRow(name)).manifest);
    await wc.put('b', { n: 2, s: 'two'.repeat(50) });
    const after = new Uint8Array((await manifestRow(name)).manifest);
    const last = Number(
      (await query('SELECT max(id) AS id FROM pqdb_pages WHERE store = $1', [name])).rows[0].id as string,
    );
    const page = new Uint8Array(
      (await query('SELECT bytes FROM pqdb_pages WHERE store = $1 AND id = $2', [name, last])).rows[0].bytes,
    );
    await w.close();
    // The follower opens on the manifest before the last commit, then that commit's manifest
    // arrives with its page altered (the checksum column fixed up).
    await pushManifest(name, before);
    const f = await follower(name);
    const fc = f.store.collection('c', { schema });
    const commit = f.store.info().commit;
    expect(fc.has('b')).toBe(false);
    const altered = page.slice();
    altered[altered.length >> 1] ^= 0x10;
    const setPage = (bytes: Uint8Array) =>
      query('UPDATE pqdb_pages SET bytes = $3, crc = $4 WHERE store = $1 AND id = $2', [
        name,
        last,
        Buffer.from(bytes),
        crc32c(bytes) | 0,
      ]);
    await setPage(altered);
    await pushManifest(name, after);
    await within(10_000, () => (f.errors.length > 0 ? true : undefined));
    expect(f.errors[0].code).toMatch(/^(AUTH_FAILED|CORRUPTION)$/);
    expect(f.store.info().commit).toBe(commit);
    expect(await fc.get('a')).toEqual({ n: 1, s: 'one' });
    expect(await fc.get('b')).toBeUndefined();
    // Put right: the same manifest, pushed again, is verified again and taken.
    await setPage(page);
    await pushManifest(name, after);
    await f.at(commit + 1);
    expect(await fc.get('b')).toEqual({ n: 2, s: 'two'.repeat(50) });
    expect(f.events.at(-1)).toMatchObject({ commit: commit + 1, inPlace: true });
    expect(f.errors).toHaveLength(1);
  });

  it('close() stops following and ends its LISTEN connection; follow needs a read-only page store that follows', async () => {
    const name = freshStoreName('fclose');
    const w = await writer(name);
    await w.collection('c', { schema }).put('a', { n: 1, s: 'one' });
    const f = await follower(name);
    const listening = async () =>
      Number(
        (
          await query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [
            `pqdb follower ${name}`,
          ])
        ).rows[0].n,
      );
    expect(await listening()).toBe(1);
    const fc = f.store.collection('c', { schema });
    await f.store.close();
    await within(5000, async () => ((await listening()) === 0 ? true : undefined));
    await w.collection('c', { schema }).put('b', { n: 2, s: 'two' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(f.errors).toEqual([]);
    await expect(fc.get('a')).rejects.toMatchObject({ code: 'NOT_OPEN' });

    const connectionString = cluster().connectionString;
    const ro = track(await openPostgresPageStore({ connectionString, name, readOnly: true }));
    await expect(openStore({ storage: ro, unlock: r.secretKey, follow: true })).rejects.toThrow(TypeError);
    await expect(openStore({ storage: 'memory', unlock: r.secretKey, readOnly: true, follow: true })).rejects.toThrow(
      TypeError,
    );
    await expect(
      openStore({ storage: ro, unlock: r.secretKey, readOnly: true, follow: 'yes' as unknown as boolean }),
    ).rejects.toThrow(TypeError);
  });
});

describe('a follower and a writer in two processes', () => {
  const WRITER = fileURLToPath(new URL('./support/pg-writer.mjs', import.meta.url));
  const b64 = (x: Uint8Array) => Buffer.from(x).toString('base64');

  /** Forks the writer; `send` runs a command and resolves with its answer. */
  async function child(name: string) {
    const p: ChildProcess = fork(WRITER, [cluster().connectionString, name], {
      env: {
        ...process.env,
        PQDB_TEST_PUB: b64(r.publicKey),
        PQDB_TEST_SEC: b64(r.secretKey),
        PQDB_TEST_SIGNER_SEC: b64(signer.secretKey),
        PQDB_TEST_SIGNER_PUB: b64(signer.publicKey),
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const replies: Record<string, unknown>[] = [];
    let wake: (() => void) | undefined;
    p.on('message', (m) => {
      replies.push(m as Record<string, unknown>);
      wake?.();
    });
    const next = async (): Promise<Record<string, unknown>> => {
      while (replies.length === 0) {
        if (p.exitCode !== null) throw new Error(`the writer exited with ${p.exitCode}`);
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 200);
        });
      }
      const m = replies.shift()!;
      if (m.error !== undefined) throw new Error(String(m.error));
      return m;
    };
    track({ close: async () => void (p.exitCode === null && p.kill('SIGKILL')) });
    await next(); // ready
    return {
      /** Runs a command; resolves with its (last) answer. */
      send: async (m: Record<string, unknown>) => {
        p.send(m);
        let reply = await next();
        while (m.op === 'commits' && reply.done !== true) reply = await next();
        return reply as { commit: number; acked: number };
      },
    };
  }

  it('puts, deletes, batches and a checkpoint made by a writer process are seen by the follower', async () => {
    const name = freshStoreName('fproc');
    const w = await child(name);
    const f = await follower(name);
    const fc = f.store.collection('c', text);
    // Engine states opened anew from here on (each is an event that was not taken in place).
    const from = f.events.length;
    const reopened = () => f.events.slice(from).filter((e) => !e.inPlace).length;
    let at = (await w.send({ op: 'put', id: 'a', value: { n: 1, s: 'first light' } })).commit;
    await f.at(at);
    expect(await fc.get('a')).toEqual({ n: 1, s: 'first light' });
    at = (
      await w.send({
        op: 'batch',
        puts: Array.from({ length: 100 }, (_, i) => [`k${i}`, { n: i, s: `light number ${i}` }]),
      })
    ).commit;
    await f.at(at);
    expect(fc.size).toBe(101);
    expect(await fc.search('light', { limit: 1000 })).toHaveLength(101);
    at = (await w.send({ op: 'batch', deletes: Array.from({ length: 50 }, (_, i) => `k${i}`) })).commit;
    await f.at(at);
    at = (await w.send({ op: 'delete', id: 'a' })).commit;
    await f.at(at);
    expect(fc.size).toBe(50);
    expect(await fc.get('k10')).toBeUndefined();
    expect(await fc.get('k60')).toEqual({ n: 60, s: 'light number 60' });
    expect(reopened()).toBe(0);
    at = (await w.send({ op: 'checkpoint' })).commit;
    await f.at(at);
    expect(reopened()).toBe(1);
    expect(f.events.at(-1)).toMatchObject({ commit: at, inPlace: false });
    const last = (await w.send({ op: 'commits', count: 10, size: 10, prefix: 'tail' })).commit;
    await f.at(last);
    expect(fc.size).toBe(150);
    expect(await fc.get('tail-9-9')).toEqual({ n: 99, s: 'tail record 9 9' });
    expect((await fc.search('tail', { limit: 1000 })).length).toBe(100);
    expect(reopened()).toBe(1);
    expect(f.errors).toEqual([]);
  });
});
