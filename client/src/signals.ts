/**
 * Abort signals the client combines: a caller's signal with a timeout, a watch's stop with one
 * connection. AbortSignal.any would do, but Node 18 (which the package supports) lacks it.
 */

export interface LinkedSignal {
  readonly signal: AbortSignal;
  /** Abort this one alone (the sources are left as they are). */
  abort(reason?: unknown): void;
  /** Stop listening to the sources: a long-lived source would otherwise keep a listener per link. */
  release(): void;
}

/** A signal aborted when any source is (with its reason), or by its own abort(). */
export function linkSignals(sources: ReadonlyArray<AbortSignal | undefined>): LinkedSignal {
  const controller = new AbortController();
  const unlinks: Array<() => void> = [];
  const release = () => {
    for (const unlink of unlinks.splice(0)) unlink();
  };
  for (const source of sources) {
    if (source === undefined) continue;
    if (source.aborted) {
      controller.abort(source.reason);
      break;
    }
    const onAbort = () => {
      release();
      controller.abort(source.reason);
    };
    source.addEventListener('abort', onAbort, { once: true });
    unlinks.push(() => source.removeEventListener('abort', onAbort));
  }
  if (controller.signal.aborted) release();
  return {
    signal: controller.signal,
    abort: (reason) => {
      release();
      controller.abort(reason);
    },
    release,
  };
}

/** Wait `ms`; resolves false at once if `signal` aborts first (nothing is thrown). */
export function sleepUnlessAborted(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
