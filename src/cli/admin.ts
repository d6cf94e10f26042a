// The store-wide verbs: `pqdb init` (creates a file store for recipients' public keys, pinning
// the authority keys given), `pqdb checkpoint` (signs the Merkle root with ML-DSA-87), and the
// declarations of `verify`, `migrate`, `status` and `posture`, whose work is in verify.ts,
// migrate.ts, status.ts and posture.ts. Node only.

/// <reference types="node" />
import { io } from './_io';
import { openNodeFsPageStore } from '../storage/node-fs';
import { Store } from '../engine/store';
import { suite as suiteOf, DEFAULT_SUITE, type SuiteName } from '../crypto/suites';
import { PqdbError } from '../errors';
import { hex } from '../_encoding';
import { equalBytes } from '../_bytes';
import { authorityKeys, recipientKeys } from './_keys';
import { PIN_HELP, PIN_OPTIONS } from './_pin';
import { signerKeyId } from '../crypto/proofs';
import { UsageError } from './_report';
import { publicKeysOf } from '../engine/keys';
import { notePin, openCliStore, requireSigner, requireUnlock } from './_store';
import { KEY_OPTIONS, str, whole, type Verb } from './_verb';
import { verify as verifyStoreAt } from './verify';
import { verifySealedFiles } from './export';
import { migrate as migrateStore } from './migrate';
import { status as statusOf } from './status';
import { posture as postureOf } from './posture';

const KEYS_HELP = `  --unlock FILE          or PQDB_UNLOCK          recipient secret key: decrypt and authenticate
  --signer FILE          or PQDB_SIGNER          ML-DSA-87 secret key (its public half from FILE.pub)
  --signer-public FILE   or PQDB_SIGNER_PUBLIC   trusted ML-DSA-87 public key of the checkpoints`;

