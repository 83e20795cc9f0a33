/**
 * What the explorer says in words, from what the gateway answered: where an answer came from
 * ("from cache, 12 s old, block 182,340") and a node's refusal made readable ("Runtime error:
 * DivisionByZero", the stack trace apart). Pure functions, no DOM: unit-tested on their own.
 */

/** The answer's headers, as the typed client reads them. */
export interface AnswerHeaders {
  readonly cacheStatus: string | undefined;
  readonly age: number | undefined;
  readonly tipHeight: number | undefined;
}

/** A block height as people write it: 182,340. */
export function blockNumber(height: number): string {
  return height.toLocaleString('en-US');
}

function duration(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h`;
  return `${Math.floor(seconds / 86_400)} d`;
}

/** RFC 9211 Cache-Status (docs/http.md) in words; undefined when the answer has none. */
function cacheWords(cacheStatus: string): { words: string; fromCache: boolean } {
  const params = cacheStatus
    .split(';')
    .slice(1)
    .map((p) => p.trim());
  const has = (p: string) => params.includes(p);
  const detail = params.find((p) => p.startsWith('detail='))?.slice('detail='.length);
  if (detail === 'stale-while-revalidate')
    return { words: 'from cache (stale, refreshed in the background)', fromCache: true };
  if (detail === 'stale-if-error')
    return { words: 'from cache (stale: the node could not be reached)', fromCache: true };
  if (has('hit')) return { words: 'from cache', fromCache: true };
  const stored = has('stored') ? ', now cached' : '';
  const shared = has('collapsed') ? ' (one request for several callers)' : '';
  if (has('fwd=request'))
    return { words: `fetched from the node, cache bypassed${stored}`, fromCache: false };
  if (has('fwd=stale'))
    return {
      words: `fetched from the node, the cached answer was stale${shared}${stored}`,
      fromCache: false,
    };
  if (has('fwd=miss')) return { words: `fetched from the node${shared}${stored}`, fromCache: false };
  return { words: cacheStatus, fromCache: false };
}

/** "from cache, 12 s old, block 182,340": where the answer came from, how old, at which block. */
export function provenance(meta: AnswerHeaders): string {
  const parts: string[] = [];
  if (meta.cacheStatus === undefined) {
    parts.push('answered by the gateway');
  } else {
    const { words, fromCache } = cacheWords(meta.cacheStatus);
    parts.push(words);
    if (fromCache && meta.age !== undefined) parts.push(`${duration(meta.age)} old`);
  }
  if (meta.tipHeight !== undefined) parts.push(`block ${blockNumber(meta.tipHeight)}`);
  return parts.join(', ');
}

export interface ReadableCause {
  /** One line: "Runtime error: DivisionByZero", "Check error: NoSuchContract(...)". */
  readonly summary: string;
  /** The node's stack trace, when it sent one. */
  readonly trace: string | undefined;
}

/**
 * A node's `cause` of an okay:false answer, readable. The node prints check errors as
 * `RuntimeCheck(Kind(...))` (older nodes `Unchecked(...)`), and runtime errors as their kind
 * followed by a stack trace (`DivisionByZero\n Stack Trace: \n ...`).
 */
export function readableCause(cause: string): ReadableCause {
  const at = cause.search(/\n|\s*Stack Trace:/i);
  const first = (at < 0 ? cause : cause.slice(0, at)).trim();
  const rest =
    at < 0
      ? ''
      : cause
          .slice(at)
          .replace(/^\s*Stack Trace:\s*/i, '')
          .trim();
  const trace = rest === '' ? undefined : rest;
  const check = /^(?:RuntimeCheck|Unchecked|CheckError)\((.*)\)$/s.exec(first);
  if (check !== null) return { summary: `Check error: ${check[1]}`, trace };
  const runtime = /^(?:Runtime|RuntimeError)\((.*)\)$/s.exec(first);
  if (runtime !== null) return { summary: `Runtime error: ${runtime[1]}`, trace };
  if (/^[A-Z][A-Za-z0-9]*(\(.*\))?$/s.test(first)) return { summary: `Runtime error: ${first}`, trace };
  return { summary: first === '' ? 'The node refused the call' : first, trace };
}

/**
 * Whether every network is served by the very same nodes (the same upstream URLs, as /ready
 * lists them): then they are one chain, whose tip is one number. `npm run demo` points mainnet
 * and testnet at one local chain, and its event observer follows one of them only, so each
 * network's tip, learned apart, would show a different block of the same chain.
 */
export function oneNode(upstreamUrls: ReadonlyArray<readonly string[]>): boolean {
  if (upstreamUrls.length < 2) return false;
  const key = (urls: readonly string[]) => [...new Set(urls)].sort().join('\n');
  const first = key(upstreamUrls[0] as readonly string[]);
  return first !== '' && upstreamUrls.every((urls) => key(urls) === first);
}

/** Where a watched read stands, for the line beside its Watch button. */
export type WatchState =
  | { readonly kind: 'off' }
  | { readonly kind: 'starting' }
  /** `readAt`: the block the shown value was read at; `unchangedAt`: a later block that left it as it was. */
  | { readonly kind: 'live'; readonly readAt: number; readonly unchangedAt?: number | undefined }
  | { readonly kind: 'reconnecting' }
  | { readonly kind: 'reset'; readonly reason: string }
  /** Ended by the page: the call in the form changed, or another function is watched now. */
  | { readonly kind: 'stopped'; readonly why: 'changed' | 'replaced' }
  | { readonly kind: 'failed'; readonly code: string };

/**
 * Why a watch started over: the gateway's `reset` reasons (it no longer knows the block the page
 * last saw, or that block left the chain), and the page's own recoveries.
 */
const RESET_WORDS: Readonly<Record<string, string>> = {
  unknown: 'the gateway no longer knows the last block seen',
  'not-canonical': 'the last block seen left the chain',
  slow: 'this page fell behind its updates',
  forgotten: 'the gateway had forgotten the watch',
};

/** The line beside the Watch button: "Watching: read at block 1,234". */
export function watchStatus(state: WatchState): string {
  switch (state.kind) {
    case 'off':
      return '';
    case 'starting':
      return 'Watching: asking the gateway…';
    case 'live':
      return state.unchangedAt === undefined || state.unchangedAt <= state.readAt
        ? `Watching: read at block ${blockNumber(state.readAt)}`
        : `Watching: read at block ${blockNumber(state.readAt)}, unchanged at block ${blockNumber(state.unchangedAt)}`;
    case 'reconnecting':
      return 'Watching: connection lost, reconnecting…';
    case 'reset': {
      const why = RESET_WORDS[state.reason] ?? state.reason;
      return why === ''
        ? 'Watching: started over, reading again…'
        : `Watching: started over (${why}), reading again…`;
    }
    case 'stopped':
      return state.why === 'changed'
        ? 'Stopped watching: the call changed. Press Watch to watch it as it is now.'
        : 'Stopped watching: another function is watched now.';
    case 'failed':
      return `Stopped watching: ${state.code} (see the Result).`;
  }
}

/** A watched value's origin in the Result region: "watched: changed at block 1,240". */
export function watchedProvenance(tipHeight: number, first: boolean): string {
  return `watched: ${first ? 'read' : 'changed'} at block ${blockNumber(tipHeight)}`;
}

/** Why the gateway ended a watch's event stream (its `error` event's code), in words. */
export function streamEndWords(code: string): string {
  switch (code) {
    case 'NOT_FOUND':
      return 'the gateway no longer holds this watch (it ended, expired, or the gateway restarted)';
    case 'SLOW_CONSUMER':
      return 'the gateway ended the watch: this page did not take its updates fast enough';
    default:
      return 'the gateway ended the watch';
  }
}
