// The authority policy verbs (DESIGN §9, docs/authority.md), a group under `pqdb policy`:
//   sign <policy> --authority-key FILE…    signs a policy document (JSON) with authority keys;
//                                          --store ID… / --domain NAME name the stores it governs
//   set <location> <signed> --unlock FILE  installs a signed policy in a store (store.setPolicy)
//   show <location> --unlock FILE          prints the policy in force (store.policy) and the pins
// A signed policy ("PQAP" …, src/crypto/policy.ts) is written as base64 on one line by default, like
// a key file: safe on a terminal, in an environment variable or a mail; `sign --raw` writes its
// bytes. Whatever reads one takes either form, or "-" for stdin.
//
// An authority key is an ML-DSA-87 pair from `pqdb keygen --signer`: --authority-key FILE is the
// secret key, its public half is read from FILE.pub. signPolicy takes one key per call, so sign
// calls it once per --authority-key, each adding its signature; given a policy already signed it
// adds to those (for a threshold whose keys are kept apart). Caveats: sign checks that the document
// is well-formed and that each FILE.pub is the public half of FILE (its SHA-3 hash, which FIPS 204
// keeps in the secret key as tr), not that the keys are the ones a store pins: `set` checks that,
// with the signatures, the thresholds, the expiry, the stores named and the version. --out writes a
// new file only (_files.ts: an existing file or a symbolic link is refused). The secret keys are
// wiped after signing; the base64 text they were read from cannot be. Node only.

/// <reference types="node" />
import { io } from './_io';
import { readFileSync } from 'node:fs';
import { signPolicy, type Policy, type PolicyDocument } from '../crypto/policy';
import { signerKeyId } from '../crypto/proofs';
import { hex, unb64 } from '../_encoding';
import { PqdbError } from '../errors';
import { writeNew } from './_files';
import { authorityKeys, keyPairFile } from './_keys';
import { UsageError } from './_report';
import { openCliStore, requireUnlock } from './_store';
import { PIN_HELP, PIN_OPTIONS } from './_pin';
import { KEY_OPTIONS, str, type Verb, type VerbArgs, type VerbGroup } from './_verb';

const MAGIC = 'PQAP';
/** "PQAP" ‖ u8 format ‖ be32 body length: the body follows (docs/authority.md). */
const HEAD_BYTES = 9;

const STORE_HELP = `  --authority FILE   the authority public key(s) the store must pin (else AUTH_FAILED); repeat
                     or separate with commas
  --unlock FILE      or PQDB_UNLOCK: the recipient secret key
${PIN_HELP}`;

const keyIdHex = (publicKey: Uint8Array): string => hex(signerKeyId(publicKey));

const print = (args: VerbArgs, json: unknown, text: string) =>
  io.stdout.write(args.values.json === true ? `${JSON.stringify(json, null, 2)}\n` : `${text}\n`);

/** A file's bytes, or stdin's for "-". */
function readInput(file: string): Uint8Array {
  return new Uint8Array(file === '-' ? io.readStdin() : readFileSync(file));
}

/** The signed policy in `raw`: its bytes as they are, or decoded from base64; undefined for neither. */
function signedFrom(raw: Uint8Array): Uint8Array | undefined {
  if (Buffer.from(raw.subarray(0, 4)).toString('latin1') === MAGIC) return raw;
  const text = Buffer.from(raw).toString('latin1').replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return undefined;
  const bytes = new Uint8Array(Buffer.from(text, 'base64'));
  return Buffer.from(bytes.subarray(0, 4)).toString('latin1') === MAGIC ? bytes : undefined;
}

/**
 * The signed policy in a file ("-": stdin), raw or base64; bytes that are neither are passed on
 * as they are, for the store to refuse (CORRUPTION).
 * @throws the file system's error when the file cannot be read
 * @example
 * const signed = readSigned('policy-v2.signed');
 */
export function readSigned(file: string): Uint8Array {
  const raw = readInput(file);
  return signedFrom(raw) ?? raw;
}

/**
 * The document inside a signed policy, unverified: for reporting what was signed and for adding
 * signatures to it (signPolicy re-reads the signed body itself).
 * @throws PqdbError CORRUPTION when the body cannot be read
 */
function documentOf(signed: Uint8Array): PolicyDocument {
  const length = signed.length >= HEAD_BYTES ? new DataView(signed.buffer, signed.byteOffset).getUint32(5) : -1;
  try {
    if (length < 0 || HEAD_BYTES + length > signed.length) throw new Error('truncated');
    return JSON.parse(
      new TextDecoder('utf-8', { fatal: true }).decode(signed.subarray(HEAD_BYTES, HEAD_BYTES + length)),
    );
  } catch (e) {
    throw new PqdbError('CORRUPTION', 'signed policy: the body cannot be read', { cause: e });
  }
}

/** How many signatures a signed policy carries (the count byte after its body). */
function signatureCount(signed: Uint8Array): number {
  return signed[HEAD_BYTES + new DataView(signed.buffer, signed.byteOffset).getUint32(5)];
}

