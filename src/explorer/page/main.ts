/**
 * The explorer page's script (bundled by src/explorer/build.ts into one hashed file). Plain
 * DOM and the typed client; every answer, error envelopes included, is rendered into the
 * Result region, and nothing a gateway can answer makes the page throw.
 *
 * The contract is in the page's address (`/explorer#ADDRESS.name`): loading one adds a
 * history entry, Back and Forward load the contract before and after, and opening such an
 * address (a bookmark, a Known contracts link) loads it. Every load and call that starts ends
 * in a result or an error, and a load overtaken by a newer one never overwrites it.
 *
 * A function's Watch toggle follows the read in its form as the chain moves (watch.ts): each
 * new value replaces the one shown in the Result region, with the block it was read at.
 *
 * Talks only to the gateway that served it: the base URL is the page's own directory.
 */
import {
  ArgumentTypeError,
  argumentFromText,
  ClarityCacheError,
  type ClientResponse,
  type ContractAbi,
  createClient,
  formatAbiType,
  LiteralSyntaxError,
  type SimpleValue,
} from '../../../client/src/index.js';
import { type ReadOutcome, startWatch, type ValuesEvent, type Watch } from './watch.js';
import {
  blockNumber,
  oneNode,
  provenance,
  readableCause,
  type WatchState,
  watchedProvenance,
  watchStatus,
} from './words.js';

const baseUrl = new URL('.', window.location.href).href;

function byId<T extends HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`the page lacks #${id}`);
  return el as T;
}

/** A small element builder: el('p', {class: 'hint'}, 'text', child). */
function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: Array<Node | string>
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  node.append(...children);
  return node;
}

const resultRegion = byId<HTMLElement>('result');
const resultBody = byId<HTMLDivElement>('result-body');
const status = byId<HTMLParagraphElement>('status');
const tip = byId<HTMLParagraphElement>('tip');
const contractInput = byId<HTMLInputElement>('contract');
const senderInput = byId<HTMLInputElement>('sender');
const apiKeyInput = byId<HTMLInputElement>('api-key');
const functions = byId<HTMLDivElement>('functions');
const known = byId<HTMLUListElement>('known');
const loadForm = byId<HTMLFormElement>('load-form');
const decodeForm = byId<HTMLFormElement>('decode-form');

/** The API key as it is now in its field, as the header it is sent in when filled. */
function keyHeaders(): Record<string, string> {
  const key = apiKeyInput.value.trim();
  return key === '' ? {} : { 'x-api-key': key };
}

/** A client with the API key as it is now in its field (sent as X-API-Key when filled). */
function gateway() {
  return createClient({ baseUrl, headers: keyHeaders() });
}

function pretty(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? String(value);
}

// --- the chain tip -------------------------------------------------------------------

const tips = new Map<string, number>();
/** Set when every network is the same node: one chain, one tip (src/explorer/page/words.ts). */
let oneChain = false;
const ONE_CHAIN = 'chain';

function showTip(): void {
  if (tips.size === 0) {
    tip.textContent = 'Chain tip: not known yet';
    return;
  }
  const parts = [...tips].map(([network, height]) =>
    tips.size === 1 ? `block ${blockNumber(height)}` : `${network} block ${blockNumber(height)}`,
  );
  tip.textContent = `Chain tip: ${parts.join(' · ')}`;
}

/** An answer's tip height: the newest block seen for the network the page is looking at. */
function noteTip(height: number | undefined, network: string): void {
  if (height === undefined) return;
  const key = oneChain ? ONE_CHAIN : network;
  if ((tips.get(key) ?? -1) < height) tips.set(key, height);
  showTip();
}

/** From now on every network's tip is the one chain's: the newest block any of them saw. */
function joinNetworks(): void {
  oneChain = true;
  const newest = Math.max(-1, ...tips.values());
  tips.clear();
  if (newest >= 0) tips.set(ONE_CHAIN, newest);
}

function networkOf(contractId: string): string {
  return /^S[PM]/.test(contractId) ? 'mainnet' : 'testnet';
}

