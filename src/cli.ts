// The pqdb command line (Node): `pqdb verify <location>` checks a file store read-only (see
// src/engine/verify.ts). Keys come from outside the store: --unlock FILE or PQDB_UNLOCK (the
// recipient secret key) and --signer-public FILE or PQDB_SIGNER_PUBLIC (the trusted ML-DSA-87 public
// key); a FILE holds the raw key bytes or their base64, the variables base64.
//
// Exit status: 0 every check holds; 1 a check failed; 2 usage error or the store cannot be opened;
// 3 nothing failed but checks were skipped for want of a key.

/// <reference types="node" />
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { openNodeFsPageStore } from './storage/node-fs';
import { verifyStore, formatVerifyReport } from './engine/verify';
import { PqdbError } from './errors';

const USAGE = `usage: pqdb verify <location> [--unlock FILE] [--signer-public FILE] [--json] [--quiet]

  verify   opens the store at <location> read-only and checks every page, record, Merkle leaf,
           checkpoint signature and proof; prints a summary (--json: the full report)

keys (base64 in the environment, raw or base64 in files):
  --unlock FILE          or PQDB_UNLOCK          recipient secret key: decrypt and authenticate
  --signer-public FILE   or PQDB_SIGNER_PUBLIC   trusted ML-DSA-87 public key of the checkpoints

exit status: 0 all checks hold, 1 a check failed, 2 usage error or unreadable store,
             3 no failure but checks skipped for want of a key`;

const LENGTHS = { unlock: [32], 'signer-public': [2592] };

function keyFrom(name: 'unlock' | 'signer-public', file: string | undefined, env: string | undefined): Uint8Array | undefined {
  let text: string | undefined = env;
  if (file !== undefined) {
    const raw = readFileSync(file);
    if (LENGTHS[name].includes(raw.length)) return new Uint8Array(raw);
    text = raw.toString('latin1');
  }
  if (text === undefined) return undefined;
  const clean = text.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(clean)) throw new UsageError(`--${name}: expected the key's raw bytes or base64`);
  const key = new Uint8Array(Buffer.from(clean, 'base64'));
  if (!LENGTHS[name].includes(key.length)) throw new UsageError(`--${name}: expected a key of ${LENGTHS[name].join(' or ')} bytes, got ${key.length}`);
  return key;
}

class UsageError extends Error {}

/** A one-line progress bar on stderr (only on a terminal). */
function progress(enabled: boolean): (p: { phase: string; done: number; total: number }) => void {
  if (!enabled) return () => undefined;
  let last = 0;
  return ({ phase, done, total }) => {
    const now = Date.now();
    if (done < total && now - last < 100) return;
    last = now;
    const width = 30;
    const filled = total === 0 ? width : Math.round((done / total) * width);
    process.stderr.write(`\r  ${phase.padEnd(7)} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done.toLocaleString('en-US')}/${total.toLocaleString('en-US')}${done >= total ? '\n' : ''}`);
  };
}

/** Runs the command line; returns the exit status. */
export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        unlock: { type: 'string' },
        'signer-public': { type: 'string' },
        json: { type: 'boolean', default: false },
        quiet: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (e) {
    process.stderr.write(`pqdb: ${(e as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0) {
    (values.help ? process.stdout : process.stderr).write(`${USAGE}\n`);
    return values.help ? 0 : 2;
  }
  const [command, location, ...rest] = positionals;
  if (command !== 'verify') {
    process.stderr.write(`pqdb: unknown command "${command}"\n${USAGE}\n`);
    return 2;
  }
  if (location === undefined || rest.length > 0) {
    process.stderr.write(`pqdb verify: expected exactly one <location>\n${USAGE}\n`);
    return 2;
  }
  let unlock: Uint8Array | undefined;
  let signerPublicKey: Uint8Array | undefined;
  try {
    unlock = keyFrom('unlock', values.unlock, process.env.PQDB_UNLOCK || undefined);
    signerPublicKey = keyFrom('signer-public', values['signer-public'], process.env.PQDB_SIGNER_PUBLIC || undefined);
  } catch (e) {
    process.stderr.write(`pqdb verify: ${(e as Error).message}\n`);
    return 2;
  }
  let pages;
  try {
    pages = await openNodeFsPageStore(location, { readOnly: true, create: false });
  } catch (e) {
    const what = e instanceof PqdbError ? `[${e.code}] ${e.message}` : (e as Error).message;
    if (values.json) process.stdout.write(`${JSON.stringify({ ok: false, complete: false, location, problems: [{ where: 'storage', code: e instanceof PqdbError ? e.code : 'IO_ERROR', message: (e as Error).message }] }, null, 2)}\n`);
    else process.stderr.write(`pqdb verify: cannot open ${location}: ${what}\n`);
    return e instanceof PqdbError && e.code === 'CORRUPTION' ? 1 : 2;
  }
  try {
    const report = await verifyStore(pages, { unlock, signerPublicKey, onProgress: progress(!values.json && !values.quiet && process.stderr.isTTY === true) });
    if (values.json) process.stdout.write(`${JSON.stringify({ location, ...report }, null, 2)}\n`);
    else if (!values.quiet || !report.ok) process.stdout.write(`${formatVerifyReport(report, location)}\n`);
    return !report.ok ? 1 : report.complete ? 0 : 3;
  } finally {
    unlock?.fill(0);
    await pages.close();
  }
}
