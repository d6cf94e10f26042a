// The pqdb command line (Node):
//   pqdb verify <location>            checks a file store read-only (src/engine/verify.ts)
//   pqdb migrate <location> --to S    moves every record to suite S on the live store (DESIGN §8)
//   pqdb status <location>            store, registry, checkpoints and migration state
// Keys come from outside the store: --unlock FILE or PQDB_UNLOCK (the recipient secret key),
// --signer-public FILE or PQDB_SIGNER_PUBLIC (the trusted ML-DSA-87 public key), --signer FILE or
// PQDB_SIGNER (the ML-DSA-87 secret key, to checkpoint a migration); a FILE holds the raw key bytes
// or their base64, the variables base64.
//
// Exit status: 0 success (verify: every check holds); 1 a check or the migration failed; 2 usage
// error or the store cannot be opened; 3 (verify) nothing failed but checks were skipped for want of
// a key; 130 (migrate) paused by Ctrl-C, resumable.

/// <reference types="node" />
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { openNodeFsPageStore } from './storage/node-fs';
import { verifyStore, formatVerifyReport } from './engine/verify';
import { Store, type MigrationProgress, type MigrationStatus } from './engine/store';
import { readManifestJson } from './engine/manifest';
import { suite as suiteOf, type SuiteName } from './crypto/suites';
import { PqdbError } from './errors';

const USAGE = `usage: pqdb verify <location> [--unlock FILE] [--signer-public FILE] [--json] [--quiet]
       pqdb migrate <location> --to SUITE [--collection NAME] [--chunk N] [--retire] [--unlock FILE] [--signer FILE --signer-public FILE] [--json]
       pqdb status <location> [--unlock FILE] [--json]

  verify   opens the store at <location> read-only and checks every page, record, Merkle leaf,
           checkpoint signature and proof; prints a summary (--json: the full report)
  migrate  moves every record (of NAME, or of every collection) to SUITE (gcmsiv-hkdf256,
           gcmsiv-hkdf384, cnsa2-gcm-hkdf384-commit) while the store stays usable; resumes an
           unfinished migration; Ctrl-C pauses it; prints the accounting; --retire then retires
           the older key generations (their pages deleted, their roots destroyed)
  status   the store's generations, suites and their states, collections, checkpoints and migration

keys (base64 in the environment, raw or base64 in files):
  --unlock FILE          or PQDB_UNLOCK          recipient secret key: decrypt and authenticate
  --signer-public FILE   or PQDB_SIGNER_PUBLIC   trusted ML-DSA-87 public key of the checkpoints
  --signer FILE          or PQDB_SIGNER          ML-DSA-87 secret key: migrate signs its checkpoint

exit status: 0 all checks hold, 1 a check failed, 2 usage error or unreadable store,
             3 no failure but checks skipped for want of a key`;

const LENGTHS = { unlock: [32], 'signer-public': [2592], signer: [4896] };

function keyFrom(
  name: keyof typeof LENGTHS,
  file: string | undefined,
  env: string | undefined,
): Uint8Array | undefined {
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
  if (!LENGTHS[name].includes(key.length))
    throw new UsageError(`--${name}: expected a key of ${LENGTHS[name].join(' or ')} bytes, got ${key.length}`);
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
    process.stderr.write(
      `\r  ${phase.padEnd(7)} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done.toLocaleString('en-US')}/${total.toLocaleString('en-US')}${done >= total ? '\n' : ''}`,
    );
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
        signer: { type: 'string' },
        to: { type: 'string' },
        collection: { type: 'string' },
        chunk: { type: 'string' },
        retire: { type: 'boolean', default: false },
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
  if (command !== 'verify' && command !== 'migrate' && command !== 'status') {
    process.stderr.write(`pqdb: unknown command "${command}"\n${USAGE}\n`);
    return 2;
  }
  if (location === undefined || rest.length > 0) {
    process.stderr.write(`pqdb ${command}: expected exactly one <location>\n${USAGE}\n`);
    return 2;
  }
  let unlock: Uint8Array | undefined;
  let signerPublicKey: Uint8Array | undefined;
  let signer: Uint8Array | undefined;
  try {
    unlock = keyFrom('unlock', values.unlock, process.env.PQDB_UNLOCK || undefined);
    signerPublicKey = keyFrom('signer-public', values['signer-public'], process.env.PQDB_SIGNER_PUBLIC || undefined);
    signer = keyFrom('signer', values.signer, process.env.PQDB_SIGNER || undefined);
  } catch (e) {
    process.stderr.write(`pqdb ${command}: ${(e as Error).message}\n`);
    return 2;
  }
  if (command === 'migrate') return migrate(location, values, unlock, signer, signerPublicKey);
  if (command === 'status') return status(location, values.json === true, unlock);
  let pages;
  try {
    pages = await openNodeFsPageStore(location, { readOnly: true, create: false });
  } catch (e) {
    const what = e instanceof PqdbError ? `[${e.code}] ${e.message}` : (e as Error).message;
    if (values.json)
      process.stdout.write(
        `${JSON.stringify({ ok: false, complete: false, location, problems: [{ where: 'storage', code: e instanceof PqdbError ? e.code : 'IO_ERROR', message: (e as Error).message }] }, null, 2)}\n`,
      );
    else process.stderr.write(`pqdb verify: cannot open ${location}: ${what}\n`);
    return e instanceof PqdbError && e.code === 'CORRUPTION' ? 1 : 2;
  }
  try {
    const report = await verifyStore(pages, {
      unlock,
      signerPublicKey,
      onProgress: progress(!values.json && !values.quiet && process.stderr.isTTY === true),
    });
    if (values.json) process.stdout.write(`${JSON.stringify({ location, ...report }, null, 2)}\n`);
    else if (!values.quiet || !report.ok) process.stdout.write(`${formatVerifyReport(report, location)}\n`);
    return !report.ok ? 1 : report.complete ? 0 : 3;
  } finally {
    unlock?.fill(0);
    await pages.close();
  }
}