interface ReadyAnswer {
  data?: {
    checks?: {
      upstream?: Record<string, { upstreams?: Array<{ url?: string; tipHeight?: number }> }>;
      observer?: { network?: string; lastBlock?: { height?: number } };
    };
  };
}

/**
 * The tip each network's upstreams reported, and the event observer's last block (newer than any
 * upstream's report when a node pushes its blocks), from /ready (open to everyone, as /health is).
 */
async function loadTips(): Promise<void> {
  try {
    const res = await fetch(new URL('ready', baseUrl), { headers: { accept: 'application/json' } });
    const checks = ((await res.json()) as ReadyAnswer).data?.checks;
    const networks = Object.entries(checks?.upstream ?? {});
    if (oneNode(networks.map(([, state]) => (state.upstreams ?? []).map((u) => String(u.url)))))
      joinNetworks();
    for (const [network, state] of networks) {
      const heights = (state.upstreams ?? []).map((u) => u.tipHeight).filter((h) => typeof h === 'number');
      if (heights.length > 0) noteTip(Math.max(...(heights as number[])), network);
    }
    const observed = checks?.observer;
    if (typeof observed?.network === 'string' && typeof observed.lastBlock?.height === 'number')
      noteTip(observed.lastBlock.height, observed.network);
  } catch {
    // The tip shows with the first answer instead.
  }
  showTip();
}

// --- the Result region -------------------------------------------------------------------

/** Calls and loads under way: the Result region is busy while any is. */
let pending = 0;

function begin(text: string | undefined): void {
  pending++;
  // aria-busy tells assistive technology (and automated browsers) an answer is on its way.
  resultRegion.setAttribute('aria-busy', 'true');
  if (text !== undefined) resultBody.replaceChildren(el('p', { class: 'pending' }, text));
}

function end(): void {
  pending = Math.max(0, pending - 1);
  if (pending === 0) {
    resultRegion.setAttribute('aria-busy', 'false');
    // Whatever ended, no in-progress text stays behind.
    for (const p of resultBody.querySelectorAll('.pending')) p.remove();
  }
}

function headersList(response: ClientResponse<unknown> | undefined, extra: Array<[string, string]>) {
  const dl = el('dl', { 'aria-label': 'Answer headers' });
  const row = (name: string, value: string) => dl.append(el('dt', {}, name), el('dd', {}, value));
  if (response !== undefined) {
    const { cacheStatus, age, tipHeight } = response.meta;
    row('Cache-Status', cacheStatus ?? '—');
    row('Age', age === undefined ? '—' : `${age} s`);
    row('Tip height', tipHeight === undefined ? '—' : String(tipHeight));
  }
  for (const [name, value] of extra) row(name, value);
  return dl;
}

/** Show an error (a gateway error envelope, a local input error or a network failure). */
function showError(
  title: string,
  code: string,
  message: string,
  extra: {
    status?: number;
    details?: Record<string, unknown>;
    id?: string;
    response?: ClientResponse<unknown>;
    /** Whether it is a node's refusal, when no HTTP status says so (a watched read's error). */
    refused?: boolean;
  } = {},
) {
  const { cause, ...otherDetails } = extra.details ?? {};
  // The node refused the call (okay:false, answered as 422): its cause is the reason.
  const refusal =
    code === 'UPSTREAM_API_ERROR' && (extra.refused ?? extra.status === 422) && typeof cause === 'string';
  // Shown on its own below, readable: not repeated raw at the end of the message.
  const shown = refusal && cause !== '' ? message.replace(cause, '').replace(/[\s:]+$/, '') : message;
  const parts: Node[] = [
    el('p', { class: 'title' }, title),
    el('p', { class: 'error', role: 'alert' }, el('strong', {}, code), `: ${shown}`),
  ];
  if (refusal) {
    // The node refused the call (okay:false): its cause, readable, the stack trace folded away.
    const readable = readableCause(cause);
    parts.push(el('p', { class: 'cause', 'aria-label': 'Cause' }, readable.summary));
    if (readable.trace !== undefined)
      parts.push(el('details', {}, el('summary', {}, 'Stack trace'), el('pre', {}, readable.trace)));
  } else if (cause !== undefined) {
    otherDetails['cause'] = cause;
  }
  // An error that went through the cache (a stored CONTRACT_ERROR) says where it came from.
  if (extra.response?.meta.cacheStatus !== undefined)
    parts.push(el('p', { class: 'provenance' }, provenance(extra.response.meta)));
  const rows: Array<[string, string]> = [];
  if (extra.status !== undefined && extra.status !== 0) rows.push(['HTTP status', String(extra.status)]);
  if (extra.id !== undefined) rows.push(['Error id', extra.id]);
  if (rows.length > 0 || extra.response !== undefined) parts.push(headersList(extra.response, rows));
  if (Object.keys(otherDetails).length > 0) {
    parts.push(el('p', {}, 'Details:'), el('pre', {}, pretty(otherDetails)));
  }
  resultBody.replaceChildren(...parts);
}

