// npm run bench:compare: merges bench reports (any bench, from any hosts and runtimes) into one
// Markdown table and one SVG bar chart of pqdb's ratios against the peers measured beside it.
// ratio = peer median ÷ pqdb median for the same operation in the same report (a throughput is
// turned into time per record first), so > 1 means pqdb is faster; ratios never cross reports, so
// hosts of different speeds compare fairly. One column per host and runtime (`x64 node20`,
// `arm64 (emulated) node20`, `x64 chromium131`); an emulated column's ratios are the emulator's,
// never arm64 speed.
//
//   node bench/compare.mjs a.json b.json … [--out DIR]
//
// Without --out the Markdown goes to stdout; with it, DIR/compare.md and DIR/compare.svg. A report
// directory (migration, scale, …) is read through the summary JSON inside it.
//
// Shapes understood (what the benches write):
//   kernels (bench/run.mjs) and alike: benches[] of { id, title, results[] of { name, flavor?, median } };
//     pqdb rows carry `flavor` (or are named "pqdb (…)"), the best (lowest median) stands for pqdb;
//     a bench with `ref` counts only the pqdb rows named `<ref> (…)`.
//   store / postgres: results[] of { name, ingestRecordsPerSec, readRecordsPerSec, coldOpenMs };
//     rows named "pqdb …" are pqdb's, the best per metric stands for it.
//   search: medians[kind][engine] in ms; "pqdb store (search + unseal)" against the peers that
//     return values too.
// Anything else (no peer measured beside pqdb) is listed as skipped, with the reason.

import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A report's column label: `<arch>[ (emulated)] <runtime>`, runtime `node20` or `chromium131`.
 * @param {any} report
 */
export function columnLabel(report) {
  const host = report.host ?? {};
  const arch = host.arch ?? 'unknown-arch';
  let runtime = 'unknown-runtime';
  const browser = typeof report.runtime === 'string' ? report.runtime : host.browser;
  if (typeof browser === 'string' && /chrom/i.test(browser)) {
    const major = /(\d+)/.exec(browser)?.[1];
    runtime = `chromium${major ?? ''}`;
  } else if (typeof host.runtime === 'string') {
    const m = /node v?(\d+)/.exec(host.runtime);
    runtime = m !== null ? `node${m[1]}` : host.runtime.replace(/\s+/g, '');
  }
  return `${arch}${host.emulated === true ? ' (emulated)' : ''} ${runtime}`;
}

/** The bench name: `report.bench`, else the file name's first part (`kernels-x64-…` → kernels). */
function benchName(report, file) {
  const stem = basename(file).replace(/\.json$/, '');
  // Reports of the kernel bench named before the bench prefix: `<arch>[-emulated]-<runtime>-<date>`.
  if (/^(x64|arm64)-/.test(stem) && Array.isArray(report.benches)) return 'kernels';
  const m = /^([a-z0-9-]+?)-(?:x64|arm64|ia32|arm|ppc64|s390x|riscv64|chromium\d*|node\d*)(?:-|$)/.exec(stem);
  if (m !== null) return m[1];
  if (typeof report.bench === 'string' && /^[a-z0-9-]+$/.test(report.bench)) return report.bench;
  return Array.isArray(report.benches) ? 'kernels' : stem;
}

const isPqdb = (row) => typeof row.flavor === 'string' || /^pqdb\b(?! over)/.test(row.name ?? '');
const finite = (x) => typeof x === 'number' && Number.isFinite(x) && x > 0;

/**
 * Normalises one report to operations: [{ op, title, pqdb: { name, value }, peers: [{ name, value }] }]
 * where `value` is a time (lower is faster) in the report's unit. Returns { ops, skipped } with the
 * reason for each part left out, or throws a TypeError naming the shape it cannot read.
 * @param {any} report
 */