function cannotOpen(command: string, location: string, e: unknown): number {
  const what = e instanceof PqdbError ? `[${e.code}] ${e.message}` : (e as Error).message;
  process.stderr.write(`pqdb ${command}: cannot open ${location}: ${what}\n`);
  return 2;
}

function formatAccounting(r: MigrationStatus | MigrationProgress): string {
  const n = (x: number) => x.toLocaleString('en-US');
  return `copied ${n(r.copied)}, superseded ${n(r.superseded)}, deleted ${n(r.deleted)}, withheld ${n(r.withheld)}, failed ${n(r.failed)}, inserted ${n(r.inserted)}; total ${n(r.total)}`;
}

async function migrate(
  location: string,
  values: { to?: string; collection?: string; chunk?: string; retire?: boolean; json?: boolean; quiet?: boolean },
  unlock: Uint8Array | undefined,
  signer: Uint8Array | undefined,
  signerPublicKey: Uint8Array | undefined,
): Promise<number> {
  if (values.to === undefined) {
    process.stderr.write(`pqdb migrate: --to SUITE is required\n${USAGE}\n`);
    return 2;
  }
  if (unlock === undefined) {
    process.stderr.write('pqdb migrate: the recipient secret key is required (--unlock FILE or PQDB_UNLOCK)\n');
    return 2;
  }
  if ((signer === undefined) !== (signerPublicKey === undefined)) {
    process.stderr.write('pqdb migrate: --signer and --signer-public go together\n');
    return 2;
  }
  let to: SuiteName;
  try {
    to = suiteOf(values.to as SuiteName).name;
  } catch (e) {
    process.stderr.write(`pqdb migrate: ${(e as Error).message}\n`);
    return 2;
  }
  const chunk = values.chunk === undefined ? undefined : Number(values.chunk);
  let store: Store;
  try {
    const pages = await openNodeFsPageStore(location, { create: false });
    store = await Store.open(pages, { unlock, signer, signerPublicKey, autoCheckpoint: false }).catch(async (e) => {
      await pages.close();
      throw e;
    });
  } catch (e) {
    return cannotOpen('migrate', location, e);
  }
  const tty = !values.json && process.stderr.isTTY === true;
  const started = Date.now();
  let done0: number | undefined;
  let last = 0;
  const ac = new AbortController();
  const onSigint = () => ac.abort();
  process.once('SIGINT', onSigint);
  const onProgress = (p: MigrationProgress) => {
    const accounted = p.copied + p.superseded + p.deleted + p.withheld + p.failed;
    done0 ??= accounted;
    const now = Date.now();
    if (!tty || (now - last < 100 && p.phase === 'copying')) return;
    last = now;
    const todo = Math.max(0, p.total - p.inserted);
    const rate = ((accounted - done0) / Math.max(1, now - started)) * 1000;
    const eta = rate > 0 ? Math.ceil((todo - accounted) / rate) : 0;
    const w = 30;
    const k = todo === 0 ? w : Math.min(w, Math.round((accounted / todo) * w));
    process.stderr.write(
      `\r  ${p.phase.padEnd(10)} [${'#'.repeat(k)}${'.'.repeat(w - k)}] ${accounted.toLocaleString('en-US')}/${todo.toLocaleString('en-US')}  ${Math.round(rate).toLocaleString('en-US')} records/s  ETA ${eta} s   `,
    );
  };
  try {
    const result = await store.migrate({
      to,
      collection: values.collection,
      chunkRecords: chunk,
      signal: ac.signal,
      onProgress,
    });
    if (tty) process.stderr.write('\n');
    // Retiring comes after the migration's own report is settled; a refusal (a record withheld or
    // left in an older generation) is reported on its own and leaves the migration as it is.
    let retired: number[] | undefined;
    let refused: string | undefined;
    if (values.retire === true) {
      try {
        retired = await store.retireGenerations();
      } catch (e) {
        if (!(e instanceof PqdbError && e.code === 'GENERATION_IN_USE')) throw e;
        refused = e.message;
      }
    }
    if (values.json)
      process.stdout.write(
        `${JSON.stringify({ location, ...result, ...(retired && { retired }), ...(refused !== undefined && { retireRefused: refused }) }, null, 2)}\n`,
      );
    else {
      process.stdout.write(
        `pqdb migrate ${location}: ${result.collections.join(', ') || '(no collections)'} → ${result.to} (generation ${result.generation})\n`,
      );
      process.stdout.write(`  ${formatAccounting(result)}\n`);
      const phases = Object.entries(result.phaseMs)
        .map(([k, v]) => `${k} ${((v ?? 0) / 1000).toFixed(2)} s`)
        .join(', ');
      process.stdout.write(`  work ${(result.workMs / 1000).toFixed(2)} s (${phases})\n`);
      for (const f of result.failures) process.stdout.write(`  failed: ${f}\n`);
      if (retired !== undefined) process.stdout.write(`  retired generation(s): ${retired.join(', ') || 'none'}\n`);
    }
    if (refused !== undefined)
      process.stderr.write(`pqdb migrate: the older generations were not retired: ${refused}\n`);
    return result.failed > 0 || refused !== undefined ? 1 : 0;
  } catch (e) {
    if (tty) process.stderr.write('\n');
    if (e instanceof PqdbError && e.code === 'ABORTED') {
      const m = store.migration();
      process.stderr.write(
        `pqdb migrate: paused in phase ${m?.phase}; ${m ? formatAccounting(m) : ''}; run it again to resume\n`,
      );
      return 130;
    }
    process.stderr.write(`pqdb migrate: ${e instanceof PqdbError ? `[${e.code}] ` : ''}${(e as Error).message}\n`);
    return e instanceof RangeError || e instanceof TypeError ? 2 : 1;
  } finally {
    process.off('SIGINT', onSigint);
    signer?.fill(0);
    unlock.fill(0);
    await store.close();
  }
}