function showThrown(title: string, err: unknown) {
  if (err instanceof ClarityCacheError) {
    showError(title, err.code, err.message, { status: err.status, details: err.details, id: err.id });
  } else if (err instanceof LiteralSyntaxError || err instanceof ArgumentTypeError) {
    showError(title, 'VALIDATION_ERROR', err.message);
  } else {
    showError(title, 'ERROR', err instanceof Error ? err.message : String(err));
  }
}

/** Render one whole answer: the value (or the error) with where it came from. */
function showResponse<T>(
  title: string,
  response: ClientResponse<T>,
  network: string | undefined,
  pick: (data: T) => unknown = (d) => d,
) {
  if (network !== undefined) noteTip(response.meta.tipHeight, network);
  const env = response.envelope;
  if (!env.success) {
    showError(title, env.error.code, env.error.message, {
      status: response.status,
      details: env.error.details,
      id: env.error.id,
      response: response as ClientResponse<unknown>,
    });
    return;
  }
  resultBody.replaceChildren(
    el('p', { class: 'title' }, title),
    el('p', { class: 'provenance' }, provenance(response.meta)),
    el('pre', { 'aria-label': 'Value' }, pretty(pick(env.data))),
    headersList(response as ClientResponse<unknown>, [['HTTP status', String(response.status)]]),
  );
}

/**
 * Take the person to the answer: focus on the Result region (a screen reader reads its name and
 * content) and the region scrolled into view when it is not in view already. On a phone the
 * region sits below every function, far under the button pressed, and without this nothing
 * seems to happen. Only while focus is still where the request was made (`from`), on the Result
 * region (a browser that does not focus a tapped button, as Safari, leaves it there after the
 * previous answer) or nowhere: someone who went on to another field while waiting keeps it.
 */
function revealResult(from: HTMLElement): void {
  const active = document.activeElement;
  const stayed =
    active === null || active === document.body || from.contains(active) || resultRegion.contains(active);
  if (!stayed) return;
  resultRegion.focus({ preventScroll: true });
  const box = resultRegion.getBoundingClientRect();
  const viewport = window.innerHeight || document.documentElement.clientHeight;
  if (box.top >= 0 && box.bottom <= viewport) return;
  // Its top first when it is taller than the screen; otherwise just far enough to show it all.
  resultRegion.scrollIntoView({ block: box.height > viewport ? 'start' : 'nearest' });
}

/**
 * Run an action that answers in the Result region, reporting anything it throws there, then
 * take the person to that answer (`from`: the form the request was made from).
 */
async function guarded(
  title: string,
  pendingText: string,
  from: HTMLElement,
  action: () => Promise<void>,
): Promise<void> {
  begin(pendingText);
  try {
    await action();
  } catch (err) {
    showThrown(title, err);
  } finally {
    end();
  }
  revealResult(from);
}

// --- functions -----------------------------------------------------------------------

let fieldSeq = 0;

