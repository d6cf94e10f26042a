// Chromium's flags for the tests and the browser benches: no sandbox (root in CI), no GPU, no
// background networking, component updates, sync or QUIC, no first-run work.
export const CHROMIUM_ARGS = Object.freeze([
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--no-first-run',
]);
