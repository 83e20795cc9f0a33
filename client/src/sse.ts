/**
 * A parser of Server-Sent Events streams (`text/event-stream`) as the HTML standard's
 * EventSource reads them, for a stream fetched with fetch: no EventSource is needed, so the
 * same code runs in browsers, Node 18+, Deno and Bun, and it can send headers (an API key,
 * Last-Event-ID) that EventSource cannot.
 *
 * What it follows of the standard's interpretation rules:
 * - lines end with CRLF, LF or CR alone; chunks may split the stream anywhere, including
 *   between a CR and its LF and inside a multi-byte UTF-8 character (bytes are decoded with a
 *   streaming TextDecoder, which also drops a leading byte order mark);
 * - a blank line dispatches the event being built: its `data` lines joined by LF, its `event`
 *   type ("message" when none), and the last event id, which persists from one event to the
 *   next until an `id` line changes it; an event without data is not dispatched;
 * - a line starting with ":" is a comment; a field without ":" has the empty value; one space
 *   after the colon is dropped; `id` values containing NUL are ignored; `retry` is honoured only
 *   when it is all ASCII digits; unknown fields are ignored;
 * - an event not ended by a blank line when the stream ends is dropped.
 */

export interface SseEvent {
  /** The `event` field, "message" when the event had none. */
  readonly type: string;
  /** The `data` lines joined by "\n". */
  readonly data: string;
  /** The last event id at dispatch: this event's `id` or, without one, the latest before it. */
  readonly id: string;
}

export interface SseHandlers {
  readonly onEvent: (event: SseEvent) => void;
  /** A `retry` field: the reconnection time the server asks for, in ms. */
  readonly onRetry?: (ms: number) => void;
}

export interface SseParser {
  /** Feed the next piece of the stream as bytes (UTF-8). */
  bytes(chunk: Uint8Array): void;
  /** Feed the next piece of the stream as already decoded text. */
  text(chunk: string): void;
  /** The last event id as of the last complete event (what Last-Event-ID names on a reconnection). */
  readonly lastEventId: string;
}

const LINE_END = /[\r\n]/g;

/** A parser for one connection; `lastEventId` starts the id buffer (the standard keeps it across reconnections). */
export function createSseParser(handlers: SseHandlers, lastEventId = ''): SseParser {
  const decoder = new TextDecoder('utf-8');
  /** The current line so far, when a chunk ended inside it. */
  let partial = '';
  /** The previous chunk ended with CR: an LF starting the next one belongs to that line end. */
  let skipLf = false;
  let data = '';
  let hasData = false;
  let type = '';
  let idBuffer = lastEventId;
  /** The id as of the last blank line: an id line of an event cut off by a drop does not count. */
  let lastId = lastEventId;

  const field = (line: string): void => {
    if (line === '') {
      lastId = idBuffer;
      if (hasData) {
        const event: SseEvent = { type: type === '' ? 'message' : type, data, id: idBuffer };
        data = '';
        hasData = false;
        type = '';
        handlers.onEvent(event);
      } else {
        data = '';
        type = '';
      }
      return;
    }
    if (line.charCodeAt(0) === 0x3a /* ':' */) return;
    const colon = line.indexOf(':');
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20 /* ' ' */) value = value.slice(1);
    switch (name) {
      case 'event':
        type = value;
        break;
      case 'data':
        data = hasData ? `${data}\n${value}` : value;
        hasData = true;
        break;
      case 'id':
        if (!value.includes('\0')) idBuffer = value;
        break;
      case 'retry':
        if (/^[0-9]+$/.test(value)) handlers.onRetry?.(Number(value));
        break;
      default:
        break;
    }
  };

  const text = (chunk: string): void => {
    let pos = 0;
    if (skipLf && chunk.length > 0) {
      if (chunk.charCodeAt(0) === 0x0a) pos = 1;
      skipLf = false;
    }
    while (pos < chunk.length) {
      LINE_END.lastIndex = pos;
      const found = LINE_END.exec(chunk);
      if (found === null) {
        partial += chunk.slice(pos);
        return;
      }
      const end = found.index;
      const line = partial + chunk.slice(pos, end);
      partial = '';
      pos = end + 1;
      if (chunk.charCodeAt(end) === 0x0d) {
        if (pos === chunk.length) skipLf = true;
        else if (chunk.charCodeAt(pos) === 0x0a) pos++;
      }
      field(line);
    }
  };

  return {
    bytes: (chunk) => text(decoder.decode(chunk, { stream: true })),
    text,
    get lastEventId() {
      return lastId;
    },
  };
}
