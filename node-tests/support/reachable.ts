// What an object keeps alive: every byte buffer reachable from it through own properties, internal
// slots ([[Entries]], [[BoundArgs]], …) and the closure scopes of its functions, found through the
// V8 inspector (node:inspector), which sees closure variables that JavaScript itself cannot. The
// defining module's top-level scope is included (a module-level cache counts); other modules,
// reached through import bindings, and the global scope are not. Node only.
import { Session } from 'node:inspector/promises';

interface Walk {
  needles: Uint8Array[];
  except: ArrayBufferLike[];
  seen: WeakSet<object>;
}

const SLOT = '__pqdbReachable';
/** Runs in the inspected context with `this` = the object: 'seen', 'walk', 'skip', 'clean' or 'hit'. */
const CHECK = `function () {
  const w = globalThis.${SLOT};
  if (w.seen.has(this)) return 'seen';
  w.seen.add(this);
  let buf;
  if (ArrayBuffer.isView(this)) buf = this.buffer;
  else if (this instanceof ArrayBuffer) buf = this;
  else return 'walk';
  if (w.except.includes(buf)) return 'skip';
  const u = new Uint8Array(buf);
  for (const n of w.needles) {
    outer: for (let i = 0; i + n.length <= u.length; i++) {
      for (let j = 0; j < n.length; j++) if (u[i + j] !== n[j]) continue outer;
      return 'hit';
    }
  }
  return 'clean';
}`;

/** Internal slots that lead to other modules or to the engine's own machinery rather than to data. */
const SKIP_SLOTS = new Set(['[[Prototype]]', '[[FunctionLocation]]', '[[GeneratorLocation]]']);
/** Scopes not owned by the object: the global object and script-level bindings. */
const SKIP_SCOPES = /^(Global|Script)\b/;
/** Import bindings of a transformed module (vite's SSR transform): other modules. */
const SKIP_NAMES = /^__vite_ssr_|^__vi_/;

/**
 * Paths (e.g. `encrypt.[[Scopes]].Closure (oneShot).k`) to every byte buffer reachable from `root`
 * that contains one of `needles`, skipping buffers in `except` (by identity: the caller's own
 * arrays). An empty result means nothing reachable from `root` holds those bytes.
 */
export async function buffersHolding(
  root: object,
  needles: Uint8Array[],
  except: Uint8Array[] = [],
): Promise<string[]> {
  const g = globalThis as unknown as Record<string, unknown>;
  const walk: Walk = { needles, except: except.map((a) => a.buffer), seen: new WeakSet() };
  g[SLOT] = walk;
  g[`${SLOT}Root`] = root;
  const session = new Session();
  session.connect();
  const hits: string[] = [];
  const scopesSeen = new Set<string>();
  try {
    const { result } = await session.post('Runtime.evaluate', { expression: `globalThis.${SLOT}Root` });
    const queue: { id: string; path: string; internal: boolean }[] = [
      { id: result.objectId!, path: '(root)', internal: false },
    ];
    while (queue.length > 0) {
      const { id, path, internal } = queue.shift()!;
      if (!internal) {
        const r = await session.post('Runtime.callFunctionOn', {
          objectId: id,
          functionDeclaration: CHECK,
          returnByValue: true,
        });
        const verdict = r.result.value as string;
        if (verdict === 'hit') hits.push(path);
        if (verdict !== 'walk') continue;
      }
      const props = await session.post('Runtime.getProperties', { objectId: id, ownProperties: true });
      for (const p of props.result) {
        if (p.value?.objectId === undefined || SKIP_NAMES.test(p.name)) continue;
        const sub = p.value.subtype ?? '';
        if (sub === 'internal#scope') {
          const desc = p.value.description ?? '';
          if (SKIP_SCOPES.test(desc)) continue;
          // A scope has no identity the inspector shows; its description and variable names stand in
          // (the module's top-level scope is reached through each of its functions).
          const vars = await session.post('Runtime.getProperties', { objectId: p.value.objectId, ownProperties: true });
          const key = `${desc}|${vars.result.map((v) => v.name).join(',')}`;
          if (scopesSeen.has(key)) continue;
          scopesSeen.add(key);
          queue.push({ id: p.value.objectId, path: `${path}.${desc}`, internal: true });
          continue;
        }
        queue.push({ id: p.value.objectId, path: `${path}.${p.name}`, internal: sub.startsWith('internal#') });
      }
      for (const p of props.internalProperties ?? []) {
        if (p.value?.objectId === undefined || SKIP_SLOTS.has(p.name)) continue;
        const sub = p.value.subtype ?? '';
        queue.push({ id: p.value.objectId, path: `${path}.${p.name}`, internal: sub.startsWith('internal#') });
      }
    }
  } finally {
    session.disconnect();
    delete g[SLOT];
    delete g[`${SLOT}Root`];
  }
  return hits;
}
