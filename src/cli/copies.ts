// The managed-copy verbs (DESIGN §9, docs/authority.md):
//   backup <location> <destination>          store.backup: a consistent copy in a new directory
//   copies list <location>                   the inventory, store.copies() (a group, like policy)
//   copies retire <location> <id>            store.retireCopy: deletes the copy, records it retired
//   restore <copy> <new-location> [--live L] restoreStore: a new store of a copy's records
// A backup holds the store's sealed pages as they are and a manifest that marks it a copy: it opens
// only read-only (get, scan, verify read it as they read a store), and `restore` makes a live store
// of it, re-sealed under new keys. Caveats: the inventory names a backup's directory as an absolute
// path (resolved here), so `copies retire` finds it from any working directory; a backup or a copy
// moved since is recorded retired but not deleted (retire says so). `restore --live` opens the live
// store for writing (its writer lock: nothing else may have it open) so that its policy, deletions,
// recipients and registry states apply and its inventory records the restore. The copy is verified
// against --trusted-signer, else the --signer's public half, else --signer-public. Node only.
//
// Exit status: 0 done; 2 a bad argument, a missing key, or any refusal (one line `pqdb: [CODE] …`).

/// <reference types="node" />
import { io } from './_io';
import { resolve } from 'node:path';
import { restoreStore } from '../node';
import type { ManagedCopy } from '../engine/copies';
import { PqdbError } from '../errors';
import { authorityKeys, keyFrom, recipientKeys } from './_keys';
import { countProgress } from './_progress';
import { UsageError } from './_report';
import { openCliStore, requireSigner, requireUnlock, type OpenedStore } from './_store';
import { PIN_HELP, PIN_OPTIONS } from './_pin';
import { KEY_OPTIONS, str, type Verb, type VerbArgs, type VerbGroup } from './_verb';
import { readSigned } from './policy';
import { publicKeysOf } from '../engine/keys';
import { equalBytes } from '../_bytes';

const UNLOCK_HELP = '  --unlock FILE          or PQDB_UNLOCK          the recipient secret key';
const SIGNER_HELP = `  --signer FILE          or PQDB_SIGNER          ML-DSA-87 secret key (its public half from FILE.pub)
  --signer-public FILE   or PQDB_SIGNER_PUBLIC   its public key, when not beside --signer FILE`;

const print = (args: VerbArgs, json: unknown, text: string) =>
  io.stdout.write(args.values.json === true ? `${JSON.stringify(json, null, 2)}\n` : `${text}\n`);

const count = (x: number) => x.toLocaleString('en-US');
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/** Runs `fn` on the store at `location`, closing it after. */
async function withStore<T>(
  location: string,
  args: VerbArgs,
  write: boolean,
  fn: (opened: OpenedStore) => Promise<T>,
): Promise<T> {
  requireUnlock(args.keys);
  const opened = await openCliStore(location, args.keys, { write });
  try {
    return await fn(opened);
  } finally {
    await opened.close();
  }
}

export const backup: Verb = {
  name: 'backup',
  synopsis: '<location> <destination> --unlock FILE --signer FILE [--signer-public FILE] [--json]',
  summary: 'writes a consistent copy of the store into a new directory and inventories it',
  help: `  Copies the store at <location> as it stands at one commit into the directory <destination>
  (made if missing; one that holds a store is refused: CONFLICT) while writes wait only for the
  page reads, signing a checkpoint first when the newest one does not cover the log, and records
  the copy in the store's inventory (pqdb copies list). The copy is the store's sealed bytes as
  they are; it opens only read-only (get, scan and verify read it) and pqdb restore makes a new
  store of it. Prints the copy id, its records, bytes and pages, how long writes paused and the
  time taken. Takes the store's writer lock.
  --json   print { location, copy, pages, bytes, pausedMs, tookMs }
${UNLOCK_HELP}
${SIGNER_HELP}
${PIN_HELP}`,
  positionals: { min: 2, max: 2 },
  options: { ...KEY_OPTIONS, ...PIN_OPTIONS },
  async run(args) {
    const [location, destination] = args.positionals;
    requireUnlock(args.keys);
    requireSigner(args.keys);
    return withStore(location, args, true, async ({ store }) => {
      const r = await store.backup(resolve(destination));
      const c = r.copy;
      print(
        args,
        { location, ...r },
        [
          `pqdb backup: copy ${c.id} of ${location} in ${c.destination}`,
          `  ${count(c.records)} record(s) at commit ${c.commit}, ${count(r.bytes)} bytes in ${count(r.pages)} page(s)`,
          `  writes paused ${r.pausedMs.toFixed(1)} ms; took ${seconds(r.tookMs)}`,
        ].join('\n'),
      );
      return 0;
    });
  },
};

