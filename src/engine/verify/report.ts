// What verifyStore reports, and the summary `pqdb verify` prints of it.

export interface VerifyProblem {
  /** Where: "manifest", "page 12", "checkpoint 3", "generation 1", "record words/cat". */
  where: string;
  /** A PqdbError code (CORRUPTION, AUTH_FAILED, …) or "MISMATCH" for a failed cross-check. */
  code: string;
  message: string;
}

export interface VerifyReport {
  /** True when no check failed. */
  ok: boolean;
  /** True when ok and no check was skipped for want of a key. */
  complete: boolean;
  storeId?: string;
  storage: string;
  /** What was checked, with counts. */
  counts: {
    pages: number;
    commitPages: number;
    logPages: number;
    indexPages: number;
    /** Pages of the persisted key directory, each authenticated and decoded (with the key). */
    directoryPages: number;
    /** Record versions decrypted (every put ever stored, superseded ones included). */
    recordsDecrypted: number;
    /** Live records per collection (known with the secret key). */
    collections: Record<string, number>;
    /** Merkle leaves per generation (recomputed with the key, else as persisted). */
    leaves: Record<string, number>;
    checkpoints: number;
    signaturesVerified: number;
    consistencyProofs: number;
    /**
     * Live records proven included in their generation's last signed root: by the root of the
     * log recomputed from the records, with an explicit inclusion proof checked for a sample.
     */
    inclusionProofs: number;
    /** Live records written after the last checkpoint of their generation (not yet signed). */
    uncheckpointed: number;
  };
  /** Checks not run, and why. */
  skipped: string[];
  /** Failed checks. */
  problems: VerifyProblem[];
  /** What a writer would repair on opening (an interrupted commit), reported by the page store. */
  notes: string[];
  ms: number;
}

/** A short readable summary of a report (what `pqdb verify` prints). */
export function formatVerifyReport(r: VerifyReport, location = ''): string {
  const n = (x: number) => x.toLocaleString('en-US');
  const c = r.counts;
  const lines = [`pqdb verify ${location}`.trimEnd(), `  store          ${r.storeId ?? '(unknown)'} (${r.storage})`];
  lines.push(
    `  pages          ${n(c.pages)} read: ${n(c.commitPages)} commit, ${n(c.logPages)} log, ${n(c.checkpoints)} checkpoint, ${n(c.indexPages)} lexical index, ${n(c.directoryPages)} directory`,
  );
  if (c.recordsDecrypted > 0 || Object.keys(c.collections).length > 0) {
    const cols = Object.entries(c.collections)
      .map(([k, v]) => `${k} ${n(v)}`)
      .join(', ');
    lines.push(`  records        ${n(c.recordsDecrypted)} versions decrypted; live: ${cols || 'none'}`);
  }
  const leaves = Object.entries(c.leaves)
    .map(([g, v]) => `generation ${g}: ${n(v)}`)
    .join(', ');
  lines.push(`  Merkle log     ${leaves || 'empty'}`);
  lines.push(
    `  checkpoints    ${n(c.checkpoints)}, ${n(c.signaturesVerified)} signatures verified, ${n(c.consistencyProofs)} consistency proofs`,
  );
  lines.push(
    `  inclusion      ${n(c.inclusionProofs)} live records proven${c.uncheckpointed > 0 ? `, ${n(c.uncheckpointed)} written after the last checkpoint` : ''}`,
  );
  for (const s of r.skipped) lines.push(`  skipped        ${s}`);
  for (const s of r.notes) lines.push(`  note           ${s}`);
  for (const p of r.problems.slice(0, 50)) lines.push(`  PROBLEM        ${p.where}: [${p.code}] ${p.message}`);
  if (r.problems.length > 50) lines.push(`  …and ${n(r.problems.length - 50)} more problems`);
  const verdict = !r.ok
    ? `FAILED: ${n(r.problems.length)} problem(s)`
    : r.complete
      ? 'OK: every check holds'
      : 'OK as far as checked (checks skipped, see above)';
  lines.push(`${verdict} (${(r.ms / 1000).toFixed(2)} s)`);
  return lines.join('\n');
}
