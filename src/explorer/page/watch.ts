/**
 * A watched read: the gateway's subscription (POST /subscriptions), its Server-Sent Events
 * stream read with the browser's EventSource, and its end (DELETE /subscriptions/{id}). It
 * touches no element: the page (main.ts) decides what to show. Whatever the gateway answers or sends, the
 * handlers get it in a known shape, and nothing here throws.
 */
import {
  field,
  isRecord,
  parseJson,
  parseValues,
  readError,
  type ValuesEvent,
  type WatchError,
} from './events.js';
import { streamEndWords } from './words.js';

export type { ReadOutcome, ValuesEvent, WatchError } from './events.js';

/** One read, as an item of POST /contract-calls/batch. */
export interface WatchedRead {
  readonly contractAddress: string;
  readonly contractName: string;
  readonly functionName: string;
  readonly functionArgs: readonly unknown[];
  readonly senderAddress?: string;
}

export interface WatchHandlers {
  /** Every `values` event: the first has every read, later ones only the reads that changed. */
  values(event: ValuesEvent): void;
  /**
   * The watch starts over and full values follow: the gateway's `reset` event (its reason), or the
   * page's own recovery ('slow': the stream is opened again; 'forgotten': a new subscription).
   */
  reset(reason: string): void;
  /** The connection dropped and EventSource is opening it again by itself. */
  reconnecting(): void;
  /** The stream is open (again). */
  open(): void;
  /** The watch is over for good: refused, ended by the gateway, or its stream could not be opened. */
  failed(error: WatchError): void;
}

export interface Watch {
  /** End the watch: close the stream and delete the subscription (best effort). Idempotent. */
  stop(): void;
}

const subscriptionUrl = (baseUrl: string, id: string, tail = '') =>
  new URL(`subscriptions/${encodeURIComponent(id)}${tail}`, baseUrl).href;

/** DELETE /subscriptions/{id}, best effort: kept alive so that it still goes out as the page unloads. */
function deleteSubscription(baseUrl: string, headers: Record<string, string>, id: string): void {
  try {
    fetch(subscriptionUrl(baseUrl, id), { method: 'DELETE', headers, keepalive: true }).catch(() => {});
  } catch {
    // Nothing to do: the gateway ends an abandoned watch on its own.
  }
}

/**
 * Subscribe to `read` and follow its events. `baseUrl` is the gateway's (the page's directory);
 * `headers` go with the subscription's requests (the API key), never with the stream, which
 * EventSource opens without headers: its id is its credential.
 *
 * EventSource resumes a dropped stream by itself (with Last-Event-ID). Beyond that, a watch that
 * was working recovers once from what ends a stream without ending the watch: a stream dropped
 * because the page fell behind (SLOW_CONSUMER) is opened again, and a stream refused outright
 * (a gateway restarted without its subscriptions) gets a new subscription. A NOT_FOUND event is
 * a deletion, and ends the watch; so does anything that happens before a first value.
 */
export function startWatch(
  baseUrl: string,
  headers: Record<string, string>,
  read: WatchedRead,
  handlers: WatchHandlers,
): Watch {
  let over = false;
  let id: string | undefined;
  let source: EventSource | undefined;
  /** A values event came on the stream now open: the watch worked, and may recover once. */
  let delivered = false;

  const end = (deleteIt: boolean) => {
    over = true;
    source?.close();
    if (deleteIt && id !== undefined) deleteSubscription(baseUrl, headers, id);
  };
  const fail = (error: WatchError, deleteIt = true) => {
    if (over) return;
    end(deleteIt);
    handlers.failed(error);
  };

  const follow = (subscription: string) => {
    source?.close();
    delivered = false;
    // Built from the id beside the page, as every other request of the page is, rather than
    // from the answer's absolute `events` path: a gateway behind a path prefix keeps working.
    const es = new EventSource(subscriptionUrl(baseUrl, subscription, '/events'));
    source = es;
    const live = () => !over && source === es;
    es.addEventListener('open', () => {
      if (live()) handlers.open();
    });
    es.addEventListener('values', (event) => {
      const values = parseValues((event as MessageEvent<string>).data);
      if (!live() || values === undefined) return;
      delivered = true;
      handlers.values(values);
    });
    es.addEventListener('reset', (event) => {
      if (live()) handlers.reset(field((event as MessageEvent<string>).data, 'reason'));
    });
    es.addEventListener('error', (event) => {
      if (!live()) return;
      // An `error` event the gateway sent (it has data) ends the stream: EventSource must not
      // open it again. A failed connection is a plain Event, and EventSource retries it itself
      // unless the gateway refused the stream outright (readyState CLOSED).
      if (event instanceof MessageEvent && typeof event.data === 'string') {
        es.close();
        const code = field(event.data, 'code') || 'ERROR';
        if (code === 'SLOW_CONSUMER' && delivered) {
          handlers.reset('slow');
          follow(subscription);
        } else {
          fail({ code, message: streamEndWords(code) }, code !== 'NOT_FOUND');
        }
      } else if (es.readyState === EventSource.CLOSED) {
        if (delivered) {
          handlers.reset('forgotten');
          deleteSubscription(baseUrl, headers, subscription);
          id = undefined;
          void subscribe();
        } else {
          fail({ code: 'NETWORK_ERROR', message: 'the gateway refused to open the watch’s event stream' });
        }
      } else {
        handlers.reconnecting();
      }
    });
  };

  const subscribe = async () => {
    source?.close();
    source = undefined;
    let status = 0;
    let body: unknown;
    try {
      const res = await fetch(new URL('subscriptions', baseUrl).href, {
        method: 'POST',
        headers: { accept: 'application/json', 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ reads: [read] }, (_key, v: unknown) =>
          typeof v === 'bigint' ? v.toString() : v,
        ),
      });
      status = res.status;
      body = parseJson(await res.text());
    } catch (err) {
      fail({ code: 'NETWORK_ERROR', message: err instanceof Error ? err.message : String(err) });
      return;
    }
    const data = isRecord(body) && body['success'] === true ? body['data'] : undefined;
    const subscription = isRecord(data) ? data['id'] : undefined;
    if (typeof subscription !== 'string' || subscription === '') {
      const error =
        isRecord(body) && body['success'] === false ? readError(body['error'], status) : undefined;
      fail(
        error ?? {
          code: 'NETWORK_ERROR',
          message: `the gateway answered HTTP ${status} without a subscription`,
          status,
        },
      );
      return;
    }
    // Turned off while the gateway was answering: the subscription it made is deleted at once.
    if (over) {
      deleteSubscription(baseUrl, headers, subscription);
      return;
    }
    id = subscription;
    follow(id);
  };

  // Begun on the next microtask: the handlers never run before the caller has its Watch.
  void Promise.resolve().then(subscribe);

  return {
    stop() {
      if (!over) end(true);
    },
  };
}