/** The inventory as a table, one row per copy; a restore, a retirement or a source below its row. */
function copiesTable(copies: readonly ManagedCopy[]): string {
  const head = ['id', 'kind', 'state', 'time', 'destination', 'generations', 'suites', 'records', 'commit'];
  const rows = copies.map((c) => [
    c.id,
    c.kind,
    c.state,
    c.time,
    c.destination,
    c.generations.join(',') || '-',
    c.suites.join(',') || '-',
    count(c.records),
    String(c.commit),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === 7 || i === 8 ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  const out = [line(head)];
  copies.forEach((c, i) => {
    out.push(line(rows[i]));
    if (c.sourceStoreId !== undefined) out.push(`  restored from a copy of store ${c.sourceStoreId}`);
    for (const r of c.restores ?? []) out.push(`  restored into store ${r.storeId} at ${r.time}`);
    if (c.retiredAt !== undefined) out.push(`  retired at ${c.retiredAt}`);
  });
  return out.join('\n');
}

export const copiesList: Verb = {
  name: 'copies list',
  synopsis: '<location> --unlock FILE [--json]',
  summary: "the store's managed copies: backups, kept generations, the copy it was restored from",
  help: `  Prints the inventory of the store at <location>, oldest first, one row per copy: its id, kind
  (backup, generation: an older key generation a migration kept, restore: the copy this store was
  restored from), state (retained, retired, restored-from), time, destination, key generations,
  suites, records and commit; the restores made from it and its retirement follow its row. Opens
  the store read-only.
  --json   print { location, copies: [...] } (store.copies())
${UNLOCK_HELP}
${PIN_HELP}`,
  positionals: { min: 1, max: 1 },
  options: { unlock: KEY_OPTIONS.unlock, ...PIN_OPTIONS },
  async run(args) {
    const [location] = args.positionals;
    return withStore(location, args, false, async ({ store }) => {
      const copies = store.copies();
      print(
        args,
        { location, copies },
        copies.length > 0 ? copiesTable(copies) : 'no managed copies (pqdb backup makes one)',
      );
      return 0;
    });
  },
};

/**
 * The inventory entry `id` names: the whole id or a unique prefix of it.
 * @throws PqdbError NOT_FOUND for none; UsageError for a prefix of several
 */
function copyNamed(copies: readonly ManagedCopy[], id: string): ManagedCopy {
  const exact = copies.find((c) => c.id === id);
  if (exact !== undefined) return exact;
  const found = id.length > 0 ? copies.filter((c) => c.id.startsWith(id.toLowerCase())) : [];
  if (found.length === 0) throw new PqdbError('NOT_FOUND', `no managed copy ${id} in this store's inventory`);
  if (found.length > 1) throw new UsageError(`<id> "${id}" is the start of ${found.length} copy ids: give more of it`);
  return found[0];
}

export const copiesRetire: Verb = {
  name: 'copies retire',
  synopsis: '<location> <id> --unlock FILE [--json]',
  summary: 'retires a managed copy: deletes a backup it reaches, records the retirement',
  help: `  Retires the managed copy <id> (its id, or a unique start of it) of the store at <location>: a
  backup in a directory is deleted first (only when it holds a pqdb store and nothing else), then
  the retirement is recorded in the inventory; a restore refuses a retired copy
  (AUTHORITY_DENIED). A backup no longer there is recorded retired and reported not deleted. A
  generation a migration kept is retired with the older key generations (as migrate --retire).
  Refused: a copy retired already (CONFLICT), an id not in the inventory (NOT_FOUND). Takes the
  store's writer lock.
  --json   print { location, copy, deleted }
${UNLOCK_HELP}
${PIN_HELP}`,
  positionals: { min: 2, max: 2 },
  options: { unlock: KEY_OPTIONS.unlock, ...PIN_OPTIONS },
  async run(args) {
    const [location, id] = args.positionals;
    return withStore(location, args, true, async ({ store }) => {
      const { copy, deleted } = await store.retireCopy(copyNamed(store.copies(), id).id);
      const what =
        copy.kind === 'generation'
          ? `generation(s) ${copy.generations.join(', ')} retired in the store`
          : deleted
            ? `deleted ${copy.destination}`
            : `not deleted: no store at ${copy.destination} (delete it where it is)`;
      print(args, { location, copy, deleted }, `pqdb copies retire: copy ${copy.id} retired; ${what}`);
      return 0;
    });
  },
};

export const copies: VerbGroup = {
  name: 'copies',
  summary: 'the inventory of managed copies: list it, retire a copy',
  help: `  Every backup (pqdb backup), every older key generation a migration kept and the copy a store
  was restored from is in the store's inventory until it is retired; restoring a copy is recorded
  in the inventories of both stores. docs/authority.md.`,
  verbs: [copiesList, copiesRetire],
};

export const restore: Verb = {
  name: 'restore',
  synopsis:
    '<copy> <new-location> --unlock FILE [--live LOCATION] [--policy FILE] [--authority FILE...] [--recipient FILE...] [--trusted-signer FILE] [--signer FILE] [--json]',
  summary: 'verifies a managed copy and makes a new store of it under new keys and current authority',
  help: `  Verifies the managed copy in the directory <copy> (every page, record, checkpoint signature and
  proof, against the trusted signer key) and re-seals its records into a new store at
  <new-location> (made if missing; one that holds a store is refused: CONFLICT) under fresh keys
  and a new store id. Only record versions a checkpoint by the trusted signer covers are taken from
  the copy; any other (written after the last signed checkpoint) is taken from the --live store,
  else refused. Prints the records restored, taken from the live store, withheld (the policy does
  not allow restoring their scope), deleted (gone from the live store since the copy) and refused
  (not signed), the new store's id, the verification time and the total time.
  --live LOCATION        the live store the copy was made of, opened for writing (its writer lock):
                         the copy must be of it, in its chain and not retired (AUTH_FAILED,
                         CORRUPTION, AUTHORITY_DENIED); its policy, deletions, recipients and suite
                         states apply, and both inventories record the restore
  --policy FILE          a signed policy (pqdb policy sign; raw or base64) at least as new as the
                         one in force (else ROLLBACK), to decide instead of it
  --authority FILE       the authority public key(s) the store pins (the live store's, else the
                         copy's must be exactly these, else AUTH_FAILED): without --live, what
                         names them from outside the copy; repeat or separate with commas
  --recipient FILE       the new store's recipient public keys (default: the live store's, else
                         the --unlock key's own); --unlock must be the secret key of one of them
  --trusted-signer FILE  the ML-DSA-87 public key the copy's checkpoints are signed with (default:
                         the --signer's public half, else --signer-public)
  --signer FILE          also sign the new store's first checkpoint
  --json                 print { location, copy, storeId, restored, fromLive, withheld, deleted,
                         unsigned, refused, copyId, sourceStoreId, copyCommit, verify, tookMs }
${UNLOCK_HELP}
${SIGNER_HELP}`,
  positionals: { min: 2, max: 2 },
  options: {
    live: { type: 'string' },
    policy: { type: 'string' },
    authority: { type: 'string', multiple: true },
    recipient: { type: 'string', multiple: true },
    'trusted-signer': { type: 'string' },
    ...KEY_OPTIONS,
  },
  async run(args) {
    const [copyDir, location] = args.positionals;
    const { values, keys } = args;
    const unlock = requireUnlock(keys);
    if (keys.signer !== undefined) requireSigner(keys);
    const trustedSigner = keyFrom('trusted-signer', str(values, 'trusted-signer'), undefined) ?? keys.signerPublicKey;
    if (trustedSigner === undefined)
      throw new UsageError(
        "the copy's signer public key is required (--trusted-signer FILE, --signer FILE or --signer-public FILE)",
      );
    const files = (values.recipient as string[] | undefined) ?? [];
    const recipients = files.length > 0 ? recipientKeys(files, unlock) : undefined;
    // The new store is made for its recipients only; a key that is none of them could not open it.
    if (recipients !== undefined && !recipients.some((r) => publicKeysOf(unlock).some((p) => equalBytes(p, r))))
      throw new UsageError('the --unlock key is not the secret key of any --recipient');
    const policyFile = str(values, 'policy');
    const policy = policyFile !== undefined ? readSigned(policyFile) : undefined;
    const authority = authorityKeys(values.authority as string[] | undefined);
    const liveLocation = str(values, 'live');
    const live = liveLocation !== undefined ? await openCliStore(liveLocation, keys, { write: true }) : undefined;
    try {
      // Made at the first report, after the verification: the rate counts the re-sealing only.
      let step: ((done: number, total: number) => void) | undefined;
      const r = await restoreStore(resolve(copyDir), {
        location,
        unlock,
        ...(live !== undefined ? { live: live.store } : {}),
        ...(keys.signer !== undefined ? { signer: keys.signer, signerPublicKey: keys.signerPublicKey } : {}),
        trustedSigner,
        ...(policy !== undefined ? { policy } : {}),
        ...(authority !== undefined ? { authorityPublicKey: authority } : {}),
        ...(recipients !== undefined ? { recipients } : {}),
        onProgress: (p) =>
          (step ??= countProgress(args.progress, 'restore', 'records'))(
            p.restored + p.fromLive + p.withheld + p.deleted + p.unsigned,
            p.total,
          ),
      });
      const storeId = r.store.info().storeId;
      await r.store.close();
      const { store: _store, ...report } = r;
      print(
        args,
        { location, copy: copyDir, storeId, ...report, ...(liveLocation !== undefined && { live: liveLocation }) },
        [
          `pqdb restore: ${location}: restored ${count(r.restored)}, withheld ${count(r.withheld)}, deleted ${count(r.deleted)}` +
            (r.fromLive > 0 ? `, taken from the live store ${count(r.fromLive)}` : '') +
            (r.unsigned > 0 ? `, refused ${count(r.unsigned)} (past the last signed checkpoint)` : ''),
          `  new store ${storeId}, from ${r.copyId !== undefined ? `copy ${r.copyId}` : 'a copy'} of store ${r.sourceStoreId} at commit ${r.copyCommit}`,
          `  copy verified in ${seconds(r.verify.ms)}; took ${seconds(r.tookMs)}${liveLocation !== undefined ? `; recorded in the inventory of ${liveLocation}` : ''}`,
        ].join('\n'),
      );
      return 0;
    } finally {
      await live?.store.close();
    }
  },
};
