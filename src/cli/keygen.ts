// `pqdb keygen --out PREFIX`: a new key pair in two files. PREFIX holds the secret key, PREFIX.pub
// the public key, each as base64 on one line (what _keys.ts reads, raw bytes being the other form):
//   recipient (default --type hybrid): secret 32 bytes (the ML-KEM-1024 + X25519 seed; classical:
//     the X25519 scalar), public 1,600 bytes (ML-KEM-1024 ‖ X25519; classical: 32 bytes)
//   --signer: ML-DSA-87 secret 4,896 bytes, public 2,592 bytes (FIPS 204 Table 2): a checkpoint
//     signer or a policy authority (policy.ts)
// The secret file is created with mode 0600, the public one 0644, both with O_EXCL: an existing
// file is never overwritten (nothing is written then). The key bytes are wiped after writing; the
// base64 strings cannot be. Node only.

/// <reference types="node" />
import { io } from './_io';
import { existsSync, unlinkSync } from 'node:fs';
import { writeNew } from './_files';
import { generateRecipient, recipientId } from '../crypto/envelope';
import { ml_dsa87 } from '../kernels/mldsa';
import { PqdbError } from '../errors';
import { hex } from '../_encoding';
import { UsageError } from './_report';
import { str, type Verb } from './_verb';

export const keygen: Verb = {
  name: 'keygen',
  synopsis: '--out PREFIX [--type hybrid|classical] [--signer] [--json]',
  summary: 'a recipient (or --signer: ML-DSA-87) key pair: PREFIX (secret, 0600) and PREFIX.pub',
  help: `  Writes a new secret key to PREFIX (mode 0600) and its public key to PREFIX.pub, each as
  base64 on one line; refuses to overwrite either file.
  --type hybrid|classical   recipient keys: ML-KEM-1024 + X25519 (default) or X25519 alone
  --signer                  an ML-DSA-87 pair instead of a recipient: a checkpoint signer, or a
                            policy authority (init --authority PREFIX.pub)
  --json                    print { kind, type, secret, public, publicBytes, id } as JSON`,
  positionals: { min: 0, max: 0 },
  options: { out: { type: 'string' }, type: { type: 'string' }, signer: { type: 'boolean' } },
  async run({ values }) {
    const out = str(values, 'out');
    if (out === undefined || out === '') throw new UsageError('--out PREFIX is required');
    const signer = values.signer === true;
    const type = str(values, 'type') ?? 'hybrid';
    if (signer && values.type !== undefined) throw new UsageError('--type is for recipient keys, not --signer');
    if (type !== 'hybrid' && type !== 'classical')
      throw new UsageError(`--type expected hybrid or classical, got "${type}"`);
    const pub = `${out}.pub`;
    for (const f of [out, pub])
      if (existsSync(f)) throw new PqdbError('IO_ERROR', `${f} exists: keygen never overwrites a key file`);
    const pair = signer ? ml_dsa87.keygen() : generateRecipient(type);
    try {
      writeNew(out, `${Buffer.from(pair.secretKey).toString('base64')}\n`, 0o600);
      try {
        writeNew(pub, `${Buffer.from(pair.publicKey).toString('base64')}\n`, 0o644);
      } catch (e) {
        unlinkSync(out); // both files or neither
        throw e;
      }
      const report = {
        kind: signer ? 'signer' : 'recipient',
        type: signer ? 'ml-dsa-87' : type,
        secret: out,
        public: pub,
        publicBytes: pair.publicKey.length,
        id: hex(recipientId(pair.publicKey)),
      };
      io.stdout.write(
        values.json === true
          ? `${JSON.stringify(report, null, 2)}\n`
          : `pqdb keygen: ${report.kind} key (${report.type}): secret ${out} (0600), public ${pub}, id ${report.id}\n`,
      );
      return 0;
    } catch (e) {
      if (e instanceof PqdbError || e instanceof UsageError) throw e;
      throw new PqdbError('IO_ERROR', (e as Error).message, { cause: e });
    } finally {
      pair.secretKey.fill(0);
    }
  },
};
