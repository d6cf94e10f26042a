// The fork-and-SIGKILL harness of the crash tests: forks a child with an IPC channel, hands each
// message it sends to `onMessage` with a `kill(afterMs)` that SIGKILLs it (at once or after a delay),
// and resolves once the child has died of that signal. Any other end (the child threw, or exited
// before it was killed) rejects with its exit code and stderr.

import { fork } from 'node:child_process';

/** SIGKILLs the child now (no argument) or `afterMs` from now; later calls do nothing. */
export type Kill = (afterMs?: number) => void;

export interface KillOptions {
  /** Where the child's stdout goes (default: nowhere). */
  stdout?: 'ignore' | 'inherit';
  /** The child's working directory (default: this process's). */
  cwd?: string;
}

export function runUntilKilled<M>(
  script: string | URL,
  args: readonly string[],
  onMessage: (message: M, kill: Kill) => void,
  options: KillOptions = {},
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = fork(script, [...args], {
      stdio: ['ignore', options.stdout ?? 'ignore', 'pipe', 'ipc'],
      cwd: options.cwd,
    });
    let stderr = '';
    child.stderr?.on('data', (d) => (stderr += d));
    let armed = false;
    const kill: Kill = (afterMs) => {
      if (armed) return;
      armed = true;
      if (afterMs === undefined) child.kill('SIGKILL');
      else setTimeout(() => child.kill('SIGKILL'), afterMs);
    };
    child.on('message', (m) => onMessage(m as M, kill));
    child.on('error', reject);
    child.on('close', (code, signal) =>
      signal === 'SIGKILL' ? resolve() : reject(new Error(`${String(script)} exited with ${code}: ${stderr}`)),
    );
  });
}
