// bench/compare.mjs on two small synthetic reports of the shapes the benches write (the kernel
// bench's benches[].results[] with flavors, and the store bench's throughputs), one from an x64 host
// and one from arm64 under emulation: the ratios in the Markdown table, the emulated labels and
// note, the SVG's well-formedness and its bars. No timing is asserted.
import { describe, it, expect } from 'vitest';
// @ts-expect-error: a plain ES module without type declarations
import { merge, toMarkdown, toSvg, normalise, columnLabel } from '../bench/compare.mjs';

const host = (arch: string, emulated: boolean) => ({
  host: 'h',
  cpu: 'AMD EPYC',
  cores: 2,
  arch,
  machine: arch === 'x64' ? 'x86_64' : 'aarch64',
  emulated,
  platform: 'linux',
  runtime: 'node v20.20.2',
  date: '2026-12-02T10:00:00.000Z',
});

const kernels = (arch: string, emulated: boolean, simd: number, scalar: number, peer: number) => ({
  host: host(arch, emulated),
  quick: true,
  benches: [
    {
      id: 'mlkem1024-keygen',
      title: 'ML-KEM-1024 keygen',
      results: [
        { name: 'pqdb (simd)', flavor: 'simd', median: simd, p90: simd * 1.1 },
        { name: 'pqdb (scalar)', flavor: 'scalar', median: scalar, p90: scalar * 1.1 },
        { name: '@noble/post-quantum', median: peer, p90: peer * 1.1, ratioVsPqdb: peer / simd },
      ],
    },
    {
      // No peer: listed as not compared.
      id: 'gcmsiv-seal-batch-1000',
      title: 'AES-256-GCM-SIV encryptBatch',
      results: [{ name: 'pqdb (simd)', flavor: 'simd', median: 5, p90: 6 }],
    },
  ],
});

const store = {
  host: host('x64', false),
  batch: 1000,
  results: [
    { name: 'pqdb (node-fs, gcmsiv-hkdf384)', ingestRecordsPerSec: 50_000, readRecordsPerSec: 90_000, coldOpenMs: 500 },
    {
      name: 'better-sqlite3 + node:crypto AES-256-GCM',
      ingestRecordsPerSec: 40_000,
      readRecordsPerSec: 45_000,
      coldOpenMs: 2,
    },
  ],
};

