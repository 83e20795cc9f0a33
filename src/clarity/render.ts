/**
 * ClarityValue -> plain JSON, by the rules of docs/api.md.
 *
 * This runs on every cache hit (the cache holds the node's raw hex; options apply per
 * request), so it is one switch per value with no per-call closures. Values reaching it come
 * from the strict decoder or the input parser and are at most 32 levels deep, so plain
 * recursion is bounded.
 */
import { type ClarityValue, cvToString } from '@stacks/transactions';
import { GatewayError } from '../errors.js';
import { CT } from './clarity-type.js';

export interface RenderOptions {
  /**
   * 'decode' (decode endpoint): numbers when |n| <= 2^53-1, decimal strings beyond.
   * 'read-only' (contract call results): decimal strings, unless strictJsonCompat is false.
   */
  integers: 'decode' | 'read-only';
  /** Only affects 'read-only': false gives numbers where exact, strings otherwise. */
  strictJsonCompat: boolean;
  /** Keep optional/response wrappers as {type, value}; then `err` is returned, not raised. */
  preserveContainers: boolean;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SAFE = -MAX_SAFE;
/** Longest Clarity rendering of an error value quoted in a CONTRACT_ERROR message. */
const MAX_MESSAGE_VALUE = 200;

function renderInteger(raw: bigint | number | string, opts: RenderOptions): number | string {
  const n = typeof raw === 'bigint' ? raw : BigInt(raw);
  const exact = n <= MAX_SAFE && n >= MIN_SAFE;
  if (opts.integers === 'read-only' && opts.strictJsonCompat) return n.toString();
  return exact ? Number(n) : n.toString();
}

function wrapper(type: 'some' | 'none' | 'ok' | 'err', value: unknown): { type: string; value: unknown } {
  return { type, value };
}

function contractError(cv: ClarityValue, rendered: unknown): GatewayError {
  let repr = cvToString(cv);
  if (repr.length > MAX_MESSAGE_VALUE) repr = `${repr.slice(0, MAX_MESSAGE_VALUE)}…`;
  return new GatewayError('CONTRACT_ERROR', `The contract function returned an error: ${repr}`, {
    value: rendered,
  });
}

/**
 * Render a Clarity value as JSON. Without preserveContainers an `err` anywhere in the value
 * throws CONTRACT_ERROR with `details.value` = the rendered error value. Rendering is
 * depth-first, so for an err nested inside another err's value the innermost one is raised.
 */
export function renderClarityValue(cv: ClarityValue, opts: RenderOptions): unknown {
  switch (cv.type) {
    case CT.Int:
    case CT.UInt:
      return renderInteger(cv.value, opts);
    case CT.BoolTrue:
      return true;
    case CT.BoolFalse:
      return false;
    case CT.Buffer:
      return `0x${cv.value}`;
    case CT.PrincipalStandard:
    case CT.PrincipalContract:
    case CT.StringASCII:
    case CT.StringUTF8:
      return cv.value;
    case CT.List: {
      const items = cv.value;
      const out = new Array<unknown>(items.length);
      for (let i = 0; i < items.length; i++) out[i] = renderClarityValue(items[i]!, opts);
      return out;
    }
    case CT.Tuple: {
      const out: Record<string, unknown> = {};
      // Canonical (byte) order, as on the wire: the output, and which of several errs is
      // raised, then depend on the value alone, not on how its object was built. Decoded
      // tuples are already in this order, which TimSort confirms in one pass.
      for (const key of Object.keys(cv.value).sort()) {
        const rendered = renderClarityValue(cv.value[key]!, opts);
        if (key === '__proto__') {
          // Assignment would call the __proto__ setter (changing the prototype) instead of
          // storing data; define it as an ordinary own, enumerable property.
          Object.defineProperty(out, key, {
            value: rendered,
            enumerable: true,
            writable: true,
            configurable: true,
          });
        } else {
          out[key] = rendered;
        }
      }
      return out;
    }
    case CT.OptionalNone:
      return opts.preserveContainers ? wrapper('none', null) : null;
    case CT.OptionalSome: {
      const inner = renderClarityValue(cv.value, opts);
      return opts.preserveContainers ? wrapper('some', inner) : inner;
    }
    case CT.ResponseOk: {
      const inner = renderClarityValue(cv.value, opts);
      return opts.preserveContainers ? wrapper('ok', inner) : inner;
    }
    case CT.ResponseErr: {
      const inner = renderClarityValue(cv.value, opts);
      if (opts.preserveContainers) return wrapper('err', inner);
      throw contractError(cv, inner);
    }
    default:
      throw new GatewayError(
        'INTERNAL_ERROR',
        `Cannot render unknown Clarity type ${JSON.stringify((cv as { type?: unknown }).type)}`,
      );
  }
}