/** What `show` and `set` report of a policy. */
function reportOf(p: Policy, now = Date.now()) {
  return {
    version: p.version,
    ...(p.expires !== undefined ? { expires: p.expires, expired: Date.parse(p.expires) <= now } : {}),
    threshold: p.threshold ?? 1,
    ...(p.stores !== undefined ? { stores: p.stores } : {}),
    ...(p.domain !== undefined ? { domain: p.domain } : {}),
    signers: p.signers,
    rules: p.rules,
  };
}

export const policySign: Verb = {
  name: 'policy sign',
  synopsis: '<policy> --authority-key FILE... [--store ID...] [--domain NAME] [--out FILE] [--raw] [--json]',
  summary: 'signs a policy document (JSON) with authority keys; base64 on one line, or --raw',
  help: `  Signs the policy document in the file <policy> ("-": stdin), JSON:
    { "version": 1, "rules": [{ "scope": "billing", "purposes": ["audit"],
      "allow": ["read", "write", "migrate", "restore"] }], "expires": "2030-01-01T00:00:00Z",
      "threshold": 1, "stores": ["<store id>"], "domain": "prod" }
  (docs/authority.md); a <policy> already signed gets the new signatures added to its own. A store
  installs only a policy naming it: its id (pqdb init prints it) in "stores", or the domain it
  pins (init --authority-domain) in "domain".
  --authority-key FILE   an authority secret key (keygen --signer), its public half in FILE.pub;
                         repeat or separate with commas to sign with several (a threshold)
  --store ID             add a store id to the document's "stores"; repeat or separate with commas
  --domain NAME          set the document's "domain"
  --out FILE             write the signed policy to FILE, a new file (an existing file or a
                         symbolic link is refused); else to stdout, and nothing else
  --raw                  write its bytes ("PQAP" …) instead of base64 on one line
  --json                 print { version, threshold, signatures, signedBy, out } (without --out,
                         also "signed": the base64)`,
  positionals: { min: 1, max: 1 },
  options: {
    'authority-key': { type: 'string', multiple: true },
    store: { type: 'string', multiple: true },
    domain: { type: 'string' },
    out: { type: 'string' },
    raw: { type: 'boolean' },
  },
  async run(args) {
    const { values } = args;
    const files = ((values['authority-key'] as string[] | undefined) ?? [])
      .flatMap((o) => o.split(',').map((f) => f.trim()))
      .filter((f) => f !== '');
    if (files.length === 0) throw new UsageError('at least one --authority-key FILE is required');
    const out = str(values, 'out');
    const raw = values.raw === true;
    if (out === undefined && raw && values.json === true)
      throw new UsageError('--raw without --out writes the signed bytes to stdout: not with --json');
    if (out === undefined && raw && io.stdout.isTTY === true)
      throw new UsageError('--raw writes binary: give --out FILE or redirect stdout');
    const input = readInput(args.positionals[0]);
    let signed = signedFrom(input);
    let doc: PolicyDocument;
    if (signed !== undefined) doc = documentOf(signed);
    else
      try {
        doc = JSON.parse(Buffer.from(input).toString('utf8')) as PolicyDocument;
      } catch (e) {
        const why = (e as Error).message.replace(/\s+/g, ' ');
        throw new UsageError(`<policy>: neither a JSON document nor a signed policy (${why})`, { cause: e });
      }
    const stores = ((values.store as string[] | undefined) ?? []).flatMap((o) => o.split(',').map((s) => s.trim()));
    const domain = str(values, 'domain');
    if (stores.length > 0 || domain !== undefined) {
      if (signed !== undefined)
        throw new UsageError('--store and --domain name stores of a document, not of a signed policy');
      if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
        throw new UsageError('<policy>: expected a JSON object');
      const named = doc as { stores?: unknown };
      doc = {
        ...doc,
        ...(stores.length > 0
          ? { stores: [...(Array.isArray(named.stores) ? (named.stores as string[]) : []), ...stores] }
          : {}),
        ...(domain !== undefined ? { domain } : {}),
      };
    }
    const signedBy: string[] = [];
    for (const file of files) {
      const pair = keyPairFile('authority-key', file);
      try {
        signed = signPolicy(doc, pair.secretKey, pair.publicKey, signed);
        signedBy.push(keyIdHex(pair.publicKey));
      } finally {
        pair.secretKey.fill(0);
      }
    }
    const result = signed!;
    const text = `${Buffer.from(result).toString('base64')}\n`;
    if (out !== undefined) writeNew(out, raw ? result : text);
    else if (values.json !== true) {
      io.stdout.write(raw ? result : text);
      return 0;
    }
    const threshold = doc.threshold ?? 1;
    const signatures = signatureCount(result);
    const report = {
      version: doc.version,
      threshold,
      signatures,
      signedBy,
      ...(out !== undefined ? { out, format: raw ? 'raw' : 'base64' } : { signed: text.trimEnd() }),
    };
    const more = threshold > signatures ? `; needs ${threshold - signatures} more of the pinned keys` : '';
    print(
      args,
      report,
      `pqdb policy sign: version ${doc.version}, ${signatures} signature(s) of threshold ${threshold}${more}; wrote ${out} (${raw ? 'raw' : 'base64'})`,
    );
    return 0;
  },
};

