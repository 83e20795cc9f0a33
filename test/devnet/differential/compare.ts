/**
 * The comparison of the differential test: after every block the gateway's event observer has
 * applied, each tracked read is asked of the gateway through each of its doors and of the chain
 * itself (the devnet, at the same tip), both answers are brought to the same form, and any
 * difference is a wrong answer. `runDifferential` drives a Workload (workload.ts) and does this
 * after each of its steps.
 *
 * Tracked reads: every read-only function of every contract deployed (the family and the fresh
 * contracts, read from their sources), with fixed arguments (two variants for a principal; a
 * second sender where the function reads `tx-sender`), and every data var and principal-keyed
 * map entry. Doors:
 *
 * - `read-only`: POST /contract-calls/read-only/{addr}.{name}/{fn}, `maxBlocks: 0`,
 *   `preserveContainers: true` (so `err` and `none` stay values);
 * - `call-read`: POST /v2/contracts/call-read/{addr}/{name}/{fn} (NODE_MAX_BLOCKS=0);
 * - `fast-call-read`: POST /v3/contracts/fast-call-read/{addr}/{name}/{fn};
 * - `data-var`: GET /v2/data_var/{addr}/{name}/{var}?proof=0;
 * - `map-entry`: POST /v2/map_entry/{addr}/{name}/{map}?proof=0.
 *
 * Each answer's `Cache-Status` (a hit or not) and `X-Canonical-Stacks-Tip-Height` are recorded:
 * an answer labelled with the current tip whose value is not the chain's at that tip is the
 * worst kind of wrong.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Cl, type ClarityValue, cvToHex, deserializeCV } from '@stacks/transactions';
import { type Devnet, startDevnet } from '../../../src/devnet/index.js';
import { type RunningGateway, startGateway, testEnv } from '../../support/gateway.js';
import { freePort } from '../../support/process.js';
import { type HttpResult, http } from '../helpers.js';
import {
  addressOf,
  contractFile,
  D,
  FAMILY,
  Prng,
  type Step,
  VAULT,
  W1,
  W2,
  Workload,
  type WorkloadOptions,
} from './workload.js';

export type Door = 'read-only' | 'batch' | 'call-read' | 'fast-call-read' | 'data-var' | 'map-entry';
export const DOORS: readonly Door[] = [
  'read-only',
  'batch',
  'call-read',
  'fast-call-read',
  'data-var',
  'map-entry',
];
const CALL_DOORS: readonly Door[] = ['read-only', 'batch', 'call-read', 'fast-call-read'];

export interface TrackedRead {
  /** e.g. `dt-vault::sum-entries(list ...) as ST1PQ…`, unique. */
  readonly id: string;
  readonly contractId: string;
  readonly kind: 'call' | 'data-var' | 'map-entry';
  /** Function, var or map name. */
  readonly name: string;
  /** Serialized arguments (calls). */
  readonly args: readonly string[];
  /** Serialized key (map entries). */
  readonly key?: string;
  readonly sender: string;
  readonly doors: readonly Door[];
}

// --- which reads a contract has, from its source ---

type Form = string | Form[];