function functionRegion(contractId: string, fn: ContractAbi['functions'][number]): HTMLElement {
  const id = `fn-${++fieldSeq}`;
  const heading = el('h3', { id: `${id}-heading` }, fn.name);
  const form = el('form', { autocomplete: 'off' });
  const fields = fn.args.map((arg, i) => {
    const inputId = `${id}-arg-${i}`;
    const type = formatAbiType(arg.type);
    const input = el('input', {
      id: inputId,
      name: arg.name,
      type: 'text',
      spellcheck: 'false',
      'aria-describedby': `${inputId}-type`,
    });
    form.append(
      el(
        'div',
        { class: 'arg' },
        el('label', { for: inputId }, arg.name),
        input,
        el('span', { class: 'type', id: `${inputId}-type` }, type),
      ),
    );
    return { arg, input };
  });
  const watchButton = el(
    'button',
    { type: 'button', class: 'watch', 'aria-pressed': 'false', 'aria-describedby': `${id}-watch` },
    'Watch',
  );
  const watchLine = el('p', { id: `${id}-watch`, class: 'hint watch-status', role: 'status' });
  form.append(
    el(
      'div',
      { class: 'row' },
      el('button', { type: 'submit' }, 'Call'),
      watchButton,
      el('span', { class: 'returns' }, `returns ${formatAbiType(fn.outputs.type)}`),
    ),
    watchLine,
  );
  const title = `${fn.name} on ${contractId}`;
  /** The arguments as typed, each checked against its type; a refused one is marked and focused. */
  const readArgs = (): SimpleValue[] => {
    const args: SimpleValue[] = [];
    for (const { arg, input } of fields) {
      input.removeAttribute('aria-invalid');
      try {
        args.push(argumentFromText(input.value, arg.type, arg.name));
      } catch (err) {
        input.setAttribute('aria-invalid', 'true');
        input.focus();
        // A type error names the argument already; a syntax error names the position only.
        if (err instanceof LiteralSyntaxError) throw new ArgumentTypeError(arg.name, err.message);
        throw err;
      }
    }
    return args;
  };
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void guarded(title, `Calling ${fn.name}…`, form, async () => {
      const args = readArgs();
      const response = await gateway().raw.readOnly(contractId, fn.name, args, senderOption());
      showResponse(title, response, networkOf(contractId));
    });
  });
  watchButton.addEventListener('click', () => {
    if (watched?.button === watchButton) {
      stopWatching({ kind: 'off' });
      return;
    }
    watchRead({ title, contractId, fn: fn.name, form, button: watchButton, line: watchLine, readArgs });
  });
  // The watch follows the call as it was when Watch was pressed: a change ends it.
  form.addEventListener('input', () => {
    if (watched?.form === form) stopWatching({ kind: 'stopped', why: 'changed' });
  });
  return el('section', { class: 'fn', 'aria-labelledby': heading.id }, heading, form);
}

