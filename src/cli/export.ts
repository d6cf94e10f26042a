// `pqdb export`: a collection's records as JSONL ({ "id": …, "value": {…} } a line, what `pqdb
// import --format jsonl` reads), or with --sealed one self-verifying sealed export per record
// (record ‖ inclusion proof ‖ ML-DSA-87-signed checkpoint, DESIGN §7) written to a directory, and
// `pqdb verify --sealed`, which checks such files with the signer's public key alone. A sealed
// export stays encrypted: what it proves is that the store held that record under that checkpoint.
// File names are the record id, percent-encoded, with `.sealed`; the verifier also checks that a
// file holds the record its name says. Node only.

/// <reference types="node" />
import { io } from './_io';
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { writeNew } from './_files';
import { basename, join } from 'node:path';
import { verifySealed } from '../crypto/proofs';
import { PqdbError } from '../errors';
import type { Keys } from './_keys';
import { countProgress } from './_progress';
import { UsageError } from './_report';
import { collectionOf, openCliStore, requireSigner, requireUnlock } from './_store';
import { PIN_HELP, PIN_OPTIONS } from './_pin';
import { valueToJson } from './_values';
import { KEY_OPTIONS, str, type Verb } from './_verb';

/** The suffix of a sealed export's file. */
export const SEALED_SUFFIX = '.sealed';

/** The file name of record `id`'s sealed export. */
export function sealedFileName(id: string): string {
  return `${encodeURIComponent(id)}${SEALED_SUFFIX}`;
}

export const exportVerb: Verb = {
  name: 'export',
  synopsis:
    '<location> <collection> --unlock FILE [--format jsonl] [--out FILE] [--sealed --out DIR --signer FILE] [--json]',
  summary: 'writes a collection as JSONL, or as verifiable sealed exports (--sealed)',
  help: `  Writes every record of the collection in id order, one JSON line { "id", "value" } each, to
  stdout or the new file --out FILE (pqdb import --format jsonl reads it back).
  --sealed         instead, one sealed export per record into the directory --out DIR, named
                   <id>${SEALED_SUFFIX} (id percent-encoded): the sealed record, its Merkle inclusion proof
                   and the ML-DSA-87-signed checkpoint covering it (signed now if none does, so
                   --signer is needed); pqdb verify --sealed DIR checks them with the public key
  --prefix P       only ids starting with P
  --json           with --out FILE: print { collection, out, records }; with --sealed:
                   { collection, dir, files, checkpoint }
  --unlock FILE    or PQDB_UNLOCK: the recipient secret key
  --signer FILE    or PQDB_SIGNER: the ML-DSA-87 secret key (public half from FILE.pub)
${PIN_HELP}`,
  positionals: { min: 2, max: 2 },
  options: {
    format: { type: 'string' },
    out: { type: 'string' },
    sealed: { type: 'boolean' },
    prefix: { type: 'string' },
    ...KEY_OPTIONS,
    ...PIN_OPTIONS,
  },
  async run({ positionals: [location, name], values, keys, progress }) {
    const format = str(values, 'format') ?? 'jsonl';
    if (format !== 'jsonl') throw new UsageError(`--format expected jsonl, got "${format}"`);
    const out = str(values, 'out');
    const sealed = values.sealed === true;
    const prefix = str(values, 'prefix') ?? '';
    requireUnlock(keys);
    if (sealed) {
      if (out === undefined) throw new UsageError('--sealed needs --out DIR');
      requireSigner(keys);
    }
    const opened = await openCliStore(location, keys, { write: sealed });
    try {
      const c = collectionOf(opened, name, undefined);
      if (!sealed) {
        const lines: string[] = [];
        for await (const r of c.scan({ prefix }))
          lines.push(`${JSON.stringify({ id: r.id, value: valueToJson(r.value) })}\n`);
        if (out === undefined) {
          io.stdout.write(lines.join(''));
          return 0;
        }
        writeNew(out, lines.join(''));
        const report = { collection: name, out, records: lines.length };
        io.stdout.write(
          values.json === true
            ? `${JSON.stringify(report, null, 2)}\n`
            : `pqdb export: ${lines.length} record(s) of ${name} to ${out}\n`,
        );
        return 0;
      }
      mkdirSync(out!, { recursive: true });
      const ids: string[] = [];
      for await (const r of c.scan({ prefix })) ids.push(r.id);
      const step = countProgress(progress, 'export', 'records');
      let n = 0;
      for (const id of ids) {
        writeNew(join(out!, sealedFileName(id)), await c.exportSealed(id));
        step(++n, ids.length);
      }
      const report = { collection: name, dir: out, files: n, checkpoint: opened.store.info().checkpoint };
      io.stdout.write(
        values.json === true
          ? `${JSON.stringify(report, null, 2)}\n`
          : `pqdb export: ${n} sealed export(s) of ${name} in ${out}${report.checkpoint ? ` (checkpoint ${report.checkpoint.size}, ${report.checkpoint.hash})` : ''}\n`,
      );
      return 0;
    } finally {
      await opened.close();
    }
  },
};

