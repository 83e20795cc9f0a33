/**
 * The explorer page's script (bundled by src/explorer/build.ts into one hashed file). Plain
 * DOM and the typed client; every answer, error envelopes included, is rendered into the
 * Result region, and nothing a gateway can answer makes the page throw.
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

const baseUrl = new URL('.', window.location.href).href;

/** The client for one call: with the API key field's value as X-API-Key when it is filled. */
function api() {
  const key = (document.getElementById('api-key') as HTMLInputElement | null)?.value.trim() ?? '';
  return createClient({ baseUrl, headers: key === '' ? {} : { 'x-api-key': key } });
}

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
const contractInput = byId<HTMLInputElement>('contract');
const senderInput = byId<HTMLInputElement>('sender');
const functions = byId<HTMLDivElement>('functions');
const known = byId<HTMLUListElement>('known');

function pretty(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? String(value);
}

/** Show an error (a gateway error envelope, a local input error or a network failure). */
function showError(
  title: string,
  code: string,
  message: string,
  extra: { status?: number; details?: unknown; id?: string } = {},
) {
  const parts: Node[] = [
    el('p', {}, title),
    el('p', { class: 'error', role: 'alert' }, el('strong', {}, code), `: ${message}`),
  ];
  const dl = el('dl');
  if (extra.status !== undefined && extra.status !== 0)
    dl.append(el('dt', {}, 'HTTP status'), el('dd', {}, String(extra.status)));
  if (extra.id !== undefined) dl.append(el('dt', {}, 'Error id'), el('dd', {}, extra.id));
  if (dl.childElementCount > 0) parts.push(dl);
  if (extra.details !== undefined) parts.push(el('p', {}, 'Details:'), el('pre', {}, pretty(extra.details)));
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

/** Render one whole answer: the value (or the error) with its cache headers. */
function showResponse<T>(title: string, response: ClientResponse<T>, pick: (data: T) => unknown = (d) => d) {
  const env = response.envelope;
  if (!env.success) {
    showError(title, env.error.code, env.error.message, {
      status: response.status,
      details: env.error.details,
      id: env.error.id,
    });
  } else {
    resultBody.replaceChildren(
      el('p', {}, title),
      el('pre', { 'aria-label': 'Value' }, pretty(pick(env.data))),
    );
  }
  const { cacheStatus, age, tipHeight } = response.meta;
  const dl = el('dl', { 'aria-label': 'Answer headers' });
  const row = (name: string, value: string) => dl.append(el('dt', {}, name), el('dd', {}, value));
  row('Cache-Status', cacheStatus ?? '—');
  row('Age', age === undefined ? '—' : `${age} s`);
  row('Tip height', tipHeight === undefined ? '—' : String(tipHeight));
  if (env.success) row('HTTP status', String(response.status));
  resultBody.append(dl);
}

/** Run an action, reporting anything it throws in the Result region. */
async function guarded(title: string, action: () => Promise<void>): Promise<void> {
  // aria-busy tells assistive technology (and automated browsers) an answer is on its way.
  resultRegion.setAttribute('aria-busy', 'true');
  try {
    await action();
  } catch (err) {
    showThrown(title, err);
  } finally {
    resultRegion.setAttribute('aria-busy', 'false');
  }
}

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
  form.append(
    el(
      'div',
      { class: 'row' },
      el('button', { type: 'submit' }, 'Call'),
      el('span', { class: 'returns' }, `returns ${formatAbiType(fn.outputs.type)}`),
    ),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const title = `${fn.name} on ${contractId}`;
    void guarded(title, async () => {
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
      const sender = senderInput.value.trim();
      const options = sender === '' ? {} : { senderAddress: sender.replace(/^'/, '') };
      showResponse(title, await api().raw.readOnly(contractId, fn.name, args, options));
    });
  });
  return el('section', { class: 'fn', 'aria-labelledby': heading.id }, heading, form);
}

/**
 * Load a contract's functions. The contract is in the URL (`#addr.name`): each load the user
 * asks for is a history entry, so Back and Forward move between contracts and a link opens one;
 * a load that follows the URL (Back, Forward, a pasted link) adds none.
 */
async function loadContract(contractId: string, fromUrl = false): Promise<void> {
  const id = contractId.trim();
  if (!fromUrl && currentHash() !== id) history.pushState(null, '', `#${encodeURIComponent(id)}`);
  contractInput.value = id;
  functions.replaceChildren();
  status.textContent = `Loading ${id}…`;
  await guarded(`Loading ${id}`, async () => {
    const response = await api().raw.abi(id);
    const env = response.envelope;
    if (!env.success) {
      status.textContent = `Could not load ${id}.`;
      showResponse(`Loading ${id}`, response);
      return;
    }
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
  });
  if (status.textContent?.startsWith('Loading')) status.textContent = `Could not load ${id}.`;
}

async function refreshKnown(): Promise<void> {
  try {
    const data = await api().knownContracts();
    const entries = data.contracts.cached.map((c) => {
      const id = `${c.contractAddress}.${c.contractName}`;
      const button = el('button', { type: 'button' }, id);
      button.addEventListener('click', () => void loadContract(id));
      return el('li', {}, button, el('span', { class: 'network' }, c.network));
    });
    known.replaceChildren(
      ...(entries.length === 0 ? [el('li', { class: 'hint' }, 'None yet: load a contract.')] : entries),
    );
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    known.replaceChildren(el('li', { class: 'error' }, `Could not list them: ${message}`));
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

byId<HTMLFormElement>('load-form').addEventListener('submit', (event) => {
  event.preventDefault();
  void loadContract(contractInput.value);
});

byId<HTMLFormElement>('decode-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const text = byId<HTMLInputElement>('clarity-value').value;
  void guarded('Decoding', async () => {
    const response = await api().raw.decode(decodeInput(text) as string);
    showResponse('Decoded value', response, (d) => d.decoded);
  });
});

/** The contract the URL names (`#addr.name`), or '' when none. */
function currentHash(): string {
  try {
    return decodeURIComponent(window.location.hash.slice(1));
  } catch {
    return '';
  }
}

// Back, Forward, and a link to `#addr.name` on this page: load what the URL names.
window.addEventListener('popstate', () => {
  const id = currentHash();
  if (id.includes('.') && id !== contractInput.value.trim()) void loadContract(id, true);
});
window.addEventListener('hashchange', () => {
  const id = currentHash();
  if (id.includes('.') && id !== contractInput.value.trim()) void loadContract(id, true);
});

void refreshKnown();
const initial = currentHash();
if (initial.includes('.')) void loadContract(initial, true);
