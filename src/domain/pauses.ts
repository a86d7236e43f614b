// How the background workers wait: between passes, in a pause that a wake cuts short (a write
// committed, a stop), and at a stop, for their work in hand only up to a bound (a database that
// stopped answering must not hang a shutdown).

export interface WakeablePause {
  /** Resolves after `ms`, or at once when `wake` is called meanwhile. */
  pause(ms: number): Promise<void>;
  /** Ends the pause under way, if any (its timer is cancelled). */
  wake(): void;
}

export function wakeablePause(): WakeablePause {
  let wakeUp: (() => void) | null = null;
  return {
    pause: (ms) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          wakeUp = null;
          resolve();
        }, ms);
        wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      }),
    wake() {
      const w = wakeUp;
      wakeUp = null;
      w?.();
    },
  };
}

/** Waits for `work` to settle, or `ms` at most. */
export async function waitAtMost(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  await Promise.race([work.then(() => undefined, () => undefined), bound]);
  clearTimeout(timer);
}
