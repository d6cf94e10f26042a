// The history floor of a generation's Merkle log (docs/format.md, "History floor"): the leaves
// below it are no longer stored. A compaction raises it once every record below it is dead and a
// signed checkpoint covers it; what is left of the history is
//
//   - the compact range at the floor (popcount(F) subtree hashes), from which the log goes on:
//     roots, inclusion proofs of every leaf from the floor on and consistency proofs from every size
//     from the floor on are those of the whole log (MerkleHashTree with a floor);
//   - for every signed checkpoint below the floor, an RFC 9162 consistency proof from its size to a
//     floor (a link), and for every earlier floor its root and the consistency proof to the next: a
//     chain that takes each old signed root, through the floors, to the log as it stands. Each proof
//     is checked against roots at both ends (a signed one or one the next proof checks), so the
//     chain proves that every old checkpoint's tree is a prefix of today's without the leaves
//     between.
//
// The floor page holds them; the manifest names it with its size and SHA-384, so neither another
// floor page nor an older one passes for it.
//
//   "PQDF" ‖ 1 ‖ be32(generation) ‖ be64(F) ‖ u8(popcount F) ‖ compact range at F (48 each)
//   ‖ be32(h) ‖ h × (be64(size) ‖ root (48) ‖ u8(c) ‖ c proof hashes)        earlier floors, oldest first;
//                                                                            each proves the next (or F)
//   ‖ be32(k) ‖ k × (be64(size) ‖ be32(hop) ‖ u8(c) ‖ c proof hashes)        a checkpoint size below F and
//                                                                            its proof to floor `hop` (h: F)

import { PqdbError } from '../errors';
import { MerkleAppender, verifyConsistency, HASH_BYTES, type MerkleHashTree } from '../crypto/merkle';
import { equalBytes, getU64, setU64 } from '../_bytes';

export const FLOOR_MAGIC = [0x50, 0x51, 0x44, 0x46]; // PQDF
const FLOOR_VERSION = 1;

/** An earlier floor: its size, the root there, and the consistency proof to the next floor. */
export interface FloorHop {
  size: number;
  root: Uint8Array;
  proof: Uint8Array[];
}

/** A signed checkpoint's size below the floor and its consistency proof to floor `hop`. */
export interface FloorLink {
  size: number;
  /** Index into `hops`, or hops.length for the floor itself. */
  hop: number;
  proof: Uint8Array[];
}

/** What a generation keeps of the history below its floor. */
export interface HistoryFloor {
  generation: number;
  /** Leaves [0, size) are no longer stored. */
  size: number;
  /** The compact range at `size`. */
  frontier: Uint8Array[];
  hops: FloorHop[];
  links: FloorLink[];
}

const popcount = (x: number) => {
  let n = 0;
  for (let c = x; c > 0; c = Math.floor(c / 2)) n += c % 2;
  return n;
};

/** The floor page's bytes. */
export function encodeFloorPage(f: HistoryFloor): Uint8Array {
  const proofs = (list: readonly { proof: Uint8Array[] }[]) => list.reduce((n, x) => n + x.proof.length, 0);
  const length =
    4 +
    1 +
    4 +
    8 +
    1 +
    f.frontier.length * HASH_BYTES +
    4 +
    f.hops.length * (8 + HASH_BYTES + 1) +
    proofs(f.hops) * HASH_BYTES +
    4 +
    f.links.length * (8 + 4 + 1) +
    proofs(f.links) * HASH_BYTES;
  const out = new Uint8Array(length);
  const dv = new DataView(out.buffer);
  let at = 0;
  const hash = (h: Uint8Array) => {
    out.set(h, at);
    at += HASH_BYTES;
  };
  const proof = (p: readonly Uint8Array[]) => {
    if (p.length > 255) throw new RangeError('a floor proof holds at most 255 hashes');
    out[at++] = p.length;
    p.forEach(hash);
  };
  out.set(FLOOR_MAGIC);
  out[4] = FLOOR_VERSION;
  dv.setUint32(5, f.generation);
  setU64(dv, 9, f.size);
  out[17] = f.frontier.length;
  at = 18;
  f.frontier.forEach(hash);
  dv.setUint32(at, f.hops.length);
  at += 4;
  for (const h of f.hops) {
    setU64(dv, at, h.size);
    at += 8;
    hash(h.root);
    proof(h.proof);
  }
  dv.setUint32(at, f.links.length);
  at += 4;
  for (const l of f.links) {
    setU64(dv, at, l.size);
    dv.setUint32(at + 8, l.hop);
    at += 12;
    proof(l.proof);
  }
  return out;
}

/**
 * A floor page decoded and checked in its structure (sizes increasing and below the floor, the
 * compact range popcount(F) hashes, nothing left over) for generation `generation` and floor `size`.
 * The proofs are checked by checkFloor.
 * @throws PqdbError CORRUPTION, FORMAT_VERSION
 */
