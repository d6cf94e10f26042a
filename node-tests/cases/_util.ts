// Helpers shared by the platform-neutral test cases (run by vitest in Node and inside a Chromium
// page by Playwright): hex, a seeded PRNG, and the summary every case runner returns.

export interface Summary {
  /** What was checked, e.g. "Wycheproof hmac_sha384_test.json". */
  name: string;
  /** Cases run. */
  total: number;
  passed: number;
  /** Cases present but not run (with the reason in `note`). */
  skipped: number;
  /** One line per failed case. */
  failures: string[];
  note?: string;
}

export function summary(name: string): Summary {
  return { name, total: 0, passed: 0, skipped: 0, failures: [] };
}

export function record(s: Summary, id: string, ok: boolean, detail = ''): void {
  s.total++;
  if (ok) s.passed++;
  else s.failures.push(`${id}${detail ? ': ' + detail : ''}`);
}

export function hex(b: Uint8Array): string {
  let s = '';
  for (const x of b) s += x.toString(16).padStart(2, '0');
  return s;
}

export function unhex(s: string): Uint8Array {
  if (s.length % 2 !== 0) throw new Error(`odd hex length ${s.length}`);
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Deterministic PRNG (SplitMix32-like) so failures reproduce from the printed seed. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  u32(): number {
    let z = (this.s = (this.s + 0x9e3779b9) >>> 0);
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  }
  /** Integer in [0, n). */
  int(n: number): number {
    return this.u32() % n;
  }
  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.u32() & 0xff;
    return out;
  }
}
