// The vector files stored in test-data/vectors are the ones their README describes: every `.gz`
// matches SHA256SUMS, every file listed is present and nothing unlisted is there, each file
// decompresses to the bytes whose SHA-256 and size the README tables record (with the case count
// given there for test vectors), the set of test-vector files equals the set the known-answer suites
// read, and the set of CycloneDX files equals the set the posture tests read. A vector that is
// changed, truncated, recompressed differently, added or dropped fails here.

import { describe, it, expect } from 'vitest';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import * as api from '../src/crypto';
import { allKatSuites } from './cases/kat';
import { BUNDLED_VECTORS_DIR as DIR } from './support/vectors';
import { CYCLONEDX_FILES } from './support/cyclonedx';

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

interface Row {
  path: string;
  bytes: number;
  sha256: string;
  gzBytes: number;
  gzSha256: string;
  /** Test cases in the file; undefined for a schema or a document (the CycloneDX table). */
  cases?: number;
}

/** `<sha256>  <path>` lines, as sha256sum writes them. */
function parseSums(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const m = /^([0-9a-f]{64}) {2}(\S+)$/.exec(line);
    if (!m) throw new Error(`SHA256SUMS: malformed line ${JSON.stringify(line)}`);
    if (out.has(m[2])) throw new Error(`SHA256SUMS: ${m[2]} listed twice`);
    out.set(m[2], m[1]);
  }
  return out;
}

/** The rows of the README's "Files" tables: test vectors (with a case count) and CycloneDX files. */
function parseTable(text: string): Row[] {
  const row = /^\| `([^`]+)` \| (\d+) \| `([0-9a-f]{64})` \| (\d+) \| `([0-9a-f]{64})` \| ([\d,]+) \| [^|]+ \|$/;
  const schemaRow =
    /^\| `(cyclonedx\/[^`]+)` \| (\d+) \| `([0-9a-f]{64})` \| (\d+) \| `([0-9a-f]{64})` \| [^|]+ \| [^|]+ \|$/;
  const rows: Row[] = [];
  for (const line of text.split('\n')) {
    const m = row.exec(line) ?? schemaRow.exec(line);
    if (!m) continue;
    rows.push({
      path: m[1],
      bytes: Number(m[2]),
      sha256: m[3],
      gzBytes: Number(m[4]),
      gzSha256: m[5],
      ...(m[6] !== undefined ? { cases: Number(m[6].replaceAll(',', '')) } : {}),
    });
  }
  return rows;
}

function gzFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.gz'))
    .map((e) => relative(DIR, join(e.parentPath, e.name)).split('\\').join('/'))
    .sort();
}

/** Everything wrong with one stored file against its table row; empty when it matches. */
function problems(gz: Buffer, row: Row, listed: string | undefined): string[] {
  const out: string[] = [];
  if (listed !== sha256(gz)) out.push('SHA-256 of the .gz differs from SHA256SUMS');
  if (row.gzSha256 !== sha256(gz) || row.gzBytes !== gz.length) out.push('.gz differs from the README table');
  // gzip -n: no file name (FLG.FNAME, RFC 1952 §2.3.1) and MTIME 0, so recompressing is reproducible.
  if (gz[0] !== 0x1f || gz[1] !== 0x8b || (gz[3] & 0x08) !== 0 || gz.readUInt32LE(4) !== 0)
    out.push('not a gzip -n stream');
  let raw: Buffer;
  try {
    raw = gunzipSync(gz);
  } catch (e) {
    return [...out, `does not decompress: ${e}`];
  }
  if (raw.length !== row.bytes || sha256(raw) !== row.sha256) out.push('original differs from the README table');
  try {
    const json = JSON.parse(raw.toString('utf8'));
    if (row.cases === undefined) {
      // A CycloneDX schema (draft-07) or a CycloneDX document.
      if (json.$schema !== 'http://json-schema.org/draft-07/schema#' && json.bomFormat !== 'CycloneDX')
        out.push('neither a JSON schema nor a CycloneDX document');
    } else {
      const groups = json.testGroups as { tests: unknown[] }[];
      const cases = groups.reduce((n, g) => n + g.tests.length, 0);
      if (cases !== row.cases) out.push(`${cases} cases, the README table says ${row.cases}`);
    }
  } catch (e) {
    out.push(`not a vector file: ${e}`);
  }
  return out;
}

describe('test-data/vectors provenance', () => {
  const sums = parseSums(readFileSync(join(DIR, 'SHA256SUMS'), 'utf8'));
  const rows = parseTable(readFileSync(join(DIR, 'README.md'), 'utf8'));

  it('SHA256SUMS, the README table and the files on disk name the same files', () => {
    expect(rows.length).toBeGreaterThan(0);
    expect(new Set(rows.map((r) => r.path)).size).toBe(rows.length);
    expect([...sums.keys()].sort()).toEqual(gzFiles(DIR));
    expect(rows.map((r) => `${r.path}.gz`).sort()).toEqual(gzFiles(DIR));
  });

  it('every file matches SHA256SUMS and decompresses to the original the README records', () => {
    for (const r of rows) {
      const gz = readFileSync(join(DIR, `${r.path}.gz`));
      expect(problems(gz, r, sums.get(`${r.path}.gz`)), r.path).toEqual([]);
    }
  });

  it('a changed byte, a truncation, an edited case or a recompression is caught', () => {
    const r = rows.find((x) => x.path.endsWith('hmac_sha384_test.json'))!;
    const gz = readFileSync(join(DIR, `${r.path}.gz`));
    const listed = sums.get(`${r.path}.gz`);
    expect(problems(gz, r, listed)).toEqual([]);
    const flipped = Buffer.from(gz);
    flipped[gz.length >> 1] ^= 1;
    expect(problems(flipped, r, listed).length).toBeGreaterThan(0);
    expect(problems(gz.subarray(0, gz.length - 9), r, listed).length).toBeGreaterThan(0);
    const raw = gunzipSync(gz);
    const edited = gzipSync(Buffer.from(raw.toString('utf8').replace('"valid"', '"invalid"')), { level: 9 });
    expect(problems(edited, r, listed)).toContain('original differs from the README table');
    const recompressed = gzipSync(raw, { level: 1 });
    expect(problems(recompressed, r, listed)).toEqual([
      'SHA-256 of the .gz differs from SHA256SUMS',
      '.gz differs from the README table',
    ]);
  });

  it('the known-answer suites read exactly the files stored here', async () => {
    const read: string[] = [];
    const stub = async (p: string) => {
      read.push(p);
      return { testGroups: [] };
    };
    await allKatSuites(stub, api, false);
    const vectors = rows.filter((r) => r.cases !== undefined);
    expect([...new Set(read)].sort()).toEqual(vectors.map((r) => r.path).sort());
  });

  it('the posture tests read exactly the CycloneDX files stored here', () => {
    const cyclonedx = rows.filter((r) => r.cases === undefined).map((r) => r.path);
    expect(cyclonedx.length).toBeGreaterThan(0);
    expect([...CYCLONEDX_FILES].sort()).toEqual(cyclonedx.sort());
  });
});