/** The Sender field as the read-only body's option (a leading ' of a literal principal dropped). */
function senderOption(): { senderAddress?: string } {
  const sender = senderInput.value.trim();
  return sender === '' ? {} : { senderAddress: sender.replace(/^'/, '') };
}

// --- watched reads -----------------------------------------------------------------------

/** What a function's Watch toggle works with. */
interface WatchTarget {
  readonly title: string;
  readonly contractId: string;
  readonly fn: string;
  readonly form: HTMLFormElement;
  readonly button: HTMLButtonElement;
  readonly line: HTMLElement;
  readonly readArgs: () => SimpleValue[];
}

/** The one read the page watches: a single Result region shows one value at a time. */
let watched: (WatchTarget & { readonly watch: Watch; settle(): void }) | undefined;

function showWatchState(target: WatchTarget, state: WatchState): void {
  const on = state.kind !== 'off' && state.kind !== 'stopped' && state.kind !== 'failed';
  target.button.setAttribute('aria-pressed', String(on));
  target.line.textContent = watchStatus(state);
}

/** End the watch under way, if any, and say why beside its toggle. */
function stopWatching(state: WatchState): void {
  const current = watched;
  if (current === undefined) return;
  watched = undefined;
  current.watch.stop();
  current.settle();
  showWatchState(current, state);
}

/** A watched read's outcome in the Result region: its value, or its error as a call's is shown. */
function showWatched(target: WatchTarget, event: ValuesEvent, outcome: ReadOutcome, first: boolean): void {
  if ('error' in outcome) {
    const { code, message, ...extra } = outcome.error;
    // The stream sends only final errors: one with the node's cause is its okay:false answer.
    showError(`${target.title}, watched`, code, message, {
      ...extra,
      refused: extra.details?.['retryable'] === false,
    });
    return;
  }
  const rows: Array<[string, string]> = [['Tip height', String(event.tipHeight)]];
  if (event.indexBlockHash !== '') rows.push(['Index block hash', event.indexBlockHash]);
  resultBody.replaceChildren(
    el('p', { class: 'title' }, `${target.title}, watched`),
    el('p', { class: 'provenance' }, watchedProvenance(event.tipHeight, first)),
    el('pre', { 'aria-label': 'Value' }, pretty(outcome.value)),
    headersList(undefined, rows),
  );
}

function watchRead(target: WatchTarget): void {
  const { form, fn, contractId, title } = target;
  let args: SimpleValue[];
  try {
    args = target.readArgs();
  } catch (err) {
    // Refused as a call's arguments are; a watch under way elsewhere goes on.
    showThrown(title, err);
    revealResult(form);
    return;
  }
  stopWatching({ kind: 'stopped', why: 'replaced' });
  begin(`Watching ${fn}…`);
  // Until the first value (or the watch's end) the Result region is busy, as for a call.
  let settled = false;
  const settle = (reveal: boolean) => {
    if (settled) return;
    settled = true;
    end();
    if (reveal) revealResult(form);
    // Turned off before any value came: the Result region says so rather than stay blank.
    else if (resultBody.childElementCount === 0)
      resultBody.replaceChildren(el('p', { class: 'hint' }, 'Stopped watching before the first value came.'));
  };
  /** The block the shown value was read at; undefined until the first value. */
  let readAt: number | undefined;
  /** After a reset, the next value is read afresh, not a change. */
  let afresh = true;
  const [contractAddress = '', contractName = ''] = contractId.split('.');
  const watch = startWatch(
    baseUrl,
    keyHeaders(),
    { contractAddress, contractName, functionName: fn, functionArgs: args, ...senderOption() },
    {
      values(event) {
        noteTip(event.tipHeight, networkOf(contractId));
        const outcome = event.outcomes.get(0);
        if (outcome !== undefined) {
          showWatched(target, event, outcome, afresh);
          readAt = event.tipHeight;
          afresh = false;
        }
        if (readAt === undefined) return;
        showWatchState(target, { kind: 'live', readAt, unchangedAt: event.tipHeight });
        settle(true);
      },
      reset(reason) {
        afresh = true;
        showWatchState(target, { kind: 'reset', reason });
      },
      reconnecting() {
        showWatchState(target, { kind: 'reconnecting' });
      },
      open() {
        if (readAt !== undefined) showWatchState(target, { kind: 'live', readAt });
      },
      failed(error) {
        if (watched?.watch !== watch) return;
        watched = undefined;
        const { code, message, ...extra } = error;
        showError(`${title}, watched`, code, message, extra);
        showWatchState(target, { kind: 'failed', code });
        settle(true);
      },
    },
  );
  watched = { ...target, watch, settle: () => settle(false) };
  showWatchState(target, { kind: 'starting' });
}

// --- contracts and the page's address ------------------------------------------------------

/** The contract the page's address names (`#ADDRESS.name`), or '' for none. */
function contractInAddress(): string {
  try {
    return decodeURIComponent(window.location.hash.slice(1)).trim();
  } catch {
    return window.location.hash.slice(1).trim();
  }
}

/** Bumped by every load: an answer for an older load is dropped. */
let loadSeq = 0;

async function loadContract(id: string): Promise<void> {
  const seq = ++loadSeq;
  contractInput.value = id;
  // Its function's form goes away with the functions.
  stopWatching({ kind: 'off' });
  functions.replaceChildren();
  status.textContent = `Loading ${id}…`;
  document.title = `${id} · clarity-cache explorer`;
  begin(undefined);
  // A refused load is explained in the Result region: the person is taken there, as for a call.
  let failed = false;
  try {
    const response = await gateway().raw.abi(id);
    if (seq !== loadSeq) return;
    const env = response.envelope;
    if (!env.success) {
      failed = true;
      status.textContent = `Could not load ${id}.`;
      showResponse(`Contract ${id}`, response, networkOf(id));
      return;
    }
    noteTip(response.meta.tipHeight, networkOf(id));
    const readOnly = (env.data.functions ?? []).filter((f) => f.access === 'read_only');
    functions.replaceChildren(
      el('h2', {}, `Read-only functions of ${id}`),
      ...(readOnly.length === 0
        ? [el('p', { class: 'hint' }, 'This contract has no read-only functions.')]
        : []),
      ...readOnly.map((fn) => functionRegion(id, fn)),
    );
    status.textContent = `Loaded ${id}: ${readOnly.length} read-only function${readOnly.length === 1 ? '' : 's'}.`;
    void refreshKnown();
  } catch (err) {
    if (seq !== loadSeq) return;
    failed = true;
    status.textContent = `Could not load ${id}.`;
    showThrown(`Contract ${id}`, err);
  } finally {
    end();
    if (failed) revealResult(loadForm);
  }
}

/** Show the contract `id`: a new history entry when the address names another contract. */
function openContract(id: string): void {
  const wanted = id.trim();
  if (wanted === '') return;
  if (contractInAddress() === wanted) {
    void loadContract(wanted); // the same contract again: reload it, no new entry
    return;
  }
  window.location.hash = encodeURIComponent(wanted); // adds the entry; hashchange loads it
}

function contractFromAddress(): void {
  const id = contractInAddress();
  if (id !== '') {
    void loadContract(id);
    return;
  }
  // Back to the address without a contract: the page as it first was.
  loadSeq++;
  contractInput.value = '';
  stopWatching({ kind: 'off' });
  functions.replaceChildren();
  status.textContent = '';
  document.title = 'clarity-cache explorer';
}

async function refreshKnown(): Promise<void> {
  try {
    const data = await gateway().knownContracts();
    const entries = data.contracts.cached.map((c) => {
      const id = `${c.contractAddress}.${c.contractName}`;
      // A link: it opens the contract here, in a new tab, or as a bookmark alike.
      return el(
        'li',
        {},
        el('a', { href: `#${encodeURIComponent(id)}` }, id),
        el('span', { class: 'network' }, c.network),
      );
    });
    known.replaceChildren(
      ...(entries.length === 0 ? [el('li', { class: 'hint' }, 'None yet: load a contract.')] : entries),
    );
  } catch (err) {
    const code = err instanceof ClarityCacheError ? `${err.code}: ` : '';
    const message = err instanceof Error ? err.message : String(err);
    known.replaceChildren(el('li', { class: 'error' }, `Could not list them: ${code}${message}`));
  }
}

function decodeInput(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed.startsWith('{')) {
    try {
      return JSON.parse(trimmed);
    } catch {
      // Not JSON: sent as typed, so the gateway explains what is wrong with it.
    }
  }
  return trimmed;
}

loadForm.addEventListener('submit', (event) => {
  event.preventDefault();
  openContract(contractInput.value);
});

decodeForm.addEventListener('submit', (event) => {
  event.preventDefault();
  const text = byId<HTMLInputElement>('clarity-value').value;
  void guarded('Decoding', 'Decoding…', decodeForm, async () => {
    const response = await gateway().raw.decode(decodeInput(text) as string);
    showResponse('Decoded value', response, undefined, (d) => d.decoded);
  });
});

window.addEventListener('hashchange', contractFromAddress);
// The Sender is part of the watched call.
senderInput.addEventListener('input', () => stopWatching({ kind: 'stopped', why: 'changed' }));
// Leaving the page ends its watch at the gateway too (best effort: the request is kept alive).
window.addEventListener('pagehide', () => stopWatching({ kind: 'off' }));
void loadTips();
void refreshKnown();
contractFromAddress();
