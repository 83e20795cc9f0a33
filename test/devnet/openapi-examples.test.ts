/**
 * Swagger's "Try it out" as a new user meets it: every operation of the served OpenAPI
 * document, sent with exactly the examples the document prefills (path and query parameters,
 * request body), to the gateway process in front of the devnet of `npm run demo`. Each must
 * succeed; an operation that takes parameters or a body without an example fails the test.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { type ServiceProcess, startService } from '../support/process.js';

const ADMIN_TOKEN = 'openapi-examples-token';

interface Parameter {
  in: string;
  name: string;
  required?: boolean;
  example?: unknown;
  examples?: Record<string, { value: unknown }>;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: {
    content: Record<string, { example?: unknown; examples?: Record<string, { value: unknown }> }>;
  };
  security?: unknown[];
}
type Paths = Record<string, Record<string, Operation>>;

let devnet: Devnet;
let svc: ServiceProcess;
let paths: Paths;

beforeAll(async () => {
  devnet = await startDevnet({ port: 0 });
  svc = await startService({
    CACHE_STORE: 'memory',
    STACKS_API_URL_MAINNET: devnet.url,
    STACKS_API_URL_TESTNET: devnet.url,
    ADMIN_TOKEN,
    LOG_LEVEL: 'warn',
  });
  paths = ((await (await fetch(`${svc.url}/openapi.json`)).json()) as { paths: Paths }).paths;
});

afterAll(async () => {
  await svc?.stop();
  await devnet?.close();
});

function firstExample(holder: { example?: unknown; examples?: Record<string, { value: unknown }> }): unknown {
  if (holder.example !== undefined) return holder.example;
  const first = Object.values(holder.examples ?? {})[0];
  return first?.value;
}

/** The request "Try it out" sends for an operation, from its examples only. */
function tryItOut(path: string, method: string, op: Operation): { url: string; init: RequestInit } {
  let url = path;
  const query = new URLSearchParams();
  for (const p of op.parameters ?? []) {
    const value = firstExample(p);
    if (p.in === 'path') {
      expect(value, `${method.toUpperCase()} ${path}: path parameter ${p.name} has no example`).toBeDefined();
      url = url.replace(`{${p.name}}`, encodeURIComponent(String(value)));
    } else if (p.in === 'query' && value !== undefined) {
      query.set(p.name, String(value));
    } else if (p.required === true) {
      expect.fail(`${method.toUpperCase()} ${path}: required ${p.in} parameter ${p.name} has no example`);
    }
  }
  const headers: Record<string, string> = {};
  if (JSON.stringify(op.security ?? []).includes('bearerAuth'))
    headers.authorization = `Bearer ${ADMIN_TOKEN}`;
  let body: string | undefined;
  if (op.requestBody !== undefined) {
    const media = op.requestBody.content['application/json'];
    const example = media === undefined ? undefined : firstExample(media);
    expect(example, `${method.toUpperCase()} ${path}: the request body has no example`).toBeDefined();
    body = JSON.stringify(example);
    headers['content-type'] = 'application/json';
  }
  const qs = query.toString();
  return {
    url: `${svc.url}${url}${qs === '' ? '' : `?${qs}`}`,
    init: { method: method.toUpperCase(), headers, ...(body === undefined ? {} : { body }) },
  };
}

describe('the OpenAPI examples', () => {
  it('are present for every parameter and body, and each request succeeds against the demo devnet', async () => {
    const operations = Object.entries(paths).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => ({ path, method, op })),
    );
    expect(operations.length).toBeGreaterThan(10);
    const withInput = operations.filter((o) => o.op.parameters?.length || o.op.requestBody !== undefined);
    expect(withInput.length).toBeGreaterThanOrEqual(8);
    // A subscription's id is made by POST /subscriptions: its other routes take the one just
    // made (as a person trying them out would paste it), and DELETE comes last.
    let subscription: string | undefined;
    const ordered = [...operations].sort(
      (x, y) => Number(x.method === 'delete') - Number(y.method === 'delete'),
    );
    for (const { path, method, op } of ordered) {
      const tried = tryItOut(path, method, op);
      const url =
        subscription !== undefined && path.startsWith('/subscriptions/{id}')
          ? tried.url.replace(/\/subscriptions\/[^/]+/, `/subscriptions/${subscription}`)
          : tried.url;
      const stream = new AbortController();
      const res = await fetch(url, { ...tried.init, signal: stream.signal });
      if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
        // An event stream never ends: its first event is enough.
        const reader = res.body!.getReader();
        let seen = '';
        while (!seen.includes('event: values')) {
          const { value, done } = await reader.read();
          if (done) break;
          seen += new TextDecoder().decode(value);
        }
        stream.abort();
        expect(seen, `${method.toUpperCase()} ${path}`).toContain('event: values');
        continue;
      }
      const text = await res.text();
      if (path === '/subscriptions' && method === 'post' && res.status === 201)
        subscription = (JSON.parse(text) as { data: { id: string } }).data.id;
      const what = `${method.toUpperCase()} ${path} -> ${res.status} ${text.slice(0, 300)}`;
      // A node route's example reaches the node: routes about transactions name one the local
      // chain need not know (its 404), or one it cannot accept (its 400), passed through as the
      // node wrote them, never the gateway's own refusal.
      if (/^\/v[23]\/(?:transactions|transaction\/)/.test(path) && res.status < 500) {
        expect(text.includes('"success":false'), what).toBe(false);
        continue;
      }
      // A key's own usage needs a key of the keys file, and the demo has none: its documented
      // refusal, in the envelope.
      if (JSON.stringify(op.security ?? []).includes('apiKey')) {
        expect(res.status, what).toBe(401);
        expect(JSON.parse(text).error.code, what).toBe('UNAUTHORIZED');
        continue;
      }
      expect(res.status, what).toBeLessThan(300);
      if ((res.headers.get('content-type') ?? '').includes('application/json')) {
        // The envelope's success, or the node-compatible routes' okay (/v2/...).
        const json = JSON.parse(text) as { success?: boolean; okay?: boolean };
        // (A node route may answer a bare JSON value, such as the fee rate.)
        if (typeof json === 'object' && json !== null && ('success' in json || 'okay' in json))
          expect(json.success ?? json.okay, what).toBe(true);
      }
    }
  });

  it('never prefill a network that contradicts the address', () => {
    for (const [path, ops] of Object.entries(paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const media = op.requestBody?.content['application/json'];
        const example = (media === undefined ? undefined : firstExample(media)) as
          | { network?: string; contractAddress?: string }
          | undefined;
        const query = op.parameters?.find((p) => p.in === 'query' && p.name === 'network');
        expect(query === undefined ? undefined : firstExample(query), `${method} ${path}`).toBeUndefined();
        if (example?.network !== undefined) {
          const address = example.contractAddress ?? path;
          expect(example.network, `${method} ${path}`).toBe(/\bS[TN]/.test(address) ? 'testnet' : 'mainnet');
        }
      }
    }
  });

  it('serve the document that Swagger UI (/docs) loads', async () => {
    const ui = await fetch(`${svc.url}/docs/json`);
    expect(ui.status).toBe(200);
    const doc = (await ui.json()) as { paths: Paths };
    expect(Object.keys(doc.paths).sort()).toEqual(Object.keys(paths).sort());
  });
});
