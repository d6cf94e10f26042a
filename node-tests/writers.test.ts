// Two writers on one file store (DESIGN §11). On this host the host lock keeps a second writer out
// whatever happens to the LOCK file, and a SIGKILLed holder releases it. A writer let in anyway (one
// on another host sharing the directory, after a LOCK deleted while its holder is alive) is stopped
// by the compare-and-swap of the commit counter: whichever writer was overtaken gets CONFLICT and
// writes nothing, and every acknowledged put survives.
import { describe, it, expect, afterEach } from 'vitest';
import { mkdtempSync, rmSync, unlinkSync, existsSync } from 'node:fs';
import { fork } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, generateRecipient, openNodeFsPageStore } from '../src/node';

const r = generateRecipient('classical');
const schema = { n: 'integer' } as const;
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

const open = (location: string, create = false) =>
  openStore({ location, create, recipients: [r.publicKey], unlock: r.secretKey });
/** A writer on another host sharing the directory: this host's lock does not reach it. */
const openElsewhere = async (location: string) =>
  openStore({
    storage: await openNodeFsPageStore(location, { hostLock: false }),
    recipients: [r.publicKey],
    unlock: r.secretKey,
  });

describe('a second writer', () => {
  it('on this host is refused while the holder lives, even with LOCK deleted; a SIGKILL frees it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pqdb-writers-'));
    dirs.push(dir);
    await (await open(dir, true)).close();
    const child = fork(new URL('./support/crash-writer.mjs', import.meta.url), [
      dir,
      '0',
      Buffer.from(r.publicKey).toString('hex'),
      Buffer.from(r.secretKey).toString('hex'),
      '1',
    ]);
    await new Promise<void>((resolve) => child.on('message', (m: { acked?: number }) => m.acked === 3 && resolve()));
    await expect(open(dir)).rejects.toMatchObject({ code: 'LOCKED' });
    unlinkSync(join(dir, 'LOCK')); // deleted behind the live holder's back
    await expect(open(dir)).rejects.toMatchObject({ code: 'LOCKED', message: expect.stringMatching(/this host/) });
    expect(existsSync(join(dir, 'LOCK'))).toBe(false); // the refused opener left nothing behind
    const exited = new Promise((resolve) => child.on('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    const after = await open(dir);
    expect(
      after.collection('crash', { schema: { round: 'integer', i: 'integer', payload: 'string' } }).has('r0-3'),
    ).toBe(true);
    await after.close();
  });

  it('from another host, let in by a deleted LOCK, cannot lose an acknowledged put', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pqdb-writers-'));
    dirs.push(dir);
    const a = await open(dir, true);
    const ca = a.collection('c', { schema });
    await ca.put('a1', { n: 1 });
    await expect(openElsewhere(dir)).rejects.toMatchObject({ code: 'LOCKED' });

    unlinkSync(join(dir, 'LOCK')); // deleted behind the holder's back
    const b = await openElsewhere(dir);
    const cb = b.collection('c', { schema });
    await ca.put('a2', { n: 2 }); // acknowledged: A was first
    await expect(cb.put('b1', { n: 3 })).rejects.toMatchObject({ code: 'CONFLICT' }); // B was overtaken
    await expect(cb.put('b2', { n: 4 })).rejects.toMatchObject({ code: expect.stringMatching(/CONFLICT|IO_ERROR/) });
    await ca.put('a3', { n: 5 }); // A goes on
    await b.close();
    await a.close();

    const again = await open(dir);
    const c = again.collection('c', { schema });
    expect([await c.get('a1'), await c.get('a2'), await c.get('a3')]).toEqual([{ n: 1 }, { n: 2 }, { n: 5 }]);
    expect(c.has('b1')).toBe(false);
    expect(again.recovery.actions.join(' ')).not.toMatch(/CORRUPTION/);
    await again.close();
  });

  it('the writer that committed second after a takeover is the one refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pqdb-writers-'));
    dirs.push(dir);
    const a = await open(dir, true);
    const ca = a.collection('c', { schema });
    await ca.put('a1', { n: 1 });
    unlinkSync(join(dir, 'LOCK'));
    const b = await openElsewhere(dir);
    const cb = b.collection('c', { schema });
    await cb.put('b1', { n: 2 }); // acknowledged: B committed first this time
    await expect(ca.put('a2', { n: 3 })).rejects.toMatchObject({ code: 'CONFLICT' });
    await a.close();
    await b.close();
    const again = await open(dir);
    const c = again.collection('c', { schema });
    expect([await c.get('a1'), await c.get('b1')]).toEqual([{ n: 1 }, { n: 2 }]);
    expect(c.has('a2')).toBe(false);
    await again.close();
  });
});