interface ManifestSummary {
  storeId: string;
  keyring: { generation: number; suite: number }[];
  registry: { suite: number; state: string; since: string }[];
  collections: Record<string, { suite: number }>;
  defaultSuite: number;
  checkpointPages?: number[];
  migration?: unknown;
  migrations?: unknown[];
  retired?: number[];
}

async function status(location: string, json: boolean, unlock: Uint8Array | undefined): Promise<number> {
  let pages;
  try {
    pages = await openNodeFsPageStore(location, { readOnly: true, create: false });
  } catch (e) {
    return cannotOpen('status', location, e);
  }
  try {
    const raw = await pages.readManifest();
    if (raw === undefined) throw new PqdbError('NOT_OPEN', 'no store here');
    const m = readManifestJson(raw) as ManifestSummary;
    let counts: Record<string, number> | undefined;
    let migration: MigrationStatus | undefined;
    let authenticated = false;
    if (unlock !== undefined) {
      const store = await Store.open(pages, { unlock, readOnly: true });
      counts = store.info().collections;
      migration = store.migration();
      authenticated = true;
      await store.close();
    }
    const out = {
      location,
      storeId: m.storeId,
      authenticated,
      generations: m.keyring.map((k) => ({ generation: k.generation, suite: suiteOf(k.suite).name })),
      retired: m.retired ?? [],
      registry: m.registry.map((r) => ({ suite: suiteOf(r.suite).name, state: r.state, since: r.since })),
      defaultSuite: suiteOf(m.defaultSuite).name,
      collections: Object.fromEntries(
        Object.entries(m.collections).map(([k, v]) => [
          k,
          { suite: suiteOf(v.suite).name, records: counts?.[k] ?? (counts ? 0 : undefined) },
        ]),
      ),
      checkpoints: m.checkpointPages?.length ?? 0,
      migration: migration ?? m.migration ?? m.migrations?.at(-1),
    };
    if (json) {
      process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
      return 0;
    }
    const lines = [
      `pqdb status ${location}${authenticated ? '' : ' (manifest not authenticated: no --unlock)'}`,
      `  store        ${out.storeId}`,
    ];
    lines.push(
      `  generations  ${out.generations.map((g) => `${g.generation} (${g.suite})`).join(', ')}${out.retired.length > 0 ? `; retired ${out.retired.join(', ')}` : ''}`,
    );
    lines.push(`  suites       ${out.registry.map((r) => `${r.suite} ${r.state}`).join(', ')}`);
    for (const [k, v] of Object.entries(out.collections))
      lines.push(
        `  collection   ${k}: ${v.suite}${v.records !== undefined ? `, ${v.records.toLocaleString('en-US')} records` : ''}`,
      );
    lines.push(`  checkpoints  ${out.checkpoints}`);
    const mig = out.migration as
      (MigrationProgress & { to?: string | number; collections?: string[]; workMs?: number }) | undefined;
    if (mig !== undefined) {
      const to = typeof mig.to === 'number' ? suiteOf(mig.to).name : mig.to;
      const counted = 'copied' in mig ? mig : (mig as unknown as { counts: MigrationProgress }).counts;
      lines.push(`  migration    ${mig.collections?.join(', ')} → ${to}: ${mig.phase}; ${formatAccounting(counted)}`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
    return 0;
  } catch (e) {
    return cannotOpen('status', location, e);
  } finally {
    unlock?.fill(0);
    await pages.close();
  }
}
