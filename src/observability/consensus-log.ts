/**
 * UPSTREAM_CONSENSUS_LOG (docs/consensus.md): one JSON line per attested vote that was
 * disputed, low, or decided against a dissenter, appended in the order the votes ended. The
 * line names the read (route, contract, function, SHA-256 of the arguments), never a value.
 * A failed write never fails the request: it is logged (once until a write succeeds again).
 */
import { appendFile } from 'node:fs/promises';
import type { VoteRecord } from '../upstream/consensus.js';

export class ConsensusLog {
  readonly #path: string;
  readonly #onError: (err: unknown) => void;
  #chain: Promise<void> = Promise.resolve();
  #failing = false;

  constructor(path: string, onError: (err: unknown) => void) {
    this.#path = path;
    this.#onError = onError;
  }

  write(record: VoteRecord): void {
    const line = `${JSON.stringify(record)}\n`;
    this.#chain = this.#chain.then(() =>
      appendFile(this.#path, line).then(
        () => {
          this.#failing = false;
        },
        (err: unknown) => {
          if (!this.#failing) this.#onError(err);
          this.#failing = true;
        },
      ),
    );
  }

  /** Resolves when every line written so far is in the file (or failed). */
  flushed(): Promise<void> {
    return this.#chain;
  }
}
