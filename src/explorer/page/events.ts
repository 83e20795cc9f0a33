/**
 * What a watched read's gateway answers and sends, read into known shapes: the items of its
 * `values` events, the fields of its other events, the errors of its envelopes. Pure functions,
 * no DOM: unit-tested on their own. Nothing the gateway sends makes them throw.
 */

/** An error as the gateway's envelopes carry it, or as the page words a failure of its own. */
export interface WatchError {
  readonly code: string;
  readonly message: string;
  /** HTTP status of the refusal; absent for errors that came in the stream. */
  readonly status?: number | undefined;
  readonly details?: Record<string, unknown> | undefined;
  readonly id?: string | undefined;
}

/** The read's outcome at one block: its decoded value, or the error a call would have answered. */
export type ReadOutcome =
  | { readonly value: unknown; readonly raw: string | undefined }
  | { readonly error: WatchError };

/** A `values` event: the tip it was read at and the outcomes it carries, by read index. */
export interface ValuesEvent {
  readonly tipHeight: number;
  readonly indexBlockHash: string;
  readonly outcomes: ReadonlyMap<number, ReadOutcome>;
}

/** A JSON object (not an array, not null). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The JSON in `text`, or undefined when there is none. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** An error object of an envelope or a stream item; undefined when it is not one. */
export function readError(v: unknown, status?: number): WatchError | undefined {
  if (typeof v === 'string') return { code: 'ERROR', message: v, status };
  if (!isRecord(v) || typeof v['code'] !== 'string') return undefined;
  return {
    code: v['code'],
    message: typeof v['message'] === 'string' ? v['message'] : v['code'],
    status: typeof v['status'] === 'number' ? v['status'] : status,
    details: isRecord(v['details']) ? v['details'] : undefined,
    id: typeof v['id'] === 'string' ? v['id'] : undefined,
  };
}

/** A `values` event's data; undefined when it is not one (such an event is ignored). */
export function parseValues(data: string): ValuesEvent | undefined {
  const body = parseJson(data);
  if (!isRecord(body) || typeof body['tipHeight'] !== 'number' || !Array.isArray(body['values'])) return;
  const outcomes = new Map<number, ReadOutcome>();
  for (const item of body['values'] as unknown[]) {
    if (!isRecord(item) || typeof item['index'] !== 'number') continue;
    if ('error' in item) {
      outcomes.set(item['index'], {
        error: readError(item['error']) ?? {
          code: 'ERROR',
          message: JSON.stringify(item['error']) ?? 'the read failed, and the gateway did not say why',
        },
      });
    } else if ('value' in item) {
      outcomes.set(item['index'], {
        value: item['value'],
        raw: typeof item['raw'] === 'string' ? item['raw'] : undefined,
      });
    }
  }
  const hash = body['indexBlockHash'];
  return { tipHeight: body['tipHeight'], indexBlockHash: typeof hash === 'string' ? hash : '', outcomes };
}

/** A field of an event's JSON data, as text ('' when absent). */
export function field(data: string, name: string): string {
  const body = parseJson(data);
  const v = isRecord(body) ? body[name] : undefined;
  return typeof v === 'string' ? v : '';
}
