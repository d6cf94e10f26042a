// The crypto registry: states, the one-active rule, persisted records, write/read checks.
import { describe, it, expect } from 'vitest';
import { Registry } from '../src/engine/registry';

describe('crypto registry', () => {
  it('starts with one active suite and the others decrypt-only', () => {
    const r = new Registry({ active: 'gcmsiv-hkdf384' });
    expect(r.list().map((e) => [e.suite.name, e.state])).toEqual([
      ['gcmsiv-hkdf256', 'decrypt-only'],
      ['gcmsiv-hkdf384', 'active'],
      ['cnsa2-gcm-hkdf384-commit', 'decrypt-only'],
    ]);
    expect(r.active().map((x) => x.id)).toEqual([2]);
  });

  it('quarantined refuses writes but serves reads; retired refuses reads; decrypt-only only decrypts', () => {
    const r = new Registry({ active: 2 });
    r.setState('gcmsiv-hkdf256', 'quarantined');
    expect(() => r.checkWrite(1)).toThrow(expect.objectContaining({ code: 'SUITE_QUARANTINED' }));
    expect(() => r.checkRead(1)).not.toThrow();
    r.setState(1, 'retired');
    expect(() => r.checkRead(1)).toThrow(expect.objectContaining({ code: 'SUITE_RETIRED' }));
    expect(() => r.checkWrite(1)).toThrow(expect.objectContaining({ code: 'SUITE_RETIRED' }));
    expect(() => r.checkWrite(3)).toThrow(expect.objectContaining({ code: 'SUITE_QUARANTINED' }));
    expect(() => r.checkWrite(2)).not.toThrow();
  });

  it('keeps an active suite; retiring a suite in use is refused; state persists', () => {
    const r = new Registry({ active: 2 });
    expect(() => r.setState(2, 'decrypt-only')).toThrow(RangeError);
    r.setState(3, 'active');
    r.setState(2, 'decrypt-only');
    expect(r.active().map((s) => s.name)).toEqual(['cnsa2-gcm-hkdf384-commit']);
    expect(() => r.setState(2, 'retired', { inUse: true })).toThrow(RangeError);
    expect(() => r.setState(2, 'gone' as 'active')).toThrow(RangeError);
    const again = new Registry({ records: r.records() });
    expect(again.list()).toEqual(r.list());
    expect(
      () =>
        new Registry({
          records: [
            { suite: 1, state: 'quarantined', since: '' },
            { suite: 2, state: 'retired', since: '' },
            { suite: 3, state: 'decrypt-only', since: '' },
          ],
        }),
    ).toThrow(expect.objectContaining({ code: 'CORRUPTION' }));
  });
});