export function decodeFloorPage(page: Uint8Array, generation: number, size: number): HistoryFloor {
  const bad = (why: string): never => {
    throw new PqdbError('CORRUPTION', `the history floor page of generation ${generation} ${why}`);
  };
  if (page.length < 18 || !FLOOR_MAGIC.every((m, i) => page[i] === m)) bad('is not a floor page');
  if (page[4] !== FLOOR_VERSION)
    throw new PqdbError('FORMAT_VERSION', `floor page version ${page[4]} is not supported`);
  const dv = new DataView(page.buffer, page.byteOffset, page.length);
  if (dv.getUint32(5) !== generation) bad(`names generation ${dv.getUint32(5)}`);
  if (getU64(dv, 9) !== size) bad(`names another floor than ${size}`);
  let at = 17;
  const need = (n: number) => {
    if (at + n > page.length) bad('is cut short');
  };
  const hashes = (n: number) => {
    need(n * HASH_BYTES);
    const out: Uint8Array[] = [];
    for (let i = 0; i < n; i++, at += HASH_BYTES) out.push(page.slice(at, at + HASH_BYTES));
    return out;
  };
  const u8 = () => (need(1), page[at++]);
  const u32 = () => (need(4), (at += 4), dv.getUint32(at - 4));
  const u64 = () => (need(8), (at += 8), getU64(dv, at - 8));
  const count = u8();
  if (count !== popcount(size)) bad('has a compact range of another size');
  const frontier = hashes(count);
  const hops: FloorHop[] = [];
  for (let i = 0, n = u32(); i < n; i++) {
    const hopSize = u64();
    if (hopSize >= size || (hops.length > 0 && hopSize <= hops[hops.length - 1].size) || hopSize === 0)
      bad('has earlier floors out of order');
    const [root] = hashes(1);
    hops.push({ size: hopSize, root, proof: hashes(u8()) });
  }
  const links: FloorLink[] = [];
  for (let i = 0, n = u32(); i < n; i++) {
    const linkSize = u64();
    const hop = u32();
    if (hop > hops.length) bad('links a checkpoint to a floor it does not hold');
    const target = hop === hops.length ? size : hops[hop].size;
    if (linkSize > target || (links.length > 0 && linkSize <= links[links.length - 1].size))
      bad('has checkpoint links out of order');
    links.push({ size: linkSize, hop, proof: hashes(u8()) });
  }
  if (at !== page.length) bad('has bytes after its links');
  return { generation, size, frontier, hops, links };
}

/** The root of the log's first `floor.size` leaves. */
export function floorRoot(floor: Pick<HistoryFloor, 'size' | 'frontier'>): Uint8Array {
  return MerkleAppender.fromFrontier(floor.size, floor.frontier).root();
}

/**
 * Checks a floor's chain: each earlier floor's proof to the next verifies against both roots, and
 * each signed checkpoint of the generation below the floor (`signed`: size and root, as signed) has
 * a link whose proof verifies from its signed root to the floor it names. Returns what fails, or
 * undefined. Checkpoints from the floor on are the log's to check (the floor's compact range and the
 * leaves after it give their roots).
 */
export function checkFloor(
  floor: HistoryFloor,
  signed: readonly { size: number; root: Uint8Array }[],
): string | undefined {
  const roots = [...floor.hops.map((h) => h.root), floorRoot(floor)];
  const sizes = [...floor.hops.map((h) => h.size), floor.size];
  for (let i = 0; i < floor.hops.length; i++)
    if (!verifyConsistency(sizes[i], sizes[i + 1], roots[i], roots[i + 1], floor.hops[i].proof))
      return `the proof from the earlier floor at ${sizes[i]} to the one at ${sizes[i + 1]} does not verify`;
  const bySize = new Map(floor.links.map((l) => [l.size, l] as const));
  for (const c of signed) {
    if (c.size >= floor.size || c.size === 0) continue;
    const link = bySize.get(c.size);
    if (link === undefined) return `no link takes the checkpoint of size ${c.size} to the floor`;
    const ok =
      c.size === sizes[link.hop]
        ? equalBytes(c.root, roots[link.hop]) && link.proof.length === 0
        : verifyConsistency(c.size, sizes[link.hop], c.root, roots[link.hop], link.proof);
    if (!ok) return `the link of the checkpoint of size ${c.size} to the floor at ${sizes[link.hop]} does not verify`;
  }
  return undefined;
}

/**
 * The floor that raises `old` (undefined: none yet) to `size`, from `tree`, the generation's tree
 * of exactly `size` leaves (from the old floor on): the compact range at `size`, the old floor as
 * an earlier one with its proof to the new, and a link for every checkpoint size (`signed`) from
 * the old floor up to the new (older ones keep theirs).
 */
export function nextFloor(
  generation: number,
  old: HistoryFloor | undefined,
  tree: MerkleHashTree,
  frontier: Uint8Array[],
  signed: readonly number[],
): HistoryFloor {
  const size = tree.size;
  const from = old?.size ?? 0;
  if (size <= from) throw new RangeError('a floor above the current one expected');
  const hops = [...(old?.hops ?? [])];
  if (old !== undefined) hops.push({ size: from, root: floorRoot(old), proof: tree.consistencyProof(from) });
  // The old links are all below the old floor: the new ones take the sizes from it to the new.
  const links = [...(old?.links ?? [])];
  for (const s of [...new Set(signed)].sort((a, b) => a - b))
    if (s > 0 && s >= from && s < size) links.push({ size: s, hop: hops.length, proof: tree.consistencyProof(s) });
  return { generation, size, frontier, hops, links };
}