export const init: Verb = {
  name: 'init',
  synopsis:
    '<location> --recipient FILE... --unlock FILE [--suite SUITE] [--authority FILE... [--authority-threshold N] [--authority-domain NAME]] [--signer FILE] [--json]',
  summary: 'creates a file store whose keys are wrapped to the recipients',
  help: `  Creates a store in the directory <location> (made if missing; an existing store is refused).
  --recipient FILE   a recipient public key (keygen's PREFIX.pub); repeat for more recipients
  --unlock FILE      the secret key of one of them: the creator opens what it creates
  --suite SUITE      what new collections write with: gcmsiv-hkdf384 (default), gcmsiv-hkdf256,
                     cnsa2-gcm-hkdf384-commit
  --authority FILE   an authority's ML-DSA-87 public key (keygen --signer's PREFIX.pub), pinned for
                     good: only policies it signs are accepted (pqdb policy set); repeat or
                     separate with commas for several (a policy's threshold counts them)
  --authority-threshold N   how many of them must sign the first policy (default 1; each later
                     version needs the threshold of the version in force)
  --authority-domain NAME   a domain the store pins: policies naming it govern the store (else a
                     policy must name the store id, pqdb policy sign --store)
  --signer FILE      also sign a first checkpoint
  --pin-file FILE    write the new store's id and commit to FILE (the pin later verbs check)
${KEYS_HELP}`,
  positionals: { min: 1, max: 1 },
  options: {
    recipient: { type: 'string', multiple: true },
    suite: { type: 'string' },
    authority: { type: 'string', multiple: true },
    'authority-threshold': { type: 'string' },
    'authority-domain': { type: 'string' },
    'pin-file': PIN_OPTIONS['pin-file'],
    ...KEY_OPTIONS,
  },
  async run({ positionals: [location], values, keys }) {
    const files = (values.recipient as string[] | undefined) ?? [];
    if (files.length === 0) throw new UsageError('at least one --recipient FILE is required');
    const unlock = requireUnlock(keys);
    if (keys.signer !== undefined) requireSigner(keys);
    let suite: SuiteName;
    try {
      suite = suiteOf((str(values, 'suite') ?? DEFAULT_SUITE) as SuiteName).name;
    } catch (e) {
      throw new UsageError(`--suite: ${(e as Error).message}`, { cause: e });
    }
    const kept = keys.pin?.storeId;
    if (kept !== undefined) throw new UsageError(`--pin-file ${keys.pin?.file} already pins store ${kept}`);
    const recipients = recipientKeys(files, unlock);
    const authority = authorityKeys(values.authority as string[] | undefined);
    const threshold = whole(values, 'authority-threshold');
    const domain = str(values, 'authority-domain');
    if (authority === undefined && (threshold !== undefined || domain !== undefined))
      throw new UsageError('--authority-threshold and --authority-domain need --authority FILE');
    if (threshold !== undefined && threshold > authority!.length)
      throw new UsageError(`--authority-threshold ${threshold} exceeds the ${authority!.length} authority key(s)`);
    if (domain !== undefined && (domain === '' || domain.length > 256))
      throw new UsageError('--authority-domain expected a name of 1 to 256 characters');
    // The engine wraps the root to the recipients only; a creator key that is none of them would
    // make a store it cannot open again.
    if (!recipients.some((r) => publicKeysOf(unlock).some((p) => equalBytes(p, r))))
      throw new UsageError('the --unlock key is not the secret key of any --recipient');
    const pages = await openNodeFsPageStore(location, { create: true });
    let store: Store;
    try {
      if ((await pages.readManifest()) !== undefined)
        throw new PqdbError('CONFLICT', `${location} already holds a store`);
      store = await Store.open(pages, {
        create: true,
        recipients,
        unlock,
        suite,
        signer: keys.signer,
        signerPublicKey: keys.signerPublicKey,
        ...(authority !== undefined ? { authorityPublicKey: authority } : {}),
        ...(threshold !== undefined ? { authorityThreshold: threshold } : {}),
        ...(domain !== undefined ? { authorityDomain: domain } : {}),
        autoCheckpoint: false,
      });
    } catch (e) {
      await pages.close();
      throw e;
    }
    try {
      const checkpoint = keys.signer !== undefined ? await store.checkpoint() : undefined;
      notePin(keys, store);
      const info = store.info();
      const out = {
        location,
        storeId: info.storeId,
        suite,
        recipients: recipients.length,
        ...(authority !== undefined && {
          authorityKeys: authority.map((k) => hex(signerKeyId(k))),
        }),
        ...(threshold !== undefined && { authorityThreshold: threshold }),
        ...(domain !== undefined && { authorityDomain: domain }),
        ...(checkpoint && { checkpoint: info.checkpoint }),
      };
      const pinned =
        authority !== undefined
          ? `, ${authority.length} authority key(s) pinned${threshold !== undefined ? ` (threshold ${threshold})` : ''}${
              domain !== undefined ? `, domain ${domain}` : ''
            }`
          : '';
      io.stdout.write(
        values.json === true
          ? `${JSON.stringify(out, null, 2)}\n`
          : `pqdb init: created ${location}: store ${out.storeId}, suite ${suite}, ${recipients.length} recipient(s)${pinned}${checkpoint ? ', checkpoint signed' : ''}\n`,
      );
      return 0;
    } finally {
      await store.close();
    }
  },
};

export const checkpoint: Verb = {
  name: 'checkpoint',
  synopsis: '<location> --unlock FILE --signer FILE [--signer-public FILE] [--json]',
  summary: 'signs the Merkle root of the current key generation with ML-DSA-87',
  help: `  Signs a checkpoint (store id, generation, size, root, previous hash) and persists it with the
  changed search indexes; prints its generation, size and hash (the hash is what
  pqdb verify --expect-checkpoint takes).
${KEYS_HELP}
${PIN_HELP}`,
  positionals: { min: 1, max: 1 },
  options: { ...KEY_OPTIONS, ...PIN_OPTIONS },
  async run({ positionals: [location], values, keys }) {
    requireUnlock(keys);
    requireSigner(keys);
    const opened = await openCliStore(location, keys, { write: true });
    const { store } = opened;
    try {
      await store.checkpoint();
      const cp = store.info().checkpoint!;
      const out = { location, ...cp, checkpoints: store.checkpoints().length };
      io.stdout.write(
        values.json === true
          ? `${JSON.stringify(out, null, 2)}\n`
          : `pqdb checkpoint: generation ${cp.generation}, size ${cp.size}, hash ${cp.hash}\n`,
      );
      return 0;
    } finally {
      await opened.close();
    }
  },
};

