// The one re-seal step (src/engine/rewrite.ts) with a small context: the gate is asked before
// anything opens, sequences come from the draft in order, the governance and the copy flag are
// kept, a record sealed ahead takes the commit salt and its plaintext is wiped at once, one sealed
// with the commit is wiped once the commit is made or dropped, a failed open is reported, and a
// failed check wipes the plaintext.
import { describe, it, expect } from 'vitest';
import { PqdbError } from '../src/errors';
import { rewrite, type RewriteContext } from '../src/engine/rewrite';
import type { Location } from '../src/engine/directory';
import type { PutSpec } from '../src/engine/records';

const loc = (governance: string): Location =>
  ({ pageId: 1, offset: 0, length: 40, sequence: 7, governance, suite: 1, generation: 0, leafIndex: 0 }) as Location;

function harness(refuse = new Set<string>(), failOpen = false) {
  const opened: Uint8Array[] = [];
  const specs: PutSpec[] = [];
  const salts: Uint8Array[] = [];
  const ctx: RewriteContext = {
    from: {
      refusal: (_p, _c, id) => (refuse.has(id) ? new PqdbError('AUTHORITY_DENIED', 'no') : undefined),
      open: async () => {
        if (failOpen) throw new PqdbError('AUTH_FAILED', 'x');
        const p = new Uint8Array(8).fill(9);
        opened.push(p);
        return p;
      },
      openIn: () => {
        const p = new Uint8Array(8).fill(9);
        opened.push(p);
        return p;
      },
    },
    to: {
      put: (spec) => (specs.push({ ...spec }), { kind: 'put', length: 60 }) as never,
      putSealed: (spec, salt, into) => {
        expect(spec.plaintext.every((b) => b === 9)).toBe(true); // sealed before the wipe
        specs.push({ ...spec });
        salts.push(salt);
        return { kind: 'put', length: into?.length ?? 0 } as never;
      },
    },
    generation: () => 3,
  };
  let next = 100;
  const after: (() => void)[] = [];
  const abort: (() => void)[] = [];
  const writes: unknown[] = [];
  const salt = new Uint8Array(16).fill(5);
  const draft = {
    sequences: (n: number) => ((next += n), next - n),
    commitSalt: () => salt,
    write: (_op: unknown, w: unknown) => void writes.push(w),
    afterCommit: (fn: () => void) => void after.push(fn),
    onAbort: (fn: () => void) => void abort.push(fn),
  };
  return { ctx, draft, opened, specs, salts, salt, after, abort, writes };
}

describe('the re-seal step', () => {
  it('seals ahead with the commit salt, in sequence order, keeping governance and the copy flag; wipes at once', async () => {
    const h = harness(new Set(['b']));
    const base = { purpose: 'copy' as const, suite: 2, copy: true, sealInto: (n: number) => new Uint8Array(n) };
    const out = [];
    for (const id of ['a', 'b', 'c'])
      out.push(
        await rewrite(h.ctx, h.draft, {
          ...base,
          collection: 'd',
          id,
          loc: loc(`{"scope":"${id}"}`),
          page: new Uint8Array(64),
        }),
      );
    expect(out.map((r) => r.kind)).toEqual(['written', 'withheld', 'written']);
    expect(h.opened.length).toBe(2); // the refused one was never opened
    expect(h.specs.map((s) => [s.id, s.sequence, s.generation, s.governance, s.copy])).toEqual([
      ['a', 100, 3, '{"scope":"a"}', true],
      ['c', 101, 3, '{"scope":"c"}', true],
    ]);
    expect(h.salts.every((s) => s === h.salt)).toBe(true);
    expect(h.opened.every((p) => p.every((b) => b === 0))).toBe(true);
    expect(h.writes).toEqual([
      { kind: 'put', collection: 'd', id: 'a', copy: true },
      { kind: 'put', collection: 'd', id: 'c', copy: true },
    ]);
  });

  it('sealed with the commit: a plain write, wiped only once the commit is made or dropped', async () => {
    const h = harness();
    const r = await rewrite(h.ctx, h.draft, {
      purpose: 'restore',
      collection: 'd',
      id: 'a',
      loc: loc('{}'),
      suite: 2,
      copy: false,
    });
    expect(r.kind).toBe('written');
    expect(h.specs[0].copy).toBeUndefined();
    expect(h.writes).toEqual([{ kind: 'put', collection: 'd', id: 'a' }]);
    expect(h.opened[0].every((b) => b === 9)).toBe(true); // still needed by the commit page
    h.after.forEach((f) => f());
    expect(h.opened[0].every((b) => b === 0)).toBe(true);
    expect(h.abort.length).toBe(1);
  });

  it('reports a failed open, withholds on `allow`, and wipes when the check throws', async () => {
    const failed = harness(new Set(), true);
    const spec = { purpose: 'copy' as const, collection: 'd', id: 'a', loc: loc('{}'), suite: 2, copy: true };
    const r = await rewrite(failed.ctx, failed.draft, spec);
    expect(r.kind === 'failed' && (r.error as PqdbError).code).toBe('AUTH_FAILED');
    const h = harness();
    expect((await rewrite(h.ctx, h.draft, { ...spec, allow: () => false })).kind).toBe('withheld');
    expect(h.opened.length).toBe(0);
    const bad = new PqdbError('SCHEMA_MISMATCH', 'bad');
    await expect(
      rewrite(h.ctx, h.draft, {
        ...spec,
        check: () => {
          throw bad;
        },
      }),
    ).rejects.toBe(bad);
    expect(h.opened[0].every((b) => b === 0)).toBe(true);
    expect(h.writes).toEqual([]);
  });
});
