/**
 * Use of each API key (docs/access-control.md), by its name (never the key): a Prometheus
 * counter of admitted and refused requests, and this instance's counts in the current
 * one-minute window for the admin view. Counting is a map update on the hit path; the
 * counter is published from the tallies at scrape time.
 */
import { Counter, type Registry } from 'prom-client';

const WINDOW_MS = 60_000;

interface Tally {
  admitted: number;
  refused: number;
  windowStart: number;
  windowAdmitted: number;
  windowRefused: number;
}

export interface KeyUse {
  readonly name: string;
  /** Since start, on this instance. */
  readonly admitted: number;
  readonly refused: number;
  /** The current minute (epoch ms of its start) and its counts on this instance. */
  readonly windowStart: number;
  readonly windowAdmitted: number;
  readonly windowRefused: number;
}

export class KeyMetrics {
  readonly #tallies = new Map<string, Tally>();
  readonly #now: () => number;

  constructor(registry: Registry, now: () => number = Date.now) {
    this.#now = now;
    const tallies = this.#tallies;
    new Counter({
      name: 'clarity_cache_api_key_requests_total',
      help: 'API requests made with each API key (by its name), admitted or refused by its quota',
      labelNames: ['key', 'outcome'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [key, t] of tallies) {
          if (t.admitted > 0) this.inc({ key, outcome: 'admitted' }, t.admitted);
          if (t.refused > 0) this.inc({ key, outcome: 'refused' }, t.refused);
        }
      },
    });
  }

  record(name: string, admitted: boolean): void {
    const now = this.#now();
    let t = this.#tallies.get(name);
    if (t === undefined) {
      t = { admitted: 0, refused: 0, windowStart: now, windowAdmitted: 0, windowRefused: 0 };
      this.#tallies.set(name, t);
    }
    if (now - t.windowStart >= WINDOW_MS) {
      t.windowStart = now - ((now - t.windowStart) % WINDOW_MS);
      t.windowAdmitted = 0;
      t.windowRefused = 0;
    }
    if (admitted) {
      t.admitted++;
      t.windowAdmitted++;
    } else {
      t.refused++;
      t.windowRefused++;
    }
  }

  /** Each named key's use; keys never used show zeros. */
  uses(names: readonly string[]): KeyUse[] {
    const now = this.#now();
    return names.map((name) => {
      const t = this.#tallies.get(name);
      if (t === undefined)
        return { name, admitted: 0, refused: 0, windowStart: now, windowAdmitted: 0, windowRefused: 0 };
      const current = now - t.windowStart < WINDOW_MS;
      return {
        name,
        admitted: t.admitted,
        refused: t.refused,
        windowStart: current ? t.windowStart : now,
        windowAdmitted: current ? t.windowAdmitted : 0,
        windowRefused: current ? t.windowRefused : 0,
      };
    });
  }
}