/**
 * `pqdb verify --sealed <file|dir>`: checks each sealed export (a file, or every `.sealed` file of a
 * directory) against the trusted signer public key: the checkpoint's signature, the record's leaf
 * and its inclusion proof, and that the file name names the record inside. Returns the exit status:
 * 0 all valid, 1 one is not.
 * @throws UsageError without the signer public key or with nothing to check; PqdbError IO_ERROR for
 * an unreadable file.
 * @example
 * const code = await verifySealedFiles('./exports', { json: true }, keys);
 */
export async function verifySealedFiles(
  location: string,
  values: Record<string, unknown>,
  keys: Keys,
): Promise<number> {
  if (keys.signerPublicKey === undefined)
    throw new UsageError('--sealed needs the signer public key (--signer-public FILE or PQDB_SIGNER_PUBLIC)');
  let files: string[];
  try {
    files = statSync(location).isDirectory()
      ? readdirSync(location)
          .filter((f) => f.endsWith(SEALED_SUFFIX))
          .sort()
          .map((f) => join(location, f))
      : [location];
  } catch (e) {
    throw new PqdbError('IO_ERROR', `cannot read ${location}: ${(e as Error).message}`, { cause: e });
  }
  if (files.length === 0) throw new UsageError(`no ${SEALED_SUFFIX} files in ${location}`);
  const results = files.map((file) => {
    let bytes: Uint8Array;
    try {
      bytes = readFileSync(file);
    } catch (e) {
      throw new PqdbError('IO_ERROR', `cannot read ${file}: ${(e as Error).message}`, { cause: e });
    }
    const r = verifySealed(bytes, keys.signerPublicKey!);
    const name = basename(file);
    if (r.valid && name.endsWith(SEALED_SUFFIX) && name !== sealedFileName(r.id!))
      return { file, valid: false, reason: `the file holds record "${r.id}", not the one its name says` };
    return r.valid
      ? {
          file,
          valid: true,
          collection: r.collection,
          id: r.id,
          sequence: r.sequence,
          checkpoint: { generation: r.checkpoint!.generation, size: r.checkpoint!.size },
        }
      : { file, valid: false, reason: r.reason };
  });
  const invalid = results.filter((r) => !r.valid);
  if (values.json === true)
    io.stdout.write(
      `${JSON.stringify({ location, ok: invalid.length === 0, count: results.length, valid: results.length - invalid.length, results }, null, 2)}\n`,
    );
  else {
    for (const r of invalid) io.stdout.write(`  invalid: ${r.file}: ${r.reason}\n`);
    io.stdout.write(
      `pqdb verify --sealed ${location}: ${results.length - invalid.length} of ${results.length} sealed export(s) valid${invalid.length === 0 ? '' : `, ${invalid.length} invalid`}\n`,
    );
  }
  return invalid.length === 0 ? 0 : 1;
}