/** Clarity source as nested lists of atoms (comments dropped, strings kept as one atom). */
function forms(source: string): Form[] {
  const tokens = source.match(/;[^\n]*|"(?:\\.|[^"\\])*"|u"(?:\\.|[^"\\])*"|[()]|[^\s()";]+/g) ?? [];
  const stack: Form[][] = [[]];
  for (const t of tokens) {
    if (t.startsWith(';')) continue;
    if (t === '(') stack.push([]);
    else if (t === ')') {
      const done = stack.pop()!;
      stack[stack.length - 1]!.push(done);
    } else stack[stack.length - 1]!.push(t);
  }
  return stack[0]!;
}

const mentions = (form: Form, atom: string): boolean =>
  Array.isArray(form) ? form.some((f) => mentions(f, atom)) : form === atom;

/** Fixed argument values for a parameter type; more than one means one tracked read each. */
function argumentsFor(type: Form): ClarityValue[] {
  if (type === 'uint') return [Cl.uint(1)];
  if (type === 'int') return [Cl.int(-1)];
  if (type === 'bool') return [Cl.bool(true)];
  if (type === 'principal') return [Cl.principal(D), Cl.principal(W1)];
  if (Array.isArray(type) && type[0] === 'list') {
    const max = Number(type[1]);
    const items: ClarityValue[] =
      type[2] === 'principal'
        ? [D, W1, W2, VAULT].map((p) => Cl.principal(p))
        : type[2] === 'uint'
          ? [1, 2, 5].map((n) => Cl.uint(n))
          : [];
    return [Cl.list(items.slice(0, max))];
  }
  throw new Error(`no fixed argument for the type ${JSON.stringify(type)}`);
}

const short = (principal: string): string =>
  principal.includes('.') ? principal.split('.')[1]! : `${principal.slice(0, 5)}…`;
const shortArg = (hex: string): string => {
  const cv = deserializeCV(hex);
  if (cv.type === 'address' || cv.type === 'contract') return short(cv.value);
  if (cv.type === 'list') return `(list ${cv.value.length})`;
  if (cv.type === 'uint') return `u${cv.value}`;
  return hex.slice(0, 10);
};

/** The tracked reads of a contract, from its source. */
export function readsOf(contractId: string, source: string): TrackedRead[] {
  const reads: TrackedRead[] = [];
  const name = contractId.split('.')[1]!;
  for (const form of forms(source)) {
    if (!Array.isArray(form) || typeof form[0] !== 'string') continue;
    const [head, signature, ...rest] = form;
    if (head === 'define-read-only' && Array.isArray(signature)) {
      const [fn, ...params] = signature as [string, ...Form[]];
      // One tracked read per combination of the parameters' fixed values.
      let combos: ClarityValue[][] = [[]];
      for (const param of params) {
        const values = argumentsFor((param as Form[])[1]!);
        combos = combos.flatMap((c) => values.map((v) => [...c, v]));
      }
      const body = rest as Form[];
      const senders = mentions(body, 'tx-sender') || mentions(body, 'contract-caller') ? [D, W1] : [D];
      for (const args of combos) {
        for (const sender of senders) {
          const hex = args.map((a) => cvToHex(a));
          reads.push({
            id: `${name}::${fn}(${hex.map(shortArg).join(' ')}) as ${short(sender)}`,
            contractId,
            kind: 'call',
            name: fn,
            args: hex,
            sender,
            doors: CALL_DOORS,
          });
        }
      }
    } else if (head === 'define-data-var' && typeof signature === 'string') {
      reads.push({
        id: `${name}.${signature} (data var)`,
        contractId,
        kind: 'data-var',
        name: signature,
        args: [],
        sender: D,
        doors: ['data-var'],
      });
    } else if (head === 'define-map' && typeof signature === 'string' && rest[0] === 'principal') {
      for (const key of [D, W1, W2]) {
        reads.push({
          id: `${name}.${signature}[${short(key)}] (map entry)`,
          contractId,
          kind: 'map-entry',
          name: signature,
          args: [],
          key: cvToHex(Cl.principal(key)),
          sender: D,
          doors: ['map-entry'],
        });
      }
    }
  }
  return reads;
}

// --- answers, brought to one form ---

/** An answer: a value (hex, or the read-only endpoint's JSON), the thing missing, or a failure. */
export type Answer =
  | { readonly kind: 'value'; readonly text: string }
  | { readonly kind: 'missing' }
  | { readonly kind: 'failure'; readonly text: string }
  /** The gateway could not answer (5xx, 429, a timeout): not a statement about the chain. */
  | { readonly kind: 'unavailable'; readonly text: string };

const show = (a: Answer): string =>
  a.kind === 'value' ? a.text : a.kind === 'missing' ? '(missing)' : `(${a.kind}: ${a.text.slice(0, 120)})`;

function sameAnswer(a: Answer, b: Answer): boolean {
  if (a.kind !== b.kind) return false;
  return a.kind !== 'value' || a.text === (b as { text: string }).text;
}

/** JSON with object keys sorted, for comparing decoded values. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}

/**
 * A Clarity value as the read-only endpoint renders it with `preserveContainers: true`
 * (docs/api.md): integers as decimal strings, buffers as 0x hex, principals and strings as
 * strings, lists as arrays, tuples as objects, optionals and responses as {type, value}.
 * Written from the documentation, not from the gateway's code.
 */
export function rendered(cv: ClarityValue): unknown {
  switch (cv.type) {
    case 'int':
    case 'uint':
      return BigInt(cv.value).toString();
    case 'true':
      return true;
    case 'false':
      return false;
    case 'buffer':
      return `0x${cv.value}`;
    case 'address':
    case 'contract':
    case 'ascii':
    case 'utf8':
      return cv.value;
    case 'list':
      return cv.value.map(rendered);
    case 'tuple':
      return Object.fromEntries(Object.entries(cv.value).map(([k, v]) => [k, rendered(v)]));
    case 'none':
      return { type: 'none', value: null };
    case 'some':
      return { type: 'some', value: rendered(cv.value) };
    case 'ok':
      return { type: 'ok', value: rendered(cv.value) };
    case 'err':
      return { type: 'err', value: rendered(cv.value) };
  }
}

function nodeRequest(base: string, read: TrackedRead, door: Door): { url: string; body?: unknown } {
  const [address, name] = read.contractId.split('.') as [string, string];
  switch (door) {
    case 'read-only':
      return {
        url: `${base}/contract-calls/read-only/${read.contractId}/${read.name}`,
        body: {
          functionArgs: read.args,
          senderAddress: read.sender,
          preserveContainers: true,
          cacheControl: { maxBlocks: 0 },
        },
      };
    case 'call-read':
      return {
        url: `${base}/v2/contracts/call-read/${address}/${name}/${read.name}`,
        body: { sender: read.sender, arguments: read.args },
      };
    case 'fast-call-read':
      return {
        url: `${base}/v3/contracts/fast-call-read/${address}/${name}/${read.name}`,
        body: { sender: read.sender, arguments: read.args },
      };
    case 'data-var':
      return { url: `${base}/v2/data_var/${address}/${name}/${read.name}?proof=0` };
    case 'map-entry':
      return { url: `${base}/v2/map_entry/${address}/${name}/${read.name}?proof=0`, body: read.key };
    case 'batch':
      throw new Error('batch reads go through askBatch');
  }
}

/** A node-shaped answer (the devnet's, or the gateway's node routes) in the common form. */
function nodeAnswer(res: HttpResult, door: Door): Answer {
  if (res.status === 404) return { kind: 'missing' };
  if (res.status === 429 || res.status >= 500)
    return { kind: 'unavailable', text: `${res.status} ${res.text}` };
  if (res.status !== 200) return { kind: 'failure', text: `${res.status} ${res.text}` };
  if (door === 'data-var' || door === 'map-entry') {
    return typeof res.json?.data === 'string'
      ? { kind: 'value', text: res.json.data.toLowerCase() }
      : { kind: 'failure', text: res.text };
  }
  if (res.json?.okay === true) return { kind: 'value', text: String(res.json.result).toLowerCase() };
  const cause = String(res.json?.cause ?? res.text);
  return cause.includes('NoSuchContract') ? { kind: 'missing' } : { kind: 'failure', text: cause };
}

/** The read-only endpoint's envelope in the common form. */
function envelopeAnswer(res: HttpResult): Answer {
  if (res.status === 200 && res.json?.success === true)
    return { kind: 'value', text: canonical(res.json.data) };
  if (res.status === 404) return { kind: 'missing' };
  if (res.status === 429 || res.status >= 500)
    return { kind: 'unavailable', text: `${res.status} ${res.text}` };
  const cause = String(res.json?.error?.message ?? res.text);
  return cause.includes('NoSuchContract') ? { kind: 'missing' } : { kind: 'failure', text: cause };
}

/** What the chain answers, as `door` should show it. */
function expectedThrough(chain: Answer, door: Door): Answer {
  if ((door !== 'read-only' && door !== 'batch') || chain.kind !== 'value') return chain;
  return { kind: 'value', text: canonical(rendered(deserializeCV(chain.text))) };
}

// --- blocks as the node posted them ---

export interface PostedBlock {
  readonly height: number;
  readonly transactions: ReadonlyArray<{ readonly status: string; readonly raw_result: string }>;
  readonly events: readonly unknown[];
}

/** A second event observer of the devnet: keeps each block's payload (results of broadcast transactions). */
export class BlockRecorder {
  readonly #server: Server;
  readonly #blocks = new Map<number, PostedBlock>();
  #waiters: Array<{ height: number; wake: () => void }> = [];
  url = '';

  constructor() {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        res.writeHead(200).end();
        if (req.url !== '/new_block') return;
        const block = JSON.parse(Buffer.concat(chunks).toString('utf8')) as PostedBlock & {
          block_height: number;
        };
        this.#blocks.set(block.block_height, { ...block, height: block.block_height });
        const ready = this.#waiters.filter((w) => this.#blocks.has(w.height));
        this.#waiters = this.#waiters.filter((w) => !this.#blocks.has(w.height));
        for (const w of ready) w.wake();
      });
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this.url;
  }

  block(height: number): Promise<PostedBlock> {
    const known = this.#blocks.get(height);
    if (known) return Promise.resolve(known);
    return new Promise((resolve) =>
      this.#waiters.push({ height, wake: () => resolve(this.#blocks.get(height)!) }),
    );
  }

  /** Forgets blocks below `height` (a long run keeps only what it may still ask for). */
  forgetBelow(height: number): void {
    for (const h of this.#blocks.keys()) if (h < height) this.#blocks.delete(h);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

// --- the run ---

/** The gateway as the runner needs it (in-process: its observer's follower). */
export interface GatewayUnderTest {
  readonly url: string;
  /** Blocks (payloads) its observer has applied so far. */
  handled(): number;
  /** Resolves once it has applied `count` payloads. */
  untilHandled(count: number): Promise<void>;
  /** The gateway's own dependency analysis of a function, for the report of a wrong answer. */
  dependencies?(contractId: string, fn: string): Promise<{ contracts: string[]; volatile: boolean }>;
}

export interface DoorStats {
  reads: number;
  hits: number;
  /** Hits on the first read of their cache entry in a round: served across a block, by proof. */
  provenHits: number;
  /** Answers that differ from the chain's. */
  wrong: number;
  /** ... of which hits. */
  wrongHits: number;
  /** ... of which labelled with the current tip (`X-Canonical-Stacks-Tip-Height`). */
  wrongAtTip: number;
  /** Answers without the tip header, or with one below / above the chain's tip. */
  headerMissing: number;
  headerBehind: number;
  headerAhead: number;
  /** Hits labelled below the chain's tip. */
  hitsBehind: number;
  /** The gateway could not answer (5xx, 429). */
  unavailable: number;
  /** Reads made while a block was being made and applied (judged by the height they name). */
  racing: number;
  /** ... of which wrong for the height they name. */
  racingWrong: number;
  /** ... that named no height whose answer is known (a block inside a multi-block step). */
  racingUnjudged: number;
}

export interface WrongAnswer {
  readonly height: number;
  /** The step that made the block read at. */
  readonly step: string;
  readonly door: Door;
  readonly read: string;
  readonly got: string;
  readonly expected: string;
  readonly cacheStatus: string | null;
  readonly tipHeader: string | null;
  /** Read while the step's block was being made and applied. */
  readonly racing?: boolean;
  /** The block at which the chain's answer last changed, and the step that made it. */
  readonly changedAt?: { readonly height: number; readonly step: string };
  /** The gateway's dependency analysis of the read's function. */
  readonly gatewayDependencies?: { contracts: string[]; volatile: boolean };
}

export interface RunReport {
  readonly seed: number;
  readonly blocks: number;
  readonly steps: Record<string, number>;
  /** Comparisons made (reads × doors), racing reads included. */
  readonly comparisons: number;
  readonly trackedReads: number;
  readonly doors: Record<Door, DoorStats>;
  readonly wrong: number;
  /** The first wrong answers of each read and door (at most `keepWrong`), in order. */
  readonly wrongAnswers: WrongAnswer[];
  /** Wrong answers per read and door: `door read` → count. */
  readonly wrongByRead: Record<string, number>;
  /** Hits across blocks (proven) per read, over its doors. */
  readonly provenHitsByRead: Record<string, number>;
  /**
   * Reads of values only their own contract's deployment writes (STABLE_FUNCTIONS): the rounds
   * they were compared in once deployed, and how many of those each cache entry (`call`: the
   * read-only endpoint, batch and call-read; `fast`: fast-call-read) was a hit across a block.
   * Only a block that touches everything may end their proof.
   */
  readonly stable: Record<string, { rounds: number; call: number; fast: number }>;
  readonly elapsedMs: number;
}

export interface RunOptions {
  readonly devnetUrl: string;
  readonly tipHeight: () => number;
  readonly gateway: GatewayUnderTest;
  readonly recorder: BlockRecorder;
  readonly seed: number;
  /** Blocks to make (the family's deployments included). */
  readonly blocks: number;
  readonly weights?: WorkloadOptions['weights'];
  /** Doors asked (default all). */
  readonly doors?: readonly Door[];
  /** Reads compared at once (each read's doors one after another). Default 4. */
  readonly concurrency?: number;
  /** Fresh contracts whose reads stay tracked (the latest ones). Default 6. */
  readonly freshTracked?: number;
  /** Share of steps during which reads race the block (default 0.3), and how many each time (12). */
  readonly raceShare?: number;
  readonly racingReads?: number;
  /** Wrong answers kept in the report per read and door. Default 3. */
  readonly keepWrong?: number;
  /** Longest wait for the gateway to apply a block. Default 30 s. */
  readonly blockTimeoutMs?: number;
  readonly log?: (line: string) => void;
}

const emptyStats = (): DoorStats => ({
  reads: 0,
  hits: 0,
  provenHits: 0,
  wrong: 0,
  wrongHits: 0,
  wrongAtTip: 0,
  headerMissing: 0,
  headerBehind: 0,
  headerAhead: 0,
  hitsBehind: 0,
  unavailable: 0,
  racing: 0,
  racingWrong: 0,
  racingUnjudged: 0,
});

const isHit = (cacheStatus: string | null): boolean =>
  cacheStatus !== null && /(^|;)\s*hit\s*(;|$)/.test(cacheStatus);

/** Doors whose answers share one cache entry (a call-read answer serves the read-only endpoint). */
const ENTRY_GROUP: Record<Door, string> = {
  'read-only': 'call',
  batch: 'call',
  'call-read': 'call',
  'fast-call-read': 'fast',
  'data-var': 'data-var',
  'map-entry': 'map-entry',
};

async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: not done after ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs `fn` over `items`, `limit` at a time. */
async function eachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** A gateway answer with what its headers say. */
interface GatewayAnswer {
  readonly got: Answer;
  readonly cacheStatus: string | null;
  readonly header: string | null;
}

const BATCH_LIMIT = 100;

/** Read-only functions returning what only their contract's own deployment wrote. */
export const STABLE_FUNCTIONS: ReadonlySet<string> = new Set([
  'get-set-at',
  'get-seeded',
  'get-total',
  'get-minted',
]);

export async function runDifferential(o: RunOptions): Promise<RunReport> {
  const started = performance.now();
  const log = o.log ?? (() => {});
  const workload = new Workload(o.devnetUrl, { seed: o.seed, ...(o.weights ? { weights: o.weights } : {}) });
  const order = new Prng(o.seed ^ 0x5bd1e995);
  const concurrency = o.concurrency ?? 4;
  const keepWrong = o.keepWrong ?? 3;
  const freshTracked = o.freshTracked ?? 6;
  const raceShare = o.raceShare ?? 0.3;
  const racingReads = o.racingReads ?? 12;
  const asked = new Set(o.doors ?? DOORS);
  const family = new Set(FAMILY.map((c) => `${addressOf(c.deployer)}.${c.name}`));

  const doors = Object.fromEntries(DOORS.map((d) => [d, emptyStats()])) as Record<Door, DoorStats>;
  const steps: Record<string, number> = {};
  const wrongAnswers: WrongAnswer[] = [];
  const wrongByRead: Record<string, number> = {};
  const provenHitsByRead: Record<string, number> = {};
  const stable: RunReport['stable'] = {};
  let tracked: TrackedRead[] = [];
  const freshOrder: string[] = [];
  const stepAt = new Map<number, string>();
  /** Per read: the chain's answer at the last round, and the height it was first seen at. */
  const truths = new Map<string, { answer: Answer; height: number; since: number }>();
  let comparisons = 0;
  let wrong = 0;
  let blocks = 0;
  let current = 'start-up';

  const doorsOf = (read: TrackedRead): Door[] => read.doors.filter((d) => asked.has(d));

  const askGateway = async (read: TrackedRead, door: Exclude<Door, 'batch'>): Promise<GatewayAnswer> => {
    const req = nodeRequest(o.gateway.url, read, door);
    const res = await http(req.url, req.body === undefined ? {} : { body: req.body });
    return {
      got: door === 'read-only' ? envelopeAnswer(res) : nodeAnswer(res, door),
      cacheStatus: res.headers.get('cache-status'),
      header: res.headers.get('x-canonical-stacks-tip-height'),
    };
  };

  /** The batch door: every call read in one POST /contract-calls/batch (chunks of 100). */
  const askBatch = async (reads: readonly TrackedRead[]): Promise<Map<TrackedRead, GatewayAnswer>> => {
    const out = new Map<TrackedRead, GatewayAnswer>();
    for (let i = 0; i < reads.length; i += BATCH_LIMIT) {
      const chunk = reads.slice(i, i + BATCH_LIMIT);
      const res = await http(`${o.gateway.url}/contract-calls/batch`, {
        body: {
          calls: chunk.map((read) => ({
            contractAddress: read.contractId,
            functionName: read.name,
            functionArgs: read.args,
            senderAddress: read.sender,
            preserveContainers: true,
            cacheControl: { maxBlocks: 0 },
          })),
        },
      });
      const results = res.json?.data?.results;
      for (const [j, read] of chunk.entries()) {
        const item = Array.isArray(results) ? results[j] : undefined;
        if (item === undefined) {
          out.set(read, {
            got: { kind: 'unavailable', text: `${res.status} ${res.text.slice(0, 200)}` },
            cacheStatus: null,
            header: null,
          });
          continue;
        }
        const meta = item.meta ?? {};
        out.set(read, {
          got: envelopeAnswer({
            status: Number(meta.status ?? 0),
            headers: new Headers(),
            text: JSON.stringify(item),
            json: item,
          }),
          cacheStatus: typeof meta.cacheStatus === 'string' ? meta.cacheStatus : null,
          header: meta.tipHeight === null || meta.tipHeight === undefined ? null : String(meta.tipHeight),
        });
      }
    }
    return out;
  };

  const truthOf = async (read: TrackedRead): Promise<Answer> => {
    const door: Door = read.kind === 'call' ? 'call-read' : read.doors[0]!;
    const req = nodeRequest(o.devnetUrl, read, door);
    const truth = nodeAnswer(await http(req.url, req.body === undefined ? {} : { body: req.body }), door);
    if (truth.kind === 'unavailable')
      throw new Error(`the devnet could not answer ${read.id}: ${truth.text}`);
    return truth;
  };

  /** Records one gateway answer against the chain's; `proven` = the first read of its entry since the last block. */
  const judge = async (
    read: TrackedRead,
    door: Door,
    answer: GatewayAnswer,
    truth: Answer,
    tip: number,
    how: { proven: boolean; racing: boolean },
  ): Promise<void> => {
    const { got, cacheStatus, header } = answer;
    const stats = doors[door];
    const hit = isHit(cacheStatus);
    comparisons++;
    stats.reads++;
    if (how.racing) stats.racing++;
    if (hit) {
      stats.hits++;
      if (how.proven && !how.racing) {
        stats.provenHits++;
        provenHitsByRead[read.id] = (provenHitsByRead[read.id] ?? 0) + 1;
        const kept = stable[read.id];
        const group = ENTRY_GROUP[door];
        if (kept !== undefined && (group === 'call' || group === 'fast')) kept[group]++;
      }
    }
    if (got.kind === 'unavailable') {
      stats.unavailable++;
      return;
    }
    // The tip header of answers that carry a value (a 404 or a refusal may carry none).
    if (!how.racing && got.kind === 'value') {
      if (header === null) stats.headerMissing++;
      else if (Number(header) < tip) {
        stats.headerBehind++;
        if (hit) stats.hitsBehind++;
      } else if (Number(header) > tip) stats.headerAhead++;
    }
    const expected = expectedThrough(truth, door);
    if (sameAnswer(got, expected)) return;
    wrong++;
    stats.wrong++;
    if (how.racing) stats.racingWrong++;
    if (hit) stats.wrongHits++;
    if (header !== null && Number(header) === tip) stats.wrongAtTip++;
    const key = `${door} ${read.id}`;
    wrongByRead[key] = (wrongByRead[key] ?? 0) + 1;
    if (wrongByRead[key]! > keepWrong) return;
    const since = truths.get(read.id)?.since;
    const deps =
      read.kind === 'call' ? await o.gateway.dependencies?.(read.contractId, read.name) : undefined;
    const record: WrongAnswer = {
      height: tip,
      step: current,
      door,
      read: read.id,
      got: show(got),
      expected: show(expected),
      cacheStatus,
      tipHeader: header,
      ...(how.racing ? { racing: true } : {}),
      ...(since === undefined ? {} : { changedAt: { height: since, step: stepAt.get(since) ?? '?' } }),
      ...(deps === undefined ? {} : { gatewayDependencies: deps }),
    };
    wrongAnswers.push(record);
    log(`WRONG ${JSON.stringify(record)}`);
  };

  /** Reads a racing read asked during the present step: their entries may be of this block. */
  let raced = new Set<TrackedRead>();

  /** Compares `reads` through every door they have, or (`oneDoor`) one drawn per read, batch aside. */
  const compareRound = async (reads: readonly TrackedRead[], oneDoor = false) => {
    const tip = o.tipHeight();
    // The chain's answers first (the chain does not move during a round).
    const truthNow = new Map<TrackedRead, Answer>();
    await eachLimited(reads, concurrency * 2, async (read) => {
      const truth = await truthOf(read);
      truthNow.set(read, truth);
      if (!oneDoor && truth.kind === 'value' && read.kind === 'call' && STABLE_FUNCTIONS.has(read.name)) {
        stable[read.id] ??= { rounds: 0, call: 0, fast: 0 };
        stable[read.id]!.rounds++;
      }
      const seen = truths.get(read.id);
      const changed =
        seen === undefined || !sameAnswer(seen.answer, truth) || seen.answer.kind !== truth.kind;
      truths.set(read.id, { answer: truth, height: tip, since: changed ? tip : seen.since });
    });
    // Each read's doors in an order drawn per block (one door's answer may serve another's),
    // drawn before the reads run so that a seed always gives the same run; the batch door
    // before or after them.
    const doorOrder = new Map(
      reads.map((read) => {
        const its = doorsOf(read).filter((d) => d !== 'batch');
        for (let i = its.length - 1; i > 0; i--) {
          const j = order.int(i + 1);
          [its[i], its[j]] = [its[j]!, its[i]!];
        }
        return [read, (oneDoor ? its.slice(0, 1) : its) as Exclude<Door, 'batch'>[]] as const;
      }),
    );
    const batched = oneDoor ? [] : reads.filter((r) => doorsOf(r).includes('batch'));
    const batchFirst = order.chance(0.5);
    const firstSeen = new Map<TrackedRead, Set<string>>(reads.map((r) => [r, new Set<string>()]));
    const proven = (read: TrackedRead, door: Door): boolean => {
      const groups = firstSeen.get(read)!;
      const first = !groups.has(ENTRY_GROUP[door]);
      groups.add(ENTRY_GROUP[door]);
      return first && !raced.has(read);
    };
    const runBatch = async () => {
      if (batched.length === 0) return;
      const answers = await askBatch(batched);
      for (const read of batched) {
        await judge(read, 'batch', answers.get(read)!, truthNow.get(read)!, tip, {
          proven: proven(read, 'batch'),
          racing: false,
        });
      }
    };
    if (batchFirst) await runBatch();
    await eachLimited(reads, concurrency, async (read) => {
      for (const door of doorOrder.get(read)!) {
        const answer = await askGateway(read, door);
        await judge(read, door, answer, truthNow.get(read)!, tip, {
          proven: proven(read, door),
          racing: false,
        });
      }
    });
    if (!batchFirst) await runBatch();
  };

  /** Reads made while a step's block is made and applied: each is judged by the height it names. */
  const raceRound = (picks: ReadonlyArray<{ read: TrackedRead; door: Exclude<Door, 'batch'> }>) =>
    Promise.all(picks.map(async ({ read, door }) => ({ read, door, answer: await askGateway(read, door) })));

  const track = (contractId: string, file: string): TrackedRead[] => {
    const added = readsOf(contractId, contractFile(file));
    if (!family.has(contractId)) {
      freshOrder.push(contractId);
      while (freshOrder.length > freshTracked) {
        const dropped = freshOrder.shift()!;
        tracked = tracked.filter((r) => r.contractId !== dropped);
      }
    }
    tracked.push(...added);
    return added;
  };

  const take = async (step: Step) => {
    current = step.describe;
    // A fresh contract is read before its deployment too (through every door, or one per
    // read): the gateway then knows it as missing, and must learn that it no longer is. (The
    // family is not read before: such a read may change what the gateway proves afterwards.)
    if (step.deploys?.track === 'before') {
      await compareRound(track(step.deploys.contractId, step.deploys.file), step.deploys.preRead !== 'all');
    }
    const handledBefore = o.gateway.handled();
    const from = o.tipHeight();
    // Some steps are raced: reads while the block is made, and again once the chain has it.
    const race = tracked.length > 0 && order.chance(raceShare);
    const pick = () =>
      Array.from({ length: racingReads }, () => {
        const read = order.pick(tracked);
        const its = doorsOf(read).filter((d) => d !== 'batch') as Exclude<Door, 'batch'>[];
        return { read, door: order.pick(its) };
      }).filter((p) => p.door !== undefined);
    const during = race ? pick() : [];
    const after = race ? pick() : [];
    raced = new Set([...during, ...after].map((p) => p.read));
    const [outcome, racedDuring] = await Promise.all([
      workload.perform(step, o.tipHeight),
      raceRound(during),
    ]);
    const racedAfter = await raceRound(after);
    const made = outcome.to - outcome.from;
    let result = outcome.result;
    if (made > 0) {
      for (let h = outcome.from + 1; h <= outcome.to; h++) stepAt.set(h, step.describe);
      const wait = o.blockTimeoutMs ?? 30_000;
      await within(o.gateway.untilHandled(handledBefore + made), wait, `block ${outcome.to} handled`);
      const posted = await within(o.recorder.block(outcome.to), wait, `block ${outcome.to} recorded`);
      o.recorder.forgetBelow(outcome.to);
      if (result === 'accepted') {
        const tx = posted.transactions[0];
        result = tx?.status === 'success' ? 'ok' : tx?.raw_result === '0x0809' ? 'abort' : 'err';
      }
      blocks += made;
    }
    const kind = `${step.kind}:${result}`;
    steps[kind] = (steps[kind] ?? 0) + 1;
    if (step.deploys?.track === 'after') track(step.deploys.contractId, step.deploys.file);
    const before = new Map([...truths].map(([k, v]) => [k, v] as const));
    if (made > 0) await compareRound(tracked);
    // The racing reads, against the chain's answer at the height each names.
    for (const { read, door, answer } of [...racedDuring, ...racedAfter]) {
      const named = answer.header === null ? undefined : Number(answer.header);
      const then =
        named === from ? before.get(read.id) : named === o.tipHeight() ? truths.get(read.id) : undefined;
      if (then === undefined || then.height !== named) {
        doors[door].racing++;
        doors[door].racingUnjudged++;
        continue;
      }
      await judge(read, door, answer, then.answer, named!, { proven: false, racing: true });
    }
  };

  for (const step of await workload.setup()) await take(step);
  log(`seed ${o.seed}: family deployed at height ${o.tipHeight()}; ${tracked.length} reads tracked`);
  let lastLog = performance.now();
  while (blocks < o.blocks) {
    await take(await workload.next());
    if (performance.now() - lastLog > 10_000) {
      lastLog = performance.now();
      log(`seed ${o.seed}: ${blocks}/${o.blocks} blocks, ${comparisons} comparisons, ${wrong} wrong`);
    }
  }
  return {
    seed: o.seed,
    blocks,
    steps,
    comparisons,
    trackedReads: tracked.length,
    doors,
    wrong,
    wrongAnswers,
    wrongByRead,
    provenHitsByRead,
    stable,
    elapsedMs: Math.round(performance.now() - started),
  };
}

/** A summary of a report, for logs. */
export function summarize(report: RunReport): string {
  const pct = (n: number, d: number) => `${d === 0 ? '-' : ((100 * n) / d).toFixed(1)} %`;
  const lines = [
    `seed ${report.seed}: ${report.blocks} blocks, ${report.comparisons} comparisons, ${report.wrong} wrong, ${(report.elapsedMs / 1000).toFixed(1)} s`,
    `steps: ${Object.entries(report.steps)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  ];
  for (const [door, s] of Object.entries(report.doors)) {
    if (s.reads === 0) continue;
    lines.push(
      `  ${door.padEnd(15)} reads ${s.reads}, hits ${pct(s.hits, s.reads)} (across blocks ${s.provenHits}), wrong ${s.wrong} (hits ${s.wrongHits}, at tip ${s.wrongAtTip}, racing ${s.racingWrong}/${s.racing}), header missing/behind/ahead ${s.headerMissing}/${s.headerBehind}/${s.headerAhead}, unavailable ${s.unavailable}`,
    );
  }
  for (const [read, k] of Object.entries(report.stable)) {
    lines.push(
      `  stable ${read}: ${k.rounds} rounds, kept current: call-read/read-only ${k.call}, fast-call-read ${k.fast}`,
    );
  }
  const worst = Object.entries(report.wrongByRead).sort(([, a], [, b]) => b - a);
  for (const [read, n] of worst.slice(0, 40)) lines.push(`  wrong ${String(n).padStart(4)} × ${read}`);
  return lines.join('\n');
}

// --- the environment: the devnet (epoch 3.3), the gateway as its event observer, a recorder ---

export interface Environment {
  readonly devnet: Devnet;
  readonly gw: RunningGateway;
  readonly recorder: BlockRecorder;
  readonly gateway: GatewayUnderTest;
  close(): Promise<void>;
}

/**
 * Starts the devnet in epoch 3.3 (Clarity 4 for dt-clock), posting its blocks to the gateway's
 * observer and to a BlockRecorder, and the gateway in this process with its block bounds at 0
 * (`maxBlocks: 0` on the read-only endpoint, NODE_MAX_BLOCKS=0 on node routes) and budgets
 * that never run out.
 */
export async function startEnvironment(env: Record<string, string> = {}): Promise<Environment> {
  const recorder = new BlockRecorder();
  await recorder.listen();
  const observerPort = await freePort();
  const devnet = await startDevnet({
    port: 0,
    epoch: '3.3',
    eventObserverUrls: [`http://127.0.0.1:${observerPort}`, recorder.url],
  });
  let gw: RunningGateway;
  try {
    gw = await startGateway(
      testEnv(devnet.url, {
        EVENT_OBSERVER_PORT: String(observerPort),
        EVENT_OBSERVER_NETWORK: 'testnet',
        NODE_DEFAULT_NETWORK: 'testnet',
        NODE_MAX_BLOCKS: '0',
        CHAIN_TIP_MAX_AGE_MS: '60000',
        UPSTREAM_RATE_LIMIT_PER_MINUTE: '100000000',
        UPSTREAM_TIMEOUT_MS: '20000',
        ...env,
      }),
    );
  } catch (error) {
    await devnet.close();
    await recorder.close();
    throw error;
  }
  const observer = gw.gateway.observer;
  if (observer === undefined) throw new Error('the gateway started without its event observer');
  const gateway: GatewayUnderTest = {
    url: gw.url,
    handled: () => observer.follower.handled,
    untilHandled: (count) => observer.follower.untilHandled(count),
    dependencies: async (contractId, fn) => {
      const deps = await observer.analyzer.dependencies(contractId, fn);
      return { contracts: [...deps.contracts].sort(), volatile: deps.volatile };
    },
  };
  return {
    devnet,
    gw,
    recorder,
    gateway,
    async close() {
      await gw.close();
      await devnet.close();
      await recorder.close();
    },
  };
}