export function normalise(report) {
  const ops = [];
  const skipped = [];
  const add = (op, title, rows) => {
    const mine = rows.filter((r) => r.pqdb && finite(r.value));
    const peers = rows.filter((r) => !r.pqdb && finite(r.value));
    if (mine.length === 0 || peers.length === 0) {
      skipped.push(`${title}: ${mine.length === 0 ? 'no pqdb row' : 'no peer row'}`);
      return;
    }
    const best = mine.reduce((a, b) => (b.value < a.value ? b : a));
    ops.push({
      op,
      title,
      pqdb: { name: best.name, value: best.value },
      peers: peers.map((p) => ({ name: p.name, value: p.value })),
    });
  };
  if (report === null || typeof report !== 'object') throw new TypeError('not a JSON object');
  if (Array.isArray(report.benches)) {
    for (const b of report.benches) {
      if (!Array.isArray(b?.results)) {
        skipped.push(`${b?.id ?? '?'}: no results[]`);
        continue;
      }
      // A bench with `ref` compares its peers with the pqdb rows so named only (e.g. the one-shot
      // form against one-shot peers, not the keyed or into-a-buffer forms beside it).
      const ours = (r) => isPqdb(r) && (typeof b.ref !== 'string' || r.name.startsWith(`${b.ref} (`));
      add(
        b.id,
        b.title ?? b.id,
        b.results.filter((r) => ours(r) || !isPqdb(r)).map((r) => ({ name: r.name, pqdb: ours(r), value: r.median })),
      );
    }
  } else if (report.medians !== null && typeof report.medians === 'object') {
    for (const [kind, engines] of Object.entries(report.medians)) {
      const rows = Object.entries(engines).map(([name, value]) => ({ name, value, pqdb: /^pqdb\b/.test(name) }));
      // Peers return values (through a Map), so the pqdb row that unseals values is the fair one.
      const fair = rows.filter((r) => !r.pqdb || /^pqdb store/.test(r.name));
      add(`search: ${kind}`, `search, ${kind}`, fair);
    }
  } else if (Array.isArray(report.results) && report.results.some((r) => 'ingestRecordsPerSec' in (r ?? {}))) {
    const metrics = [
      ['ingest', 'ingest (time per record)', (r) => (finite(r.ingestRecordsPerSec) ? 1 / r.ingestRecordsPerSec : NaN)],
      ['read', 'read (time per record)', (r) => (finite(r.readRecordsPerSec) ? 1 / r.readRecordsPerSec : NaN)],
      ['cold-open', 'cold open', (r) => r.coldOpenMs],
    ];
    for (const [op, title, get] of metrics)
      add(
        op,
        title,
        report.results.map((r) => ({ name: r.name, pqdb: isPqdb(r), value: get(r) })),
      );
  } else {
    const keys = Object.keys(report).slice(0, 8).join(', ');
    throw new TypeError(`unsupported report shape (keys: ${keys}): no peer measurements this tool can read`);
  }
  return { ops, skipped };
}

/** Reads a report file, or the summary JSON of a report directory. */
export function readReport(path) {
  let file = path;
  if (statSync(path).isDirectory()) {
    const candidates = ['summary.json', 'evidence.json', 'combined.json', 'report.json'];
    const found = candidates.map((c) => join(path, c)).find((c) => existsSync(c));
    const anyJson = readdirSync(path).find((f) => f.endsWith('.json'));
    file = found ?? (anyJson !== undefined ? join(path, anyJson) : undefined);
    if (file === undefined) throw new TypeError(`${path}: a directory without a JSON summary`);
  }
  return { file: path, report: JSON.parse(readFileSync(file, 'utf8')) };
}

/**
 * Merges reports: [{ file, report }] → { columns, rows, skipped, problems } where each row is
 * { bench, op, title, peer, pqdbNames: { [column]: name }, ratios: { [column]: number } }.
 * @param {{ file: string, report: any }[]} inputs
 */
