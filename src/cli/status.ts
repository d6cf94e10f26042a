// `pqdb status <location>`: the store's key generations and their suites, the suite registry and its
// states, the collections, the checkpoints and the migration, read from the manifest of a file store
// opened read-only. Without the recipient secret key only the manifest's readable header is shown
// (store id, commit counter, key generations; unauthenticated, and the output says so): the rest is
// sealed. With it everything comes from the authenticated manifest and a read-only open. Node only.
//
// Exit status: 0 printed; 2 a bad key or a store that cannot be opened or read.

/// <reference types="node" />
import { io } from './_io';
import { openNodeFsPageStore } from '../storage/node-fs';
import { Store } from '../engine/store';
import type { MigrationProgress, MigrationStatus } from '../engine/migration/run';
import { readManifest, unlockManifest, type Manifest, type MigrationRecord } from '../engine/manifest';
import { suite as suiteOf } from '../crypto/suites';
import { PqdbError } from '../errors';
import type { Keys } from './_keys';
import { cannotOpen, formatAccounting, UsageError } from './_report';
import { notePin, pinned } from './_store';

/**
 * Runs `pqdb status`; returns the exit status. The caller owns `keys` (and wipes them).
 * @throws whatever the page store throws on closing; index.ts turns it into one line and status 2.
 * @example
 * const code = await status('/var/lib/app/store', { json: true }, keys);
 */
export async function status(location: string, options: { json?: boolean }, keys: Keys): Promise<number> {
  const { unlock } = keys;
  if (keys.pin !== undefined && unlock === undefined)
    throw new UsageError(
      '--store-id, --min-commit and --pin-file need --unlock (the header alone is not authenticated)',
    );
  let pages;
  try {
    pages = await openNodeFsPageStore(location, { readOnly: true, create: false });
  } catch (e) {
    return cannotOpen('status', location, e);
  }
  try {
    const raw = await pages.readManifest();
    if (raw === undefined) throw new PqdbError('NOT_FOUND', 'no store here');
    const { header } = readManifest(raw);
    let m: Manifest | undefined;
    let counts: Record<string, number> | undefined;
    let migration: MigrationStatus | undefined;
    if (unlock !== undefined) {
      const opened = unlockManifest(raw, unlock, pinned(keys));
      opened.keys.close();
      m = opened.manifest;
      const store = await Store.open(pages, { unlock, readOnly: true, storeId: header.storeId, ...pinned(keys) });
      try {
        counts = store.info().collections;
        migration = store.migration();
        notePin(keys, store);
      } finally {
        await store.close();
      }
    }
    // Without the key only the header is readable: the store id, the commit counter and which key
    // generations have envelopes; the rest of the manifest is sealed.
    const out = {
      location,
      storeId: header.storeId,
      commit: header.commit,
      authenticated: m !== undefined,
      generations:
        m !== undefined
          ? m.keyring
              .filter((k) => k.generation > 0)
              .map((k) => ({ generation: k.generation, suite: suiteOf(k.suite).name }))
          : header.envelopes.filter(([g]) => g > 0).map(([generation]) => ({ generation, suite: undefined })),
      retired: m?.retired ?? [],
      registry: (m?.registry ?? []).map((r) => ({ suite: suiteOf(r.suite).name, state: r.state, since: r.since })),
      defaultSuite: m !== undefined ? suiteOf(m.defaultSuite).name : undefined,
      collections: Object.fromEntries(
        Object.entries(m?.collections ?? {}).map(([k, v]) => [
          k,
          { suite: suiteOf(v.suite).name, records: counts?.[k] ?? (counts ? 0 : undefined) },
        ]),
      ),
      checkpoints: m?.checkpointPages?.length,
      migration: migration ?? m?.migration ?? m?.migrations?.at(-1),
    };
    if (options.json) {
      io.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
      return 0;
    }
    const lines = [
      `pqdb status ${location}${out.authenticated ? '' : ' (no --unlock: the manifest body is sealed)'}`,
      `  store        ${out.storeId}`,
      `  commit       ${out.commit}`,
    ];
    lines.push(
      `  generations  ${out.generations.map((g) => (g.suite !== undefined ? `${g.generation} (${g.suite})` : `${g.generation}`)).join(', ')}${out.retired.length > 0 ? `; retired ${out.retired.join(', ')}` : ''}`,
    );
    if (out.authenticated) lines.push(`  suites       ${out.registry.map((r) => `${r.suite} ${r.state}`).join(', ')}`);
    for (const [k, v] of Object.entries(out.collections))
      lines.push(
        `  collection   ${k}: ${v.suite}${v.records !== undefined ? `, ${v.records.toLocaleString('en-US')} records` : ''}`,
      );
    if (out.checkpoints !== undefined) lines.push(`  checkpoints  ${out.checkpoints}`);
    const mig: MigrationStatus | MigrationRecord | undefined = out.migration;
    if (mig !== undefined) {
      const to = typeof mig.to === 'number' ? suiteOf(mig.to).name : mig.to;
      const counted: MigrationProgress = 'counts' in mig ? { phase: mig.phase, ...mig.counts } : mig;
      lines.push(`  migration    ${mig.collections?.join(', ')} → ${to}: ${mig.phase}; ${formatAccounting(counted)}`);
    }
    io.stdout.write(`${lines.join('\n')}\n`);
    return 0;
  } catch (e) {
    return cannotOpen('status', location, e);
  } finally {
    await pages.close();
  }
}
