/**
 * A queue served round-robin across clients and first come, first served within one client
 * (extensions.md section 7): one client's burst of misses cannot push every other client's
 * requests behind it while the budget is short. Each client's items are a FIFO; shift() takes
 * the head of the next client in turn. A client enters the rotation at its end when its first
 * item arrives and leaves it when its last one is taken or removed.
 */
export class FairQueue<T> {
  readonly #byClient = new Map<string, T[]>();
  /** Clients with items, in rotation order; #next is the one whose turn comes next. */
  #rotation: string[] = [];
  #next = 0;
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
      // Joins the end of the rotation: before the client whose turn is next.
      this.#rotation.splice(this.#next, 0, client);
      this.#next += 1;
      if (this.#next >= this.#rotation.length) this.#next = 0;
    }
    items.push(item);
    this.#size += 1;
  }

  /** The next item in round-robin order. */
  shift(): T | undefined {
    if (this.#rotation.length === 0) return undefined;
    if (this.#next >= this.#rotation.length) this.#next = 0;
    const client = this.#rotation[this.#next]!;
    const items = this.#byClient.get(client)!;
    const item = items.shift()!;
    this.#size -= 1;
    if (items.length === 0) {
      this.#byClient.delete(client);
      this.#rotation.splice(this.#next, 1);
    } else {
      this.#next += 1;
    }
    if (this.#next >= this.#rotation.length) this.#next = 0;
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
    if (items.length === 0) {
      this.#byClient.delete(client);
      const r = this.#rotation.indexOf(client);
      this.#rotation.splice(r, 1);
      if (r < this.#next) this.#next -= 1;
      if (this.#next >= this.#rotation.length) this.#next = 0;
    }
    return true;
  }
}
