// Current-authority gates (DESIGN §9, docs/authority.md), the one place the policy in force is
// asked. The composition root registers them; nothing else calls the policy's decisions inline:
//
//   - the write gate, a `prepare` hook of the commit pipeline: every user's put of a commit is
//     checked against the policy the commit runs under (the draft's manifest), before its page is
//     sealed, so a refused write seals nothing and the whole commit is dropped. Copies (compaction,
//     a migration) leave the value as it is and are gated as `copy` when opened;
//   - the record gates handed to RecordIO, one per purpose it opens a record for: `read` (a user's
//     get, scan and search: the policy's `read`), `copy` (compaction and a migration's copy: its
//     `migrate`) and `restore` (its `restore`; a restore passes the gate of the authority it takes,
//     restoreGate). `index` and `verify` open records only the engine sees (what a user gets of them
//     passes the read gate), so they take no authority gate.
//
// A refusal is PqdbError AUTHORITY_DENIED (authorityDenied): for an expired policy, the expiry.

import type { PqdbError } from '../errors';
import type { PolicyOperation } from '../crypto/policy';
import { authorityAllows, authorityDenied } from './authority';
import type { Manifest } from './manifest';
import type { Draft } from './commit';
import type { Gate, GateRequest, Gates } from './records';

/** What a gate reads of a manifest: its pinned keys and policy in force. */
type Authority = Pick<Manifest, 'authority'>;

/**
 * The refusal of `operation` on `what()` under `authority`, or undefined when it is allowed (the
 * name is made only for a refusal: gates run on every read and write).
 */
function decide(authority: Authority, operation: PolicyOperation, governance: string, what: () => string) {
  const m = authority as Manifest; // the decisions read `authority` alone
  return authorityAllows(m, operation, governance) ? undefined : authorityDenied(m, operation, governance, what());
}

/**
 * The `prepare` hook that gates writes: each user's put of the draft (not a copy) under the policy
 * the commit runs under (it may be newer than the one in force when the write was called).
 * @throws PqdbError AUTHORITY_DENIED naming the first refused write (the commit is dropped)
 * @example pipeline.on({ prepare: writeGate });
 */
export function writeGate(draft: Draft): void {
  for (const op of draft.ops) {
    if (op.kind !== 'put' || op.copy === true) continue;
    const refused = decide(draft.manifest, 'write', op.governance, () => `a write to ${op.collection}/${op.id}`);
    if (refused !== undefined) throw refused;
  }
}

/** The gate of `operation` under the authority `manifest()` holds when a record is opened. */
function authorityGate(manifest: () => Authority, operation: PolicyOperation): Gate {
  return (at: GateRequest) => decide(manifest(), operation, at.governance, () => `${at.collection}/${at.id}`);
}

/**
 * A store's record gates (RecordIO's `gates`), under the manifest installed when a record is opened:
 * `read`, `copy` (the policy's `migrate`) and `restore`.
 * @example new RecordIO(cache, keys, registry, saltOf, recordGates(() => pipeline.manifest));
 */
export function recordGates(manifest: () => Authority): Gates {
  return {
    read: authorityGate(manifest, 'read'),
    copy: authorityGate(manifest, 'migrate'),
    restore: authorityGate(manifest, 'restore'),
  };
}

/**
 * The `restore` gate of a restore under the current authority it takes (`authority`: the live
 * store's pinned keys and policy, or a newer policy given): the version restored must be allowed,
 * and so must the scope the live store holds the record under now (`liveGovernance`, when there is
 * a live store): a copy's older scope never widens it.
 * @example records.gated({ restore: restoreGate(authority, (c, id) => live.directory.get(c, id)?.governance) })
 */
export function restoreGate(
  authority: Manifest['authority'],
  liveGovernance?: (collection: string, id: string) => string | undefined,
): Gate {
  const a: Authority = { authority };
  return (at: GateRequest): PqdbError | undefined => {
    const what = () => `${at.collection}/${at.id}`;
    const refused = decide(a, 'restore', at.governance, what);
    if (refused !== undefined) return refused;
    const now = liveGovernance?.(at.collection, at.id);
    return now !== undefined ? decide(a, 'restore', now, what) : undefined;
  };
}
