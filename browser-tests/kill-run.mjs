// Kills in Chromium (browser-tests/kill.spec.mjs, and bench/kill.mjs for the long run): a page writes
// to a store in its dedicated worker on OPFS (browser-tests/page/kill.ts), and at a random moment
// inside its stream of commits the test kills its renderer process (chrome://kill), closes
// its target (`Target.closeTarget`, as a tab closed with no unload), or the page terminates its
// worker. After each kill a fresh worker verifies the store as it lies (every page, the manifest,
// every record opened) and reads it all: every acknowledged write must be there with its value, and
// nothing that was never written. The same store goes through every round.
import { generateRecipient, generateSigner } from '../dist/node.js';

const KINDS = ['crash', 'close', 'terminate'];

/**
 * `rounds` kills of writers to one store in `context` (`base`: the test server's URL; `seed`: the
 * random delays). Returns the figures and every problem found.
 */
export async function kills(context, rounds, { base = '', seed = 1, maxDelayMs = 400 } = {}) {
  const recipient = generateRecipient();
  const signer = generateSigner();
  const keys = {
    unlock: Array.from(recipient.secretKey),
    recipient: Array.from(recipient.publicKey),
    signer: Array.from(signer.secretKey),
    signerPublicKey: Array.from(signer.publicKey),
  };
  const name = `kill-${Date.now().toString(36)}`;
  let s = seed >>> 0 || 1;
  const rand = (n) => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) % n;
  };
  const acked = new Set();
  /** Ids sent in an earlier round, neither acknowledged nor found after it: they must never appear. */
  const gone = new Set();
  let next = 0;
  const problems = [];
  const perKind = Object.fromEntries(KINDS.map((k) => [k, 0]));
  let inFlightKept = 0;
  for (let round = 0; round < rounds; round++) {
    const kind = KINDS[round % KINDS.length];
    const delay = 20 + rand(maxDelayMs);
    const page = await context.newPage();
    let maxSent = -1;
    let ackedNow = 0;
    await page.exposeFunction('pqdbSending', (ids) => {
      maxSent = Math.max(maxSent, ...ids);
    });
    await page.exposeFunction('pqdbAcked', (ids) => {
      for (const id of ids) acked.add(id);
      ackedNow += ids.length;
    });
    await page.goto(`${base}/kill`);
    const from = next;
    const writing = page.evaluate((o) => globalThis.pqdbKill.write(o).catch((e) => `stopped: ${e?.code ?? e}`), {
      name,
      from,
      ...keys,
      terminateAfterMs: kind === 'terminate' ? delay : undefined,
    });
    let settled;
    writing.then(
      (v) => (settled = v),
      () => undefined, // the page dies under it
    );
    await page.waitForFunction(() => globalThis.pqdbOpen === true, null, { timeout: 30_000 });
    if (kind !== 'terminate') {
      await page.waitForTimeout(delay);
      if (kind === 'crash') {
        // A renderer debug URL: the browser kills the page's renderer process, its worker with it
        // (the DevTools protocol's Page.crash takes this headless browser down with it).
        await page.goto('chrome://kill').catch(() => undefined);
      } else {
        const cdp = await context.newCDPSession(page);
        const { targetInfo } = await cdp.send('Target.getTargetInfo');
        await cdp
          .send('Target.closeTarget', { targetId: targetInfo.targetId })
          .catch(() => page.close({ runBeforeUnload: false }));
      }
    } else {
      await Promise.race([writing, page.waitForTimeout(delay + 2_000)]);
    }
    // The writer was still writing when it was killed (it stops only by dying).
    if (settled !== undefined)
      problems.push(`round ${round} (${kind}): the writer stopped before the kill: ${settled}`);
    if (ackedNow === 0)
      problems.push(`round ${round} (${kind} after ${delay} ms): no write was acknowledged before the kill`);
    await page.close().catch(() => undefined);
    perKind[kind]++;
    // Every id this round sent is at most maxSent (reported before each write).
    next = Math.max(from, maxSent + 1);

    const reader = await context.newPage();
    await reader.goto(`${base}/kill`);
    const r = await reader.evaluate((o) => globalThis.pqdbKill.check(o), {
      name,
      unlock: keys.unlock,
      signerPublicKey: keys.signerPublicKey,
    });
    await reader.close();
    if (!r.ok) problems.push(`round ${round} (${kind} after ${delay} ms): does not verify: ${r.problems.join('; ')}`);
    const held = new Map(r.records);
    for (const id of acked)
      if (held.get(`k${id}`) !== id) problems.push(`round ${round} (${kind}): acknowledged k${id} missing or wrong`);
    for (const [id, n] of held) {
      if (id !== `k${n}` || n >= next) problems.push(`round ${round} (${kind}): ${id} = ${n} was never written`);
      else if (gone.has(n)) problems.push(`round ${round} (${kind}): ${id}, missing after its round, came back`);
      else if (!acked.has(n)) {
        inFlightKept++;
        acked.add(n); // committed though its acknowledgement never arrived: it must stay from now on
      }
    }
    for (let n = from; n < next; n++) if (!acked.has(n)) gone.add(n); // sent, not committed: never to appear
  }
  return { rounds, perKind, acknowledged: acked.size, inFlightKept, problems, next };
}