export const compactVerb: Verb = {
  name: 'compact',
  synopsis: '<location> --unlock FILE [--min-dead FRACTION] [--keep-history] [--json]',
  summary: 'rewrites the live records of mostly dead pages and reclaims their space',
  help: `  Moves the live records of commit pages whose dead bytes (updated, deleted, migrated records)
  are at least --min-dead of the page (default 0.5) into new pages, one atomic commit per page,
  deletes the old pages and lets the page store reclaim their bytes; prints bytes before and after.
  Then raises the history floor: the Merkle leaf hashes below the first live page stop costing
  disk (signed first with --signer; links keep the older checkpoints provably consistent).
  --keep-history keeps every leaf (docs/security.md, "Dropped history").
${KEYS_HELP}
${PIN_HELP}`,
  positionals: { min: 1, max: 1 },
  options: { ...KEY_OPTIONS, 'min-dead': { type: 'string' }, 'keep-history': { type: 'boolean' }, ...PIN_OPTIONS },
  async run({ positionals: [location], values, keys }) {
    requireUnlock(keys);
    const minDead = values['min-dead'] === undefined ? undefined : Number(values['min-dead']);
    if (minDead !== undefined && !(minDead >= 0 && minDead <= 1))
      throw new UsageError('--min-dead expected a fraction between 0 and 1');
    const opened = await openCliStore(location, keys, { write: true });
    const { store } = opened;
    try {
      const r = await store.compact({ minDeadFraction: minDead, keepHistory: values['keep-history'] === true });
      const floor = r.historyFloor;
      const dropped =
        floor === undefined
          ? ''
          : `; history floor ${floor.from} → ${floor.to} (${floor.logPagesDeleted} log page(s) deleted)`;
      const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
      io.stdout.write(
        values.json === true
          ? `${JSON.stringify({ location, ...r }, null, 2)}\n`
          : `pqdb compact: ${r.pagesRewritten} page(s) rewritten, ${r.recordsMoved} record(s) moved, ${mib(r.bytesBefore)} → ${mib(r.bytesAfter)} (live records ${mib(r.liveRecordBytes)})${dropped}${r.skipped !== undefined ? `; ${r.skipped}` : ''}\n`,
      );
      return 0;
    } finally {
      await opened.close();
    }
  },
};

export const verify: Verb = {
  name: 'verify',
  synopsis: '<location> [--unlock FILE] [--signer-public FILE] [--expect-checkpoint HASH|SIZE] [--quiet] [--json]',
  summary: 'checks every page, record, Merkle leaf, checkpoint and proof (or --sealed: exports)',
  help: `  Opens the store at <location> read-only and checks every page, record, Merkle leaf,
  checkpoint signature and proof; prints a summary (--json: the full report).
  --expect-checkpoint   a checkpoint hash or log size the store must still hold, else it is an
                        older copy (a ROLLBACK problem, exit 1)
  --sealed              <location> is a sealed export (a file) or a directory of them
                        (pqdb export --sealed): each is checked against --signer-public
  --quiet               print nothing when every check holds
${KEYS_HELP}
${PIN_HELP}
                         (the three pin options need --unlock)
  exit status: 0 all checks hold, 1 a check failed, 2 usage error or unreadable store,
               3 no failure but checks skipped for want of a key`,
  positionals: { min: 1, max: 1 },
  options: {
    'expect-checkpoint': { type: 'string' },
    quiet: { type: 'boolean' },
    sealed: { type: 'boolean' },
    unlock: KEY_OPTIONS.unlock,
    'signer-public': KEY_OPTIONS['signer-public'],
    ...PIN_OPTIONS,
  },
  run: async ({ positionals: [location], values, keys, progress }) => {
    if (values.sealed === true && keys.pin !== undefined)
      throw new UsageError('--store-id, --min-commit and --pin-file are for a store, not --sealed exports');
    return values.sealed === true
      ? verifySealedFiles(location, values, keys)
      : verifyStoreAt(
          location,
          {
            json: values.json === true,
            quiet: values.quiet === true,
            'expect-checkpoint': str(values, 'expect-checkpoint'),
            progress,
          },
          keys,
        );
  },
};