export function merge(inputs) {
  const columns = [];
  const rows = new Map();
  const skipped = [];
  const problems = [];
  const used = new Map(); // column label → benches already in it (a second report of one bench gets its own column)
  for (const { file, report } of inputs) {
    let norm;
    try {
      norm = normalise(report);
    } catch (e) {
      problems.push(`${file}: ${e.message}`);
      continue;
    }
    const bench = benchName(report, file);
    let label = columnLabel(report);
    if (used.get(label)?.has(bench)) {
      const day = (report.host?.date ?? '').slice(0, 10);
      label = `${label} (${report.host?.host ?? '?'}, ${day || basename(file)})`;
      for (let n = 2; used.get(label)?.has(bench); n++) label = `${label.replace(/ #\d+$/, '')} #${n}`;
    }
    if (!used.has(label)) used.set(label, new Set());
    used.get(label).add(bench);
    if (!columns.includes(label)) columns.push(label);
    for (const s of norm.skipped) skipped.push(`${bench} (${label}): ${s}`);
    if (norm.ops.length === 0) problems.push(`${file}: no operation with both a pqdb row and a peer row`);
    for (const o of norm.ops) {
      for (const p of o.peers) {
        const key = `${bench}\u0000${o.op}\u0000${p.name}`;
        if (!rows.has(key)) rows.set(key, { bench, op: o.op, title: o.title, peer: p.name, pqdbNames: {}, ratios: {} });
        const row = rows.get(key);
        row.ratios[label] = p.value / o.pqdb.value;
        row.pqdbNames[label] = o.pqdb.name;
      }
    }
  }
  return { columns, rows: [...rows.values()], skipped, problems };
}

const fmtRatio = (r) => (r >= 10 ? r.toFixed(1) : r >= 0.1 ? r.toFixed(2) : r.toPrecision(2)) + '×';

/** The pqdb row name without "pqdb" (`pqdb, into a buffer (simd)` → `into a buffer (simd)`). */
const shortPqdb = (name) => name.replace(/^pqdb[ ,]*/, '').replace(/^\((.*)\)$/, '$1') || name;

/**
 * The Markdown report: one table (rows = bench, operation, peer; columns = hosts), then notes.
 * @param {ReturnType<typeof merge>} m
 * @param {{ files?: string[] }} [opts]
 */
export function toMarkdown(m, opts = {}) {
  const lines = [];
  lines.push('# pqdb against its peers, per host');
  lines.push('');
  lines.push(
    'ratio = peer median ÷ pqdb median for the same operation, measured in the same process; **> 1 means pqdb is faster**. ' +
      'The pqdb row is its best build for that operation on that host (the "pqdb row" column names it, one name per host column in their order when they differ).',
  );
  lines.push('');
  if (m.columns.some((c) => c.includes('(emulated)')))
    lines.push(
      '> Columns marked *(emulated)* ran under qemu-user on an x86_64 host: their ratios are the emulator’s (which slows pqdb’s WebAssembly and the JavaScript peers unevenly) and are **not arm64 speed**. They show that the code runs and passes there, nothing about real aarch64 hardware.',
      '',
    );
  lines.push(`| bench | operation | peer | pqdb row | ${m.columns.join(' | ')} |`);
  lines.push(`|---|---|---|---|${m.columns.map(() => '---:').join('|')}|`);
  const esc = (s) => String(s).replace(/\|/g, '\\|');
  for (const r of m.rows) {
    const names = [...new Set(Object.values(r.pqdbNames).map(shortPqdb))];
    // One name when every column agrees, else one per column in column order.
    const pqdbCell =
      names.length === 1
        ? names[0]
        : m.columns.map((c) => (r.pqdbNames[c] === undefined ? '—' : shortPqdb(r.pqdbNames[c]))).join(' / ');
    const cells = m.columns.map((c) => (r.ratios[c] === undefined ? '—' : fmtRatio(r.ratios[c])));
    lines.push(`| ${esc(r.bench)} | ${esc(r.title)} | ${esc(r.peer)} | ${esc(pqdbCell)} | ${cells.join(' | ')} |`);
  }
  if (m.rows.length === 0) lines.push(`| — | no comparable operation | | | ${m.columns.map(() => '').join(' | ')} |`);
  lines.push('');
  if (opts.files !== undefined && opts.files.length > 0) {
    lines.push('Reports: ' + opts.files.map((f) => `\`${f}\``).join(', ') + '.');
    lines.push('');
  }
  if (m.skipped.length > 0) {
    lines.push('Not compared (nothing to set against pqdb in the report):');
    lines.push('');
    for (const s of m.skipped) lines.push(`- ${s}`);
    lines.push('');
  }
  if (m.problems.length > 0) {
    lines.push('Reports not read:');
    lines.push('');
    for (const p of m.problems) lines.push(`- ${p}`);
    lines.push('');
  }
  return lines.join('\n');
}

