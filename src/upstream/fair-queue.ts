/**
 * A queue served round-robin across clients and first come, first served within one client
 * (docs/upstreams.md): one client's burst of misses cannot push every other client's
 * requests behind it while the budget is short.
 *
 * Each client's items are a FIFO. shift() serves the client that was served least recently
 * (a client never served, or not for a long time, comes first; ties go to the earlier
 * arrival), which is round-robin when several clients keep items queued, and lets a newcomer go
 * next instead of behind a turn the busy client took while the newcomer was not there yet.
 * When a client's queue empties its last service is remembered (bounded), so a client cannot
 * jump the line by draining and coming back.
 */
const REMEMBERED_CLIENTS = 10_000;

export class FairQueue<T> {
  /** Clients with items, in order of arrival of their current run of items. */
  readonly #byClient = new Map<string, T[]>();
  /** Service counter value of each client's last shift(), oldest first. */
  readonly #lastServed = new Map<string, number>();
  #served = 0;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** Items of one client still queued. */
  countOf(client: string): number {
    return this.#byClient.get(client)?.length ?? 0;
  }

  push(client: string, item: T): void {
    let items = this.#byClient.get(client);
    if (items === undefined) {
      items = [];
      this.#byClient.set(client, items);
    }
    items.push(item);
    this.#size += 1;
  }

  /** The next item: the head of the least recently served client's queue. */
  shift(): T | undefined {
    let pick: string | undefined;
    let pickServed = Number.POSITIVE_INFINITY;
    for (const client of this.#byClient.keys()) {
      const served = this.#lastServed.get(client) ?? Number.NEGATIVE_INFINITY;
      if (served < pickServed) {
        pick = client;
        pickServed = served;
      }
    }
    if (pick === undefined) return undefined;
    const items = this.#byClient.get(pick)!;
    const item = items.shift()!;
    this.#size -= 1;
    if (items.length === 0) this.#byClient.delete(pick);
    this.#served += 1;
    // Re-inserted so the map stays ordered oldest service first, for the bound below.
    this.#lastServed.delete(pick);
    this.#lastServed.set(pick, this.#served);
    if (this.#lastServed.size > REMEMBERED_CLIENTS) {
      const oldest = this.#lastServed.keys().next().value;
      if (oldest !== undefined && !this.#byClient.has(oldest)) this.#lastServed.delete(oldest);
    }
    return item;
  }

  /** Take an item out wherever it is (its waiter gave up). */
  remove(client: string, item: T): boolean {
    const items = this.#byClient.get(client);
    if (items === undefined) return false;
    const i = items.indexOf(item);
    if (i < 0) return false;
    items.splice(i, 1);
    this.#size -= 1;
    if (items.length === 0) this.#byClient.delete(client);
    return true;
  }
}