export const policySet: Verb = {
  name: 'policy set',
  synopsis: '<location> <signed> --unlock FILE [--authority FILE...] [--json]',
  summary: 'installs a signed policy: pinned signers, not expired, version current + 1',
  help: `  Installs the signed policy in the file <signed> ("-": stdin; raw or base64, what pqdb policy
  sign writes) in the store at <location>, in one commit, and prints the version now in force.
  Refused, with nothing changed, when the store pins no authority key (AUTHORITY_DENIED), the
  pinned keys did not sign it to its threshold and to the threshold of the version in force
  (AUTH_FAILED), it has expired or does not name the store or the domain it pins
  (AUTHORITY_DENIED), or its version is not the current one + 1 (ROLLBACK: not newer; CONFLICT:
  skips one).
${STORE_HELP}`,
  positionals: { min: 2, max: 2 },
  options: { authority: { type: 'string', multiple: true }, unlock: KEY_OPTIONS.unlock, ...PIN_OPTIONS },
  async run(args) {
    const [location, file] = args.positionals;
    requireUnlock(args.keys);
    const signed = readSigned(file);
    const authority = authorityKeys(args.values.authority as string[] | undefined);
    const opened = await openCliStore(location, args.keys, { write: true, authority });
    const { store } = opened;
    try {
      const p = await store.setPolicy(signed);
      const { commit } = store.info();
      print(
        args,
        { location, commit, ...reportOf(p) },
        `pqdb policy set: version ${p.version} in force (commit ${commit}), signed by ${p.signers.join(', ')}`,
      );
      return 0;
    } finally {
      await opened.close();
    }
  },
};

export const policyShow: Verb = {
  name: 'policy show',
  synopsis: '<location> --unlock FILE [--authority FILE...] [--json]',
  summary: 'prints the policy in force (or "no policy") and the pinned authority keys',
  help: `  Prints the policy in force in the store at <location>: its version, expiry, threshold, the key
  ids (SHA-384 of the public key, first 16 bytes, hex) of the pinned keys that signed it and its
  rules; "no policy" when none was set. Also the key ids of the pinned authority keys.
  --json   print { location, authorityKeys, policy } (policy null when none)
${STORE_HELP}`,
  positionals: { min: 1, max: 1 },
  options: { authority: { type: 'string', multiple: true }, unlock: KEY_OPTIONS.unlock, ...PIN_OPTIONS },
  async run(args) {
    const [location] = args.positionals;
    requireUnlock(args.keys);
    const authority = authorityKeys(args.values.authority as string[] | undefined);
    const opened = await openCliStore(location, args.keys, { write: false, authority });
    const { store, manifest } = opened;
    try {
      const pinned = (manifest.authority?.keys ?? []).map((k) => keyIdHex(unb64(k)));
      const p = store.policy();
      const shown = p === undefined ? null : reportOf(p);
      const lines = [
        shown === null
          ? 'no policy'
          : `policy version ${shown.version}, threshold ${shown.threshold}, ${
              shown.expires === undefined
                ? 'no expiry'
                : `expires ${shown.expires}${shown.expired === true ? ' (expired)' : ''}`
            }`,
        ...(shown !== null ? [`signed by: ${shown.signers.join(', ')}`] : []),
        ...(shown?.stores !== undefined ? [`stores: ${shown.stores.join(', ')}`] : []),
        ...(shown?.domain !== undefined ? [`domain: ${shown.domain}`] : []),
        `authority keys pinned: ${pinned.length > 0 ? pinned.join(', ') : 'none (pqdb init --authority pins them)'}`,
        ...(shown !== null ? ['rules:', ...shown.rules.map(ruleLine)] : []),
      ];
      print(args, { location, authorityKeys: pinned, policy: shown }, lines.join('\n'));
      return 0;
    } finally {
      await opened.close();
    }
  },
};

/** `  billing (purposes audit, support): read, write` */
function ruleLine(r: Policy['rules'][number]): string {
  const purposes = r.purposes !== undefined ? ` (purposes ${r.purposes.join(', ')})` : '';
  return `  ${r.scope}${purposes}: ${r.allow.length > 0 ? r.allow.join(', ') : 'nothing'}`;
}

export const policy: VerbGroup = {
  name: 'policy',
  summary: 'signed authority policies: sign a document, set it in a store, show the one in force',
  help: `  A policy says which governance scopes (and purposes) may be read, written, migrated and
  restored; a store accepts only policies signed by the authority keys pinned when it was created
  (pqdb init --authority FILE.pub), each version exactly the previous one + 1. docs/authority.md.`,
  verbs: [policySign, policySet, policyShow],
};