const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#8c564b', '#e377c2'];
const xmlEscape = (s) =>
  String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]);

/**
 * The SVG chart: one group per (operation, peer), one bar per host column in that column's
 * colour, a line at ratio 1, a log axis when the ratios span more than 20×, the value at each bar.
 * @param {ReturnType<typeof merge>} m
 */
export function toSvg(m) {
  const values = m.rows.flatMap((r) => Object.values(r.ratios)).filter(finite);
  const lo = Math.min(1, ...values);
  const hi = Math.max(1, ...values);
  const log = hi / lo > 20;
  const BAR = 11;
  const GAP = 3;
  const GROUP_GAP = 10;
  const LABEL_W = 430;
  const PLOT_W = 560;
  const LEFT = LABEL_W + 55; // room for the value of a bar left of 1
  const nCols = Math.max(1, m.columns.length);
  const emulated = m.columns.some((c) => c.includes('(emulated)'));
  const TOP = 64 + 16 * Math.ceil(nCols / 3) + (emulated ? 16 : 0);
  const groupH = Math.max(24, nCols * (BAR + GAP) - GAP);
  let dMin;
  let dMax;
  if (log) {
    dMin = Math.min(10 ** (Math.floor(Math.log10(lo) * 3) / 3), lo / 1.15);
    dMax = Math.max(10 ** (Math.ceil(Math.log10(hi) * 3) / 3), hi * 1.15);
  } else {
    dMin = 0;
    dMax = Math.ceil(hi * 1.1 * 2) / 2;
  }
  const x = (v) =>
    LEFT + (log ? (Math.log(v / dMin) / Math.log(dMax / dMin)) * PLOT_W : ((v - dMin) / (dMax - dMin)) * PLOT_W);
  const height = TOP + m.rows.length * (groupH + GROUP_GAP) + 40;
  const width = LEFT + PLOT_W + 90;
  const out = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="11">`,
  );
  out.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(
    `<text x="10" y="20" font-size="14" font-weight="bold">pqdb against its peers: peer median ÷ pqdb median (&gt; 1: pqdb faster)${log ? ', log scale' : ''}</text>`,
  );
  if (emulated)
    out.push(
      `<text x="10" y="38" fill="#a00">Emulated columns ran under qemu-user on an x86_64 host: their ratios are not arm64 speed.</text>`,
    );
  // Legend: one colour per host column.
  const legendY = emulated ? 56 : 40;
  m.columns.forEach((c, i) => {
    const lx = 10 + (i % 3) * 330;
    const ly = legendY + Math.floor(i / 3) * 16;
    out.push(
      `<rect class="legend" x="${lx}" y="${ly - 9}" width="12" height="10" fill="${COLOURS[i % COLOURS.length]}"/>`,
    );
    out.push(`<text x="${lx + 16}" y="${ly}">${xmlEscape(c)}</text>`);
  });
  // Axis ticks and grid.
  const ticks = [];
  if (log) {
    for (let e = Math.floor(Math.log10(dMin)); e <= Math.ceil(Math.log10(dMax)); e++)
      for (const k of [1, 2, 5]) {
        const v = k * 10 ** e;
        if (v >= dMin && v <= dMax) ticks.push(v);
      }
  } else {
    const step = dMax <= 3 ? 0.5 : dMax <= 10 ? 1 : dMax <= 30 ? 5 : 10;
    for (let v = 0; v <= dMax + 1e-9; v += step) ticks.push(Number(v.toFixed(2)));
  }
  const plotBottom = height - 30;
  for (const t of ticks) {
    const tx = x(t).toFixed(1);
    out.push(`<line x1="${tx}" y1="${TOP - 6}" x2="${tx}" y2="${plotBottom}" stroke="#e4e4e4"/>`);
    out.push(`<text x="${tx}" y="${plotBottom + 14}" text-anchor="middle" fill="#555">${t}×</text>`);
  }
  // Bars: on a log axis they grow from 1 (left for < 1, right for > 1); on a linear one from 0.
  const origin = x(log ? 1 : dMin);
  m.rows.forEach((r, g) => {
    const gy = TOP + g * (groupH + GROUP_GAP);
    if (g % 2 === 1)
      out.push(
        `<rect x="0" y="${gy - GROUP_GAP / 2}" width="${width}" height="${groupH + GROUP_GAP}" fill="#f6f6f6"/>`,
      );
    // Two label lines: the operation, then the peer (each cut to what fits left of the plot).
    const cut = (s) => (s.length > 68 ? `${s.slice(0, 67)}…` : s);
    const title = r.title.length > 48 ? r.title.replace(/\s*\([^)]*\)\s*$/, '') : r.title;
    out.push(
      `<text x="${LABEL_W}" y="${gy + groupH / 2 - 2}" text-anchor="end">${xmlEscape(cut(`${r.bench}: ${title}`))}</text>`,
    );
    out.push(
      `<text x="${LABEL_W}" y="${gy + groupH / 2 + 10}" text-anchor="end" fill="#444">${xmlEscape(cut(`vs ${r.peer}`))}</text>`,
    );
    m.columns.forEach((c, i) => {
      const v = r.ratios[c];
      if (!finite(v)) return;
      const by = gy + (groupH - (nCols * (BAR + GAP) - GAP)) / 2 + i * (BAR + GAP);
      const vx = x(v);
      const x0 = Math.min(origin, vx);
      const w = Math.max(1, Math.abs(vx - origin));
      out.push(
        `<rect class="bar" data-column="${xmlEscape(c)}" data-ratio="${v.toFixed(4)}" x="${x0.toFixed(1)}" y="${by}" width="${w.toFixed(1)}" height="${BAR}" fill="${COLOURS[i % COLOURS.length]}"><title>${xmlEscape(`${r.title} vs ${r.peer}, ${c}: ${fmtRatio(v)}`)}</title></rect>`,
      );
      const tx = v >= (log ? 1 : dMin) ? x0 + w + 3 : x0 - 3;
      out.push(
        `<text x="${tx.toFixed(1)}" y="${by + BAR - 2}" font-size="10"${v >= (log ? 1 : dMin) ? '' : ' text-anchor="end"'}>${fmtRatio(v)}</text>`,
      );
    });
  });
  const one = x(1).toFixed(1);
  out.push(
    `<line class="one" x1="${one}" y1="${TOP - 10}" x2="${one}" y2="${plotBottom}" stroke="#000" stroke-width="1.5"/>`,
  );
  out.push(`<text x="${one}" y="${TOP - 12}" text-anchor="middle" font-weight="bold">1×</text>`);
  out.push('</svg>');
  return out.join('\n') + '\n';
}

function main(argv) {
  const outAt = argv.indexOf('--out');
  const outDir = outAt >= 0 ? argv[outAt + 1] : undefined;
  const files = argv.filter((a, i) => a !== '--out' && (outAt < 0 || i !== outAt + 1));
  if (files.length === 0 || (outAt >= 0 && outDir === undefined)) {
    console.error('usage: node bench/compare.mjs a.json b.json … [--out DIR]');
    return 2;
  }
  const inputs = [];
  const problems = [];
  for (const f of files) {
    try {
      inputs.push(readReport(f));
    } catch (e) {
      problems.push(`${f}: ${e.code === 'ENOENT' ? 'no such file' : e.message}`);
    }
  }
  const m = merge(inputs);
  m.problems.unshift(...problems);
  const md = toMarkdown(m, { files });
  for (const p of m.problems) console.error(`bench:compare: ${p}`);
  if (outDir === undefined) {
    process.stdout.write(md);
  } else {
    mkdirSync(outDir, { recursive: true });
    writeFileSync(join(outDir, 'compare.md'), md);
    writeFileSync(join(outDir, 'compare.svg'), toSvg(m));
    console.log(
      `${m.rows.length} comparisons over ${m.columns.length} host column(s): ${join(outDir, 'compare.md')}, ${join(outDir, 'compare.svg')}`,
    );
  }
  return m.rows.length > 0 ? 0 : 1;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1])
  process.exitCode = main(process.argv.slice(2));
