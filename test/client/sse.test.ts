/**
 * The client's Server-Sent Events parser (client/src/sse.ts) against the interpretation rules
 * of the HTML standard's EventSource, and the property that matters on a network: however the
 * stream is cut into chunks (between a CR and its LF, inside a UTF-8 character), it parses to
 * the same events.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSseParser, type SseEvent } from '../../client/src/sse.js';

interface Parsed {
  readonly events: SseEvent[];
  readonly retries: number[];
  readonly lastEventId: string;
}

function parseChunks(chunks: ReadonlyArray<string | Uint8Array>, startId = ''): Parsed {
  const events: SseEvent[] = [];
  const retries: number[] = [];
  const parser = createSseParser(
    { onEvent: (e) => events.push(e), onRetry: (ms) => retries.push(ms) },
    startId,
  );
  for (const chunk of chunks) {
    if (typeof chunk === 'string') parser.text(chunk);
    else parser.bytes(chunk);
  }
  return { events, retries, lastEventId: parser.lastEventId };
}

const parse = (text: string) => parseChunks([text]);

describe('the SSE parser', () => {
  it('reads an event: type, data and id', () => {
    expect(parse('event: values\nid: 5:ab\ndata: {"a":1}\n\n').events).toEqual([
      { type: 'values', data: '{"a":1}', id: '5:ab' },
    ]);
  });

  it('joins data lines with LF and types an event without `event` as "message"', () => {
    expect(parse('data: one\ndata:two\ndata:  three\n\n').events).toEqual([
      { type: 'message', data: 'one\ntwo\n three', id: '' },
    ]);
  });

  it('takes LF, CRLF and CR alone as line ends, mixed in one stream', () => {
    const { events } = parse('data: a\r\ndata: b\rdata: c\n\r\nevent: x\rdata: d\r\r');
    expect(events).toEqual([
      { type: 'message', data: 'a\nb\nc', id: '' },
      { type: 'x', data: 'd', id: '' },
    ]);
  });

  it('ignores comments, unknown fields and a field named without a colon', () => {
    const { events } = parse(': keep-alive\n:\nfoo: bar\ndata\n\ndata: x\nbogus\n\n');
    // `data` without a colon is a data line with the empty value: an event whose data is "".
    expect(events).toEqual([
      { type: 'message', data: '', id: '' },
      { type: 'message', data: 'x', id: '' },
    ]);
  });

  it('dispatches nothing for an event without data, and resets its type', () => {
    const { events } = parse('event: reset\n\nid: 7\n\ndata: after\n\n');
    expect(events).toEqual([{ type: 'message', data: 'after', id: '7' }]);
  });

  it('keeps the last event id for the events after it, until an id line changes it', () => {
    const { events, lastEventId } = parse('id: 1:aa\ndata: a\n\ndata: b\n\nid\ndata: c\n\n');
    expect(events.map((e) => e.id)).toEqual(['1:aa', '1:aa', '']);
    expect(lastEventId).toBe('');
    expect(parseChunks(['event: reset\ndata: {}\n\n'], '9:ff').events).toEqual([
      { type: 'reset', data: '{}', id: '9:ff' },
    ]);
  });

  it('ignores an id containing NUL and a retry that is not all digits', () => {
    const r = parse('id: 3\ndata: a\n\nid: 4\0x\nretry: 1.5\nretry: 2s\nretry: -1\ndata: b\n\nretry: 2000\n');
    expect(r.events.map((e) => e.id)).toEqual(['3', '3']);
    expect(r.retries).toEqual([2000]);
  });

  it('drops one space after the colon, no more', () => {
    expect(parse('data:  two spaces\n\n').events[0]!.data).toBe(' two spaces');
    expect(parse('event:values\ndata:x\n\n').events[0]!.type).toBe('values');
  });

  it('drops an event the stream ended inside, and its id', () => {
    const r = parse('id: 1\ndata: a\n\nid: 2\ndata: b\n');
    expect(r.events).toEqual([{ type: 'message', data: 'a', id: '1' }]);
    expect(r.lastEventId).toBe('1');
  });

  it('drops a leading byte order mark and decodes UTF-8 split inside a character', () => {
    const bytes = new TextEncoder().encode('\uFEFFdata: é€😀\n\n');
    const chunks = Array.from(bytes, (b) => Uint8Array.of(b));
    expect(parseChunks(chunks).events).toEqual([{ type: 'message', data: 'é€😀', id: '' }]);
  });
});

/** A stream as a server writes it: events, comments and retry lines, one line end throughout. */
const lineText = fc.string({ unit: 'grapheme', maxLength: 12 }).map((s) => s.replace(/[\r\n\0]/g, '_'));
const eventArb = fc.record({
  type: fc.option(fc.constantFrom('values', 'reset', 'error', 'x-y'), { nil: undefined }),
  id: fc.option(fc.stringMatching(/^[0-9]{1,4}:[0-9a-f]{0,8}$/), { nil: undefined }),
  data: fc.array(lineText, { minLength: 1, maxLength: 4 }),
  comment: fc.option(lineText, { nil: undefined }),
  retry: fc.option(fc.nat(100_000), { nil: undefined }),
});
const streamArb = fc.record({
  events: fc.array(eventArb, { maxLength: 8 }),
  eol: fc.constantFrom('\n', '\r\n', '\r'),
});

/** Cut points into `length` units: any number, anywhere, including repeated (empty chunks). */
const cutsArb = fc.array(fc.nat(), { maxLength: 20 });
function cut<T extends string | Uint8Array>(whole: T, cuts: readonly number[]): T[] {
  const points = cuts.map((c) => c % (whole.length + 1)).sort((a, b) => a - b);
  const out: T[] = [];
  let from = 0;
  for (const p of [...points, whole.length]) {
    out.push(whole.slice(from, p) as T);
    from = p;
  }
  return out;
}

describe('the SSE parser, whatever the chunks', () => {
  it('parses any split of a valid stream, as text or as bytes, to the events written', () => {
    fc.assert(
      fc.property(streamArb, cutsArb, cutsArb, ({ events, eol }, textCuts, byteCuts) => {
        let text = '';
        const expected: SseEvent[] = [];
        const retries: number[] = [];
        let id = '';
        for (const e of events) {
          if (e.comment !== undefined) text += `:${e.comment}${eol}`;
          if (e.retry !== undefined) {
            text += `retry: ${e.retry}${eol}`;
            retries.push(e.retry);
          }
          if (e.type !== undefined) text += `event: ${e.type}${eol}`;
          if (e.id !== undefined) {
            text += `id: ${e.id}${eol}`;
            id = e.id;
          }
          for (const line of e.data) text += `data: ${line}${eol}`;
          text += eol;
          expected.push({ type: e.type ?? 'message', data: e.data.join('\n'), id });
        }
        const want: Parsed = { events: expected, retries, lastEventId: id };
        expect(parseChunks([text])).toEqual(want);
        expect(parseChunks(cut(text, textCuts))).toEqual(want);
        expect(parseChunks(cut(new TextEncoder().encode(text), byteCuts))).toEqual(want);
      }),
      { numRuns: 500 },
    );
  });

  it('parses any text the same whole and in pieces', () => {
    const unit = fc.constantFrom('\r', '\n', ':', ' ', 'data', 'event', 'id', 'retry', '1', 'x', 'é', '\0');
    fc.assert(
      fc.property(fc.array(unit, { maxLength: 60 }), cutsArb, (units, cuts) => {
        const text = units.join('');
        expect(parseChunks(cut(text, cuts))).toEqual(parseChunks([text]));
      }),
      { numRuns: 1000 },
    );
  });
});
