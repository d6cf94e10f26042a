// The browser engine a test page runs in, for the names of its summaries.
export const engineName = /Firefox\//.test(navigator.userAgent)
  ? 'Firefox'
  : /Chrome\//.test(navigator.userAgent)
    ? 'Chromium'
    : 'WebKit';