/** A strict well-formedness check of the small XML subset an SVG uses; returns the elements. */
function parseXml(text: string): { name: string; attrs: Record<string, string> }[] {
  const elements: { name: string; attrs: Record<string, string> }[] = [];
  const stack: string[] = [];
  const tag = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|<\?[^>]*\?>|<!--[\s\S]*?-->/g;
  let at = 0;
  for (let m = tag.exec(text); m !== null; m = tag.exec(text)) {
    const between = text.slice(at, m.index);
    if (/[<>]/.test(between) || /&(?!(amp|lt|gt|quot|apos|#\d+);)/.test(between))
      throw new Error(`malformed text near ${at}: ${between.slice(0, 40)}`);
    at = tag.lastIndex;
    if (m[2] === undefined) continue;
    if (m[1] === '/') {
      if (stack.pop() !== m[2]) throw new Error(`unbalanced </${m[2]}>`);
      continue;
    }
    const attrs: Record<string, string> = {};
    for (const a of m[3].matchAll(/([\w:-]+)="([^"]*)"/g)) {
      if (a[1] in attrs) throw new Error(`duplicate attribute ${a[1]}`);
      if (/&(?!(amp|lt|gt|quot|apos|#\d+);)/.test(a[2])) throw new Error(`bad entity in ${a[1]}`);
      attrs[a[1]] = a[2];
    }
    elements.push({ name: m[2], attrs });
    if (m[4] !== '/') stack.push(m[2]);
  }
  if (text.slice(at).trim() !== '') throw new Error('text after the root element');
  if (stack.length !== 0) throw new Error(`unclosed <${stack.join('>, <')}>`);
  if (elements[0]?.name !== 'svg') throw new Error('root is not <svg>');
  return elements;
}

describe('bench:compare', () => {
  const x64 = kernels('x64', false, 50_000, 70_000, 1_000_000); // 20× against the simd build
  const arm = kernels('arm64', true, 400_000, 300_000, 6_000_000); // 20× against the scalar build
  const m = merge([
    { file: 'kernels-x64-node20-2026-12-02.json', report: x64 },
    { file: 'kernels-arm64-emulated-node20-2026-12-02.json', report: arm },
    { file: 'store-x64-node20-2026-12-02.json', report: store },
    { file: 'ranged-x64-node20-2026-12-02.json', report: { bench: 'ranged', rows: [] } },
  ]);

  it('labels a column per host and runtime, emulated ones as such', () => {
    expect(m.columns).toEqual(['x64 node20', 'arm64 (emulated) node20']);
    expect(columnLabel({ host: host('x64', false), runtime: 'chromium 131.0.6778.85' })).toBe('x64 chromium131');
  });

  it('gives peer median ÷ best pqdb median per host, naming the pqdb row', () => {
    const kem = m.rows.find((r: any) => r.op === 'mlkem1024-keygen');
    expect(kem.ratios['x64 node20']).toBeCloseTo(20, 9);
    expect(kem.ratios['arm64 (emulated) node20']).toBeCloseTo(20, 9);
    expect(kem.pqdbNames).toEqual({ 'x64 node20': 'pqdb (simd)', 'arm64 (emulated) node20': 'pqdb (scalar)' });
    // Throughputs become times per record: better-sqlite3 ingests at 40k/s against pqdb's 50k/s.
    const ingest = m.rows.find((r: any) => r.bench === 'store' && r.op === 'ingest');
    expect(ingest.ratios['x64 node20']).toBeCloseTo(1.25, 9);
    const open = m.rows.find((r: any) => r.bench === 'store' && r.op === 'cold-open');
    expect(open.ratios['x64 node20']).toBeCloseTo(0.004, 9);
  });

  it('writes the ratios, the emulation note and the reports it could not read into the table', () => {
    const md = toMarkdown(m);
    expect(md).toContain('| bench | operation | peer | pqdb row | x64 node20 | arm64 (emulated) node20 |');
    expect(md).toMatch(
      /\| kernels \| ML-KEM-1024 keygen \| @noble\/post-quantum \| simd \/ scalar \| 20\.0× \| 20\.0× \|/,
    );
    expect(md).toContain(
      '| store | ingest (time per record) | better-sqlite3 + node:crypto AES-256-GCM | node-fs, gcmsiv-hkdf384 | 1.25× | — |',
    );
    expect(md).toContain('not arm64 speed');
    expect(md).toContain('AES-256-GCM-SIV encryptBatch: no peer row');
    expect(md).toMatch(/ranged-x64-node20-2026-12-02\.json: unsupported report shape/);
  });

  it('draws a well-formed SVG with one bar per ratio, a line at 1 and value labels', () => {
    const svg = toSvg(m);
    const els = parseXml(svg);
    const bars = els.filter((e) => e.attrs.class === 'bar');
    expect(bars).toHaveLength(m.rows.reduce((n: number, r: any) => n + Object.keys(r.ratios).length, 0));
    expect(bars.filter((b) => b.attrs['data-column'] === 'arm64 (emulated) node20')).toHaveLength(1);
    const colours = new Set(bars.map((b) => `${b.attrs['data-column']}=${b.attrs.fill}`));
    expect(colours.size).toBe(2); // one colour per host column
    expect(els.filter((e) => e.attrs.class === 'one')).toHaveLength(1);
    expect(svg).toContain('20.0×');
    expect(svg).toContain('log scale'); // 0.004× to 20× spans more than 20×
    expect(svg).toContain('not arm64 speed');
  });

  it('refuses an unknown shape with a clear error instead of crashing', () => {
    expect(() => normalise({ host: {}, something: 1 })).toThrow(/unsupported report shape/);
  });
});
