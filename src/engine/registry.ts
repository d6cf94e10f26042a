// The crypto registry (DESIGN §5): every suite has a state.
//   active        reads and writes (each collection writes with one active suite; at least one is active)
//   decrypt-only  reads only (the state of a suite being migrated away from)
//   quarantined   refuses new writes (SUITE_QUARANTINED), keeps serving reads, is reported
//   retired       refuses reads (SUITE_RETIRED); only when no live record or copy uses it
// State changes are recorded with their time and persisted by the store in its manifest.

import { PqdbError } from '../errors';
import { suites, suite as suiteOf, type Suite, type SuiteName } from '../crypto/suites';

export type SuiteState = 'active' | 'decrypt-only' | 'quarantined' | 'retired';
const STATES: readonly SuiteState[] = ['active', 'decrypt-only', 'quarantined', 'retired'];

export interface RegistryEntry {
  suite: Suite;
  state: SuiteState;
  /** ISO time of the last state change. */
  since: string;
}

export interface RegistryRecord {
  suite: number;
  state: SuiteState;
  since: string;
}

export class Registry {
  readonly #states = new Map<number, { state: SuiteState; since: string }>();

  /** A registry with `active` active and every other suite decrypt-only, or one restored from records. */
  constructor(init: { active: SuiteName | number } | { records: readonly RegistryRecord[] }) {
    const now = new Date().toISOString();
    if ('records' in init) {
      for (const r of init.records) {
        suiteOf(r.suite);
        if (!STATES.includes(r.state))
          throw new PqdbError('CORRUPTION', `registry state ${JSON.stringify(r.state)} is unknown`);
        this.#states.set(r.suite, { state: r.state, since: r.since });
      }
      for (const s of suites())
        if (!this.#states.has(s.id)) this.#states.set(s.id, { state: 'decrypt-only', since: now });
      if (![...this.#states.values()].some((x) => x.state === 'active')) {
        throw new PqdbError('CORRUPTION', 'the registry must have an active suite');
      }
    } else {
      const active = suiteOf(init.active).id;
      for (const s of suites())
        this.#states.set(s.id, { state: s.id === active ? 'active' : 'decrypt-only', since: now });
    }
  }

  /** Every suite with its state. */
  list(): RegistryEntry[] {
    return suites().map((s) => ({ suite: s, ...this.#states.get(s.id)! }));
  }

  /** The persisted form. */
  records(): RegistryRecord[] {
    return [...this.#states.entries()].map(([suite, v]) => ({ suite, ...v }));
  }

  state(nameOrId: SuiteName | number): SuiteState {
    return this.#states.get(suiteOf(nameOrId).id)!.state;
  }

  /** The active suites (the first is the store's default for new collections when it is active). */
  active(): Suite[] {
    return suites().filter((s) => this.#states.get(s.id)!.state === 'active');
  }

  /**
   * Changes a suite's state. The last active suite cannot leave `active`, and a suite still
   * protecting live records cannot be retired.
   * @throws RangeError for an unknown state or a change that would leave no active suite.
   */
  setState(nameOrId: SuiteName | number, state: SuiteState, options: { inUse?: boolean } = {}): void {
    const s = suiteOf(nameOrId);
    if (!STATES.includes(state))
      throw new RangeError(`"state" expected one of ${STATES.join(', ')}, got ${JSON.stringify(state)}`);
    const now = new Date().toISOString();
    const current = this.#states.get(s.id)!;
    if (state === current.state) return;
    if (current.state === 'active' && state !== 'active' && this.active().length === 1) {
      throw new RangeError(`${s.name} is the only active suite: make another suite active first`);
    }
    if (state === 'retired' && options.inUse) {
      throw new RangeError(`${s.name} still protects live records or copies and cannot be retired`);
    }
    this.#states.set(s.id, { state, since: now });
  }

  /**
   * Throws unless records may be written with this suite.
   * @throws PqdbError SUITE_QUARANTINED (quarantined), SUITE_RETIRED (retired); writes with a
   * decrypt-only suite are refused with SUITE_QUARANTINED too (it only decrypts).
   */
  checkWrite(nameOrId: SuiteName | number): void {
    const s = suiteOf(nameOrId);
    const st = this.state(s.id);
    if (st === 'active') return;
    if (st === 'retired') throw new PqdbError('SUITE_RETIRED', `suite ${s.name} is retired`);
    throw new PqdbError('SUITE_QUARANTINED', `suite ${s.name} is ${st}: it refuses new writes`);
  }

  /**
   * Throws unless records sealed with this suite may be read.
   * @throws PqdbError SUITE_RETIRED.
   */
  checkRead(nameOrId: SuiteName | number): void {
    const s = suiteOf(nameOrId);
    if (this.state(s.id) === 'retired')
      throw new PqdbError('SUITE_RETIRED', `suite ${s.name} is retired: its records are no longer read`);
  }
}