export const migrate: Verb = {
  name: 'migrate',
  synopsis: '<location> --to SUITE [--collection NAME] [--chunk N] [--retire] --unlock FILE [--signer FILE] [--json]',
  summary: 'moves every record to another suite on the live store',
  help: `  Moves every record (of NAME, or of every collection) to SUITE (gcmsiv-hkdf256, gcmsiv-hkdf384,
  cnsa2-gcm-hkdf384-commit) while the store stays usable; resumes an unfinished migration;
  Ctrl-C pauses it (exit 130); prints the accounting; --retire then retires the older key
  generations (their pages deleted, their roots destroyed). With --signer it signs its checkpoint.
${KEYS_HELP}
${PIN_HELP}`,
  positionals: { min: 1, max: 1 },
  options: {
    to: { type: 'string' },
    collection: { type: 'string' },
    chunk: { type: 'string' },
    retire: { type: 'boolean' },
    ...KEY_OPTIONS,
    ...PIN_OPTIONS,
  },
  run: ({ positionals: [location], values, keys, progress }) =>
    migrateStore(
      location,
      {
        to: str(values, 'to'),
        collection: str(values, 'collection'),
        chunk: str(values, 'chunk'),
        retire: values.retire === true,
        json: values.json === true,
        progress,
      },
      keys,
    ),
};

export const status: Verb = {
  name: 'status',
  synopsis: '<location> [--unlock FILE] [--json]',
  summary: "the store's generations, suites, collections, checkpoints and migration",
  help: `  Reads the manifest without keys (store id, commit, key generations: unauthenticated); with
  --unlock it authenticates the manifest and also shows suites, collections with their record
  counts, checkpoints and the migration.
${KEYS_HELP}
${PIN_HELP}
                         (the three pin options need --unlock)`,
  positionals: { min: 1, max: 1 },
  options: { unlock: KEY_OPTIONS.unlock, ...PIN_OPTIONS },
  run: ({ positionals: [location], values, keys }) => statusOf(location, { json: values.json === true }, keys),
};

export const schemaVerb: Verb = {
  name: 'schema',
  synopsis: '<location> [collection] --unlock FILE [--json]',
  summary: "the store's collections: schema, its version, records, suite and indexed fields",
  help: `  Opens the store read-only and prints each collection (or the one named) with its current
  schema and that schema's version (a collection reopened with optional fields added or types
  widened moves to the next version: docs/api.md, "Schema evolution"), its live records, the suite
  new records are sealed with and the fields its search index covers.
${KEYS_HELP}
${PIN_HELP}`,
  positionals: { min: 1, max: 2 },
  options: { unlock: KEY_OPTIONS.unlock, ...PIN_OPTIONS },
  async run({ positionals: [location, name], values, keys }) {
    requireUnlock(keys);
    const opened = await openCliStore(location, keys, { write: false });
    try {
      const all = opened.store.collections();
      const list = name === undefined ? all : all.filter((c) => c.name === name);
      if (name !== undefined && list.length === 0)
        throw new PqdbError('NOT_FOUND', `no collection "${name}" in the store at ${location}`);
      if (values.json === true)
        io.stdout.write(`${JSON.stringify(name === undefined ? { location, collections: list } : list[0], null, 2)}\n`);
      else
        for (const c of list) {
          const fields = Object.entries(c.schema)
            .map(([f, t]) => `${f}:${t}`)
            .join(',');
          const index = c.indexed.length > 0 ? `, search on ${c.indexed.join(',')}` : '';
          io.stdout.write(`${c.name}  ${fields}  (version ${c.version}, ${c.records} record(s), ${c.suite}${index})\n`);
        }
      return 0;
    } finally {
      await opened.close();
    }
  },
};

export const posture: Verb = {
  name: 'posture',
  synopsis: '<location> --unlock FILE [--signer-public FILE] [--out FILE] [--json]',
  summary: "the store's cryptographic bill of materials (CycloneDX 1.6 CBOM) as JSON",
  help: `  Opens the store read-only and prints its CBOM (docs/posture.md): the algorithms in use, the
  suites with their registry states, the keys with their states (by key id: no key bytes), the
  live records per collection and suite, and the managed copies.
  --out FILE   write it to the new file FILE (an existing file is refused) and print one line
               (--json: { location, storeId, out, serialNumber, components })
  --unlock FILE          or PQDB_UNLOCK          recipient secret key: decrypt and authenticate
  --signer-public FILE   or PQDB_SIGNER_PUBLIC   the checkpoint signer's public key, listed in the BOM
${PIN_HELP}`,
  positionals: { min: 1, max: 1 },
  options: {
    out: { type: 'string' },
    unlock: KEY_OPTIONS.unlock,
    'signer-public': KEY_OPTIONS['signer-public'],
    ...PIN_OPTIONS,
  },
  run: ({ positionals: [location], values, keys }) =>
    postureOf(location, { out: str(values, 'out'), json: values.json === true }, keys),
};
