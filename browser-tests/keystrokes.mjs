// Keystroke-to-paint on a page, for the notes app's test and bench (browser-tests/examples.spec.mjs,
// bench/demo.mjs). `keystrokeProbe` is an init script: from `__keys.start()` it times every keydown
// from the event's timestamp to the frame after it (a requestAnimationFrame callback runs just before
// the frame is painted; a message posted from it runs once the frame is done), and keeps what the
// Event Timing API reports (`duration`: input to the next paint, for events of 16 ms and more) and
// every long task (50 ms and more). `keystrokeFigures` turns what `__keys.stop()` returned into
// percentiles.

export function keystrokeProbe() {
  const state = { on: false, paints: [], events: [], tasks: [] };
  addEventListener(
    'keydown',
    (e) => {
      if (!state.on) return;
      const t0 = e.timeStamp;
      requestAnimationFrame(() => {
        const ch = new MessageChannel();
        ch.port1.onmessage = () => state.paints.push(performance.now() - t0);
        ch.port2.postMessage(0);
      });
    },
    true,
  );
  new PerformanceObserver((list) => {
    if (state.on) for (const e of list.getEntries()) if (e.name === 'keydown') state.events.push(e.duration);
  }).observe({ type: 'event', durationThreshold: 16 });
  new PerformanceObserver((list) => {
    if (state.on) for (const e of list.getEntries()) state.tasks.push(e.duration);
  }).observe({ type: 'longtask' });
  globalThis.__keys = {
    start: () => Object.assign(state, { on: true, paints: [], events: [], tasks: [] }),
    stop: async () => {
      await new Promise((r) => setTimeout(r, 100)); // the last frames and observer entries
      state.on = false;
      return { paints: state.paints, events: state.events, tasks: state.tasks };
    },
  };
}

const at = (sorted, q) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
const ms = (v) => Math.round(v * 10) / 10;

/** Percentiles of keystroke-to-paint, the longest Event Timing duration, and the long tasks. */
export function keystrokeFigures({ paints, events, tasks }) {
  const s = [...paints].sort((x, y) => x - y);
  return {
    keys: s.length,
    p50: ms(at(s, 0.5)),
    p99: ms(at(s, 0.99)),
    max: ms(s.at(-1) ?? 0),
    eventTimingMax: ms(Math.max(0, ...events)),
    eventsOver16: events.length,
    longTasks: tasks.length,
    longestTask: ms(Math.max(0, ...tasks)),
  };
}
