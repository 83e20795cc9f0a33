/**
 * A fault-injecting fake Stacks node RPC on real HTTP (node:http, 127.0.0.1, port 0), for the
 * upstream client's tests and the gateway's HTTP integration tests.
 *
 * Routes (docs/api.md):
 *
 * - `POST /v2/contracts/call-read/{address}/{contract}/{function}[?tip=]` with JSON
 *   `{sender, arguments: ["0x..", ...]}`:
 *   - body not JSON, or not of that shape            -> 400 text/plain
 *   - contract not registered (no ABI, no read-only)  -> 200 `{okay:false, cause:'RuntimeCheck(NoSuchContract("addr.name"))'}`
 *   - function not registered for a known contract    -> 200 `{okay:false, cause:'RuntimeCheck(UndefinedFunction("fn"))'}`
 *   - otherwise the registered answer (static, or a handler that sees sender/arguments/tip)
 * - `GET /v2/contracts/interface/{address}/{contract}` -> the registered ABI, else
 *   404 text/plain `No contract interface data found`
 * - `GET /v2/info` -> `{stacks_tip_height, stacks_tip, stacks_tip_consensus_hash, ...}`
 * - anything else -> 404 text/plain `Not found`
 *
 * Every 200 answer carries `X-Canonical-Stacks-Tip-Height` (see `setTipHeight`; `tipHeader(false)`
 * leaves it out, as a proxy that strips headers would).
 *
 * The chain: every height from 0 to the tip is a block with deterministic hashes (the
 * devnet's, src/devnet/blocks.ts), so `/v2/info`'s `stacks_tip` / `stacks_tip_consensus_hash`
 * give the index block hash that `?tip=` takes (`block(height)`). `mine(n)` advances the tip.
 * A call-read with `?tip=<64 hex>` naming a block at or below the tip is answered at that
 * block (the handler sees `height`, so per-block state is a handler of the height); one
 * naming no such block is 404 `Chain tip not found`, as a node answers; any other `tip` is
 * passed to the handler as is (and `height` is the tip's).
 *
 * Reorgs: `fork(fromHeight, branch)` replaces the chain from `fromHeight` on with another
 * branch (other block hashes at those heights, as a real fork has: `block(h)` then names the
 * new branch's block) and moves the tip to its first block; `mine()` extends it. Handlers see
 * `branch` ('' for the original chain) beside `height`, so per-block state may differ between
 * forks. Blocks of an abandoned branch keep answering pinned reads, as a real node does: it
 * keeps every block it processed in its fork-aware chainstate (the MARF) and answers
 * `?tip=` for any of them, canonical or not; only a block it never processed (one above the
 * tip, or a branch's block past where that branch had reached) is 404 `Chain tip not found`.
 *
 * Faults are rules consulted in the order they were added; the first rule that matches the
 * request's endpoint (`kind`, default: any) and still has uses left (`times`, default:
 * permanent) applies, and its count goes down. So `status5xx(503, {times: 2})` followed by
 * nothing means "two 503s, then normal answers"; `clearFaults()` removes every rule.
 *
 * ```ts
 * const node = await startFakeNode();
 * node.setAbi(addr, 'counter', abi);
 * node.setReadOnly(addr, 'counter', 'get-count', { okay: true, result: '0x0100000000000000000000000000000005' });
 * node.gate();                        // hold every request...
 * fire N identical gateway requests;
 * await node.waitForRequests(1);      // ...until the first reaches the node
 * expect(node.count('call-read')).toBe(1);
 * node.release();                     // let them through
 * await node.close();
 * ```
 *
 * Every request is counted and logged (method, raw url, decoded route params, headers,
 * parsed body, the id of the TCP connection that carried it) when its body has been read,
 * before any fault applies. Waiting is event-based: `waitForRequests(n)`, never sleeps.
 */
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { type BlockIdentity, blockIdentity, consensusHashOf } from '../../src/devnet/blocks.js';

export type FakeEndpoint = 'call-read' | 'interface' | 'info' | 'other';

/** One request as the fake node saw it. */
export interface FakeRequest {
  /** 1-based arrival order. */
  seq: number;
  kind: FakeEndpoint;
  method: string;
  /** The request target exactly as received (still percent-encoded), query included. */
  url: string;
  /** The path part of `url`, still percent-encoded. */
  path: string;
  query: Record<string, string>;
  /** Lower-cased header names, as node:http gives them. */
  headers: IncomingHttpHeaders;
  /** The body as text ('' when none). */
  rawBody: string;
  /** The body parsed as JSON, or undefined when empty or not JSON. */
  body: unknown;
  /** Id of the TCP connection that carried the request (1, 2, ...). */
  connection: number;
  /** Set when the client closed the exchange before the answer was complete (e.g. a hedge's loser). */
  aborted?: boolean;
  /** Decoded route parameters, for call-read and interface. */
  address?: string;
  contractName?: string;
  functionName?: string;
}

export type ReadOnlyAnswer = { okay: true; result: string } | { okay: false; cause: string };

/** A verbatim HTTP answer a read-only handler may return (e.g. 404 for an unknown tip). */
export interface FakeRawResponse {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

/** What a read-only handler is told about the call. */
export interface ReadOnlyCall {
  address: string;
  contractName: string;
  functionName: string;
  sender: string;
  arguments: string[];
  tip: string | undefined;
  /** The height of the block the call is answered at: the pinned block, else the tip. */
  height: number;
  /** The branch that block is on: '' for the original chain, else the name given to `fork()`. */
  branch: string;
  request: FakeRequest;
}

export type ReadOnlyHandler = (
  call: ReadOnlyCall,
) => ReadOnlyAnswer | FakeRawResponse | Promise<ReadOnlyAnswer | FakeRawResponse>;

export interface FaultOptions {
  /** How many requests the fault applies to; omitted = until `clearFaults()`. */
  times?: number;
  /** Only requests to this endpoint; omitted = every endpoint. */
  kind?: FakeEndpoint;
}

export interface FakeNode {
  /** Base URL, e.g. `http://127.0.0.1:40123` (no trailing slash). Stable across down()/up(). */
  readonly url: string;
  readonly port: number;

  // --- registries ---
  /** Serve `abi` for GET /v2/contracts/interface/{address}/{name}; also makes the contract known. */
  setAbi(address: string, contractName: string, abi: unknown): void;
  /** Serve `source` for GET /v2/contracts/source/{address}/{name} (as `{source, publish_height, proof}`). */
  setSource(address: string, contractName: string, source: string): void;
  deleteAbi(address: string, contractName: string): void;
  /**
   * Answer `method path` (the path without its query, still percent-encoded) with this raw
   * answer, or with a handler's (it sees the request, so it may depend on the query or body).
   * The tip header is added to 2xx answers as for every route.
   */
  setRoute(
    method: string,
    path: string,
    answer: FakeRawResponse | ((req: FakeRequest) => FakeRawResponse),
  ): void;
  /**
   * Answer call-read for address.name::functionName: a static `{okay, result}` /
   * `{okay:false, cause}`, or a handler (may depend on the arguments, sender or tip; may return a
   * FakeRawResponse). Makes the contract known for call-read.
   */
  setReadOnly(
    address: string,
    contractName: string,
    functionName: string,
    answer: ReadOnlyAnswer | ReadOnlyHandler,
  ): void;
  /** Value of X-Canonical-Stacks-Tip-Height and of stacks_tip_height (default 100). */
  setTipHeight(height: number): void;
  /** The current tip height. */
  readonly tipHeight: number;
  /** Advance the tip by `blocks` (default 1); returns the new tip block. */
  mine(blocks?: number): BlockIdentity;
  /**
   * The block at `height` on the chain now (hashes as the devnet derives them on the original
   * chain; burn height = height + 800000), or on `branch` when given ('' = the original chain).
   */
  block(height: number, branch?: string): BlockIdentity;
  /**
   * A reorg: from `fromHeight` on, the chain is the branch `branch` (a non-empty name never used
   * before: other hashes at every height from there); the tip moves to its block at
   * `fromHeight`, which is returned. The blocks replaced keep answering pinned reads (a node
   * keeps the blocks it processed).
   */
  fork(fromHeight: number, branch: string): BlockIdentity;
  /** The branch the chain now has at `height` ('' = the original chain). */
  branchAt(height: number): string;
  /**
   * Send X-Canonical-Stacks-Tip-Height on 200 answers (default true), or send this text as its
   * value instead of the tip height (a node claiming a tip its state is not at, or a height no
   * number can hold); /v2/info's body keeps the real tip.
   */
  tipHeader(send: boolean | string): void;

  // --- faults ---
  /** Wait `ms` before answering normally. */
  delay(ms: number, opts?: FaultOptions): void;
  /** Answer `status` (default 500, text/plain); `retryAfter` seconds adds a retry-after header. */
  status5xx(status?: number, opts?: FaultOptions & { retryAfter?: number; body?: string }): void;
  /** Answer any status with the given body (text/plain unless contentType says otherwise). */
  httpError(
    status: number,
    body?: string,
    opts?: FaultOptions & { contentType?: string; headers?: Record<string, string> },
  ): void;
  /** 429 with `retry-after: retryAfterSeconds` and ratelimit-limit/-remaining/-reset headers. */
  rateLimit(retryAfterSeconds: number, opts?: FaultOptions): void;
  /** 200 whose body is not JSON (an HTML page). */
  garbage(opts?: FaultOptions): void;
  /** Never answer (the socket stays open until the client gives up or the node closes). */
  hang(opts?: FaultOptions): void;
  /** Reset the TCP connection (RST) instead of answering. */
  reset(opts?: FaultOptions): void;
  /** Send 200 headers and half of a JSON body, then stall (the body never completes). */
  stallBody(opts?: FaultOptions): void;
  /** Hold matching requests until `release()`; then they are answered normally. */
  gate(opts?: FaultOptions): void;
  /** Open the gate: remove gate rules and let every held request through. Returns how many. */
  release(): number;
  /** Requests currently held by a gate. */
  held(): number;
  /** Remove every fault rule (held requests stay held until release()). */
  clearFaults(): void;
  /** Stop listening and drop every connection: new connections are refused. */
  down(): Promise<void>;
  /** Listen again on the same port. */
  up(): Promise<void>;

  // --- observation ---
  /** Requests received, all or of one endpoint. */
  count(kind?: FakeEndpoint): number;
  readonly total: number;
  /** Every request so far, in arrival order. */
  readonly requests: readonly FakeRequest[];
  lastRequest(kind?: FakeEndpoint): FakeRequest | undefined;
  /** TCP connections accepted so far (keep-alive reuse shows as connections() < total). */
  connections(): number;
  /** Forget the request log, counters and connection count (registries and faults stay). */
  resetStats(): void;
  /** Resolves once `n` requests (of `kind`, if given) have arrived in total. Event-based. */
  waitForRequests(n: number, opts?: { kind?: FakeEndpoint; timeoutMs?: number }): Promise<void>;
  /** Requests whose client gave up (closed the exchange) before the answer was complete. */
  aborted(kind?: FakeEndpoint): number;
  /** Resolves once `n` requests (of `kind`, if given) have been aborted by the client. Event-based. */
  waitForAborts(n: number, opts?: { kind?: FakeEndpoint }): Promise<void>;

  /** Drop every connection and stop listening. Idempotent. */
  close(): Promise<void>;
}

type FaultSpec =
  | { type: 'delay'; ms: number }
  | { type: 'respond'; status: number; body: string; headers: Record<string, string> }
  | { type: 'hang' }
  | { type: 'reset' }
  | { type: 'stall-body' }
  | { type: 'gate' };

interface FaultRule {
  spec: FaultSpec;
  kind: FakeEndpoint | undefined;
  remaining: number; // Infinity = permanent
}

const NOT_JSON_BODY = '<!doctype html><html><body><h1>502 Bad Gateway</h1> (not JSON)</body></html>';

class FakeStacksNode implements FakeNode {
  readonly url: string;
  readonly port: number;
  private readonly server: http.Server;
  private readonly events = new EventEmitter();
  private readonly abis = new Map<string, unknown>();
  private readonly sources = new Map<string, string>();
  private readonly readOnly = new Map<string, ReadOnlyAnswer | ReadOnlyHandler>();
  private readonly knownContracts = new Set<string>();
  private rules: FaultRule[] = [];
  private gated: Array<() => void> = [];
  private log: FakeRequest[] = [];
  private connectionCount = 0;
  private tip = 100;
  private sendTipHeader: boolean | string = true;
  private listening = true;
  private closed = false;

  constructor(server: http.Server, port: number) {
    this.server = server;
    this.port = port;
    this.url = `http://127.0.0.1:${port}`;
    this.events.setMaxListeners(0);
    server.on('connection', (socket: Socket) => {
      this.connectionCount += 1;
      (socket as Socket & { fakeNodeId?: number }).fakeNodeId = this.connectionCount;
    });
    server.on('request', (req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent && !res.destroyed) {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(`fake node error: ${String(err)}`);
        }
      });
    });
  }

  // --- registries ---

  readonly routes = new Map<string, FakeRawResponse | ((req: FakeRequest) => FakeRawResponse)>();

  setRoute(
    method: string,
    path: string,
    answer: FakeRawResponse | ((req: FakeRequest) => FakeRawResponse),
  ): void {
    this.routes.set(`${method} ${path}`, answer);
  }

  setSource(address: string, contractName: string, source: string): void {
    this.sources.set(`${address}.${contractName}`, source);
  }

  setAbi(address: string, contractName: string, abi: unknown): void {
    const id = `${address}.${contractName}`;
    this.abis.set(id, abi);
    this.knownContracts.add(id);
  }

  deleteAbi(address: string, contractName: string): void {
    this.abis.delete(`${address}.${contractName}`);
  }

  setReadOnly(
    address: string,
    contractName: string,
    functionName: string,
    answer: ReadOnlyAnswer | ReadOnlyHandler,
  ): void {
    this.knownContracts.add(`${address}.${contractName}`);
    this.readOnly.set(`${address}.${contractName}::${functionName}`, answer);
  }

  setTipHeight(height: number): void {
    this.tip = height;
  }

  get tipHeight(): number {
    return this.tip;
  }

  mine(blocks = 1): BlockIdentity {
    this.tip += blocks;
    return this.block(this.tip);
  }

  block(height: number, branch = this.branchAt(height)): BlockIdentity {
    if (branch === '') return blockIdentity(height, height + 800_000);
    // Another block at the same height: its own header hash, under the same burn block.
    const blockHash = createHash('sha256').update(`fake-node/fork/${branch}/${height}`).digest();
    const consensusHash = consensusHashOf(height + 800_000);
    return {
      height,
      burnBlockHeight: height + 800_000,
      blockHash: blockHash.toString('hex'),
      consensusHash: consensusHash.toString('hex'),
      indexBlockHash: createHash('sha512-256').update(blockHash).update(consensusHash).digest('hex'),
    };
  }

  /** The chain's branches: from `from` on, `branch` (the last that starts at or below a height). */
  private segments: { from: number; branch: string }[] = [];
  private readonly branchesUsed = new Set<string>();

  branchAt(height: number): string {
    for (let i = this.segments.length - 1; i >= 0; i--) {
      if (this.segments[i]!.from <= height) return this.segments[i]!.branch;
    }
    return '';
  }

  fork(fromHeight: number, branch: string): BlockIdentity {
    if (branch === '' || this.branchesUsed.has(branch))
      throw new Error(`fake node: branch "${branch}" is taken`);
    if (fromHeight < 1) throw new Error('fake node: a fork starts above the genesis block');
    // Everything processed so far stays known, the blocks about to be abandoned included.
    this.indexToTip();
    this.branchesUsed.add(branch);
    this.segments = this.segments.filter((s) => s.from < fromHeight);
    this.segments.push({ from: fromHeight, branch });
    this.indexedUpTo = Math.min(this.indexedUpTo, fromHeight - 1);
    this.tip = fromHeight;
    return this.block(fromHeight);
  }

  tipHeader(send: boolean | string): void {
    this.sendTipHeader = send;
  }

  /** Blocks by index block hash: every height of the chain up to `indexedUpTo`, and every abandoned one. */
  private readonly heights = new Map<string, { height: number; branch: string }>();
  private indexedUpTo = -1;

  private indexToTip(): void {
    for (; this.indexedUpTo < this.tip; this.indexedUpTo++) {
      const height = this.indexedUpTo + 1;
      const branch = this.branchAt(height);
      this.heights.set(this.block(height, branch).indexBlockHash, { height, branch });
    }
  }

  /**
   * The block whose index block hash is `hash`, if the node processed it: on the chain now at or
   * below the tip, or on a branch a fork abandoned.
   */
  private blockOf(hash: string): { height: number; branch: string } | undefined {
    this.indexToTip();
    const found = this.heights.get(hash.replace(/^0x/, '').toLowerCase());
    if (found === undefined) return undefined;
    const abandoned = this.branchAt(found.height) !== found.branch;
    return abandoned || found.height <= this.tip ? found : undefined;
  }

  // --- faults ---

  private addRule(spec: FaultSpec, opts: FaultOptions = {}): void {
    this.rules.push({ spec, kind: opts.kind, remaining: opts.times ?? Number.POSITIVE_INFINITY });
  }

  delay(ms: number, opts?: FaultOptions): void {
    this.addRule({ type: 'delay', ms }, opts);
  }

  status5xx(status = 500, opts: FaultOptions & { retryAfter?: number; body?: string } = {}): void {
    const headers: Record<string, string> = { 'content-type': 'text/plain' };
    if (opts.retryAfter !== undefined) headers['retry-after'] = String(opts.retryAfter);
    this.addRule({ type: 'respond', status, body: opts.body ?? `${status} upstream failure`, headers }, opts);
  }

  httpError(
    status: number,
    body = `${status} error`,
    opts: FaultOptions & { contentType?: string; headers?: Record<string, string> } = {},
  ): void {
    const headers = { 'content-type': opts.contentType ?? 'text/plain', ...opts.headers };
    this.addRule({ type: 'respond', status, body, headers }, opts);
  }

  rateLimit(retryAfterSeconds: number, opts?: FaultOptions): void {
    this.addRule(
      {
        type: 'respond',
        status: 429,
        body: JSON.stringify({ error: 'Too Many Requests', message: 'API rate limit exceeded' }),
        headers: {
          'content-type': 'application/json',
          'retry-after': String(retryAfterSeconds),
          'ratelimit-limit': '50',
          'ratelimit-remaining': '0',
          'ratelimit-reset': String(retryAfterSeconds),
        },
      },
      opts,
    );
  }

  garbage(opts?: FaultOptions): void {
    this.addRule(
      { type: 'respond', status: 200, body: NOT_JSON_BODY, headers: { 'content-type': 'text/html' } },
      opts,
    );
  }

  hang(opts?: FaultOptions): void {
    this.addRule({ type: 'hang' }, opts);
  }

  reset(opts?: FaultOptions): void {
    this.addRule({ type: 'reset' }, opts);
  }

  stallBody(opts?: FaultOptions): void {
    this.addRule({ type: 'stall-body' }, opts);
  }

  gate(opts?: FaultOptions): void {
    this.addRule({ type: 'gate' }, opts);
  }

  release(): number {
    this.rules = this.rules.filter((r) => r.spec.type !== 'gate');
    const held = this.gated;
    this.gated = [];
    for (const go of held) go();
    return held.length;
  }

  held(): number {
    return this.gated.length;
  }

  clearFaults(): void {
    this.rules = [];
  }

  async down(): Promise<void> {
    if (!this.listening) return;
    this.listening = false;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }

  async up(): Promise<void> {
    if (this.listening || this.closed) return;
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.listening = true;
  }

  // --- observation ---

  count(kind?: FakeEndpoint): number {
    return kind === undefined ? this.log.length : this.log.filter((r) => r.kind === kind).length;
  }

  get total(): number {
    return this.log.length;
  }

  get requests(): readonly FakeRequest[] {
    return this.log;
  }

  lastRequest(kind?: FakeEndpoint): FakeRequest | undefined {
    for (let i = this.log.length - 1; i >= 0; i--) {
      const r = this.log[i]!;
      if (kind === undefined || r.kind === kind) return r;
    }
    return undefined;
  }

  connections(): number {
    return this.connectionCount;
  }

  resetStats(): void {
    this.log = [];
    this.connectionCount = 0;
  }

  waitForRequests(n: number, opts: { kind?: FakeEndpoint; timeoutMs?: number } = {}): Promise<void> {
    const done = () => this.count(opts.kind) >= n;
    if (done()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const onRequest = () => {
        if (!done()) return;
        this.events.off('request', onRequest);
        if (timer !== undefined) clearTimeout(timer);
        resolve();
      };
      this.events.on('request', onRequest);
      if (opts.timeoutMs !== undefined) {
        timer = setTimeout(() => {
          this.events.off('request', onRequest);
          reject(
            new Error(
              `fake node: expected ${n} ${opts.kind ?? ''} requests within ${opts.timeoutMs} ms, saw ${this.count(opts.kind)}`,
            ),
          );
        }, opts.timeoutMs);
      }
    });
  }

  aborted(kind?: FakeEndpoint): number {
    return this.log.filter((r) => r.aborted === true && (kind === undefined || r.kind === kind)).length;
  }

  waitForAborts(n: number, opts: { kind?: FakeEndpoint } = {}): Promise<void> {
    const done = () => this.aborted(opts.kind) >= n;
    if (done()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const onAbort = () => {
        if (!done()) return;
        this.events.off('abort', onAbort);
        resolve();
      };
      this.events.on('abort', onAbort);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.release();
    this.rules = [];
    if (!this.listening) return;
    this.listening = false;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }

  // --- request handling ---

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawBody = await readBody(req);
    const target = req.url ?? '/';
    const parsed = new URL(target, 'http://fake-node');
    const route = matchRoute(req.method ?? 'GET', parsed.pathname);
    let body: unknown;
    try {
      body = rawBody === '' ? undefined : JSON.parse(rawBody);
    } catch {
      body = undefined;
    }
    const record: FakeRequest = {
      seq: this.log.length + 1,
      kind: route.kind,
      method: req.method ?? 'GET',
      url: target,
      path: parsed.pathname,
      query: Object.fromEntries(parsed.searchParams),
      headers: req.headers,
      rawBody,
      body,
      connection: (req.socket as Socket & { fakeNodeId?: number }).fakeNodeId ?? 0,
      ...(route.address === undefined ? {} : { address: route.address }),
      ...(route.contractName === undefined ? {} : { contractName: route.contractName }),
      ...(route.functionName === undefined ? {} : { functionName: route.functionName }),
    };
    this.log.push(record);
    res.once('close', () => {
      if (res.writableFinished) return;
      record.aborted = true;
      this.events.emit('abort', record);
    });
    this.events.emit('request', record);

    const fault = this.takeFault(route.kind);
    if (fault !== undefined) {
      switch (fault.type) {
        case 'hang':
          return;
        case 'reset':
          if (typeof req.socket.resetAndDestroy === 'function') req.socket.resetAndDestroy();
          else req.socket.destroy();
          return;
        case 'respond':
          send(res, fault.status, fault.body, fault.headers);
          return;
        case 'stall-body': {
          const full = JSON.stringify({ okay: true, result: `0x${'00'.repeat(64)}` });
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(full.length) });
          res.write(full.slice(0, full.length / 2));
          return;
        }
        case 'delay':
          await new Promise((resolve) => setTimeout(resolve, fault.ms));
          break;
        case 'gate':
          await new Promise<void>((resolve) => this.gated.push(resolve));
          break;
      }
    }
    if (res.destroyed) return;
    await this.answer(route, record, res);
  }

  private takeFault(kind: FakeEndpoint): FaultSpec | undefined {
    const rule = this.rules.find((r) => r.remaining > 0 && (r.kind === undefined || r.kind === kind));
    if (rule === undefined) return undefined;
    rule.remaining -= 1;
    if (rule.remaining <= 0) this.rules = this.rules.filter((r) => r !== rule);
    return rule.spec;
  }

  private async answer(route: Route, record: FakeRequest, res: ServerResponse): Promise<void> {
    const claimed = this.sendTipHeader;
    const tipHeader: Record<string, string> =
      claimed === false
        ? {}
        : { 'x-canonical-stacks-tip-height': claimed === true ? String(this.tip) : claimed };
    switch (route.kind) {
      case 'info': {
        const tip = this.block(this.tip);
        sendJson(
          res,
          {
            peer_version: 402653196,
            burn_block_height: tip.burnBlockHeight,
            stacks_tip_height: tip.height,
            stacks_tip: tip.blockHash,
            stacks_tip_consensus_hash: tip.consensusHash,
            server_version: 'fake-stacks-node',
            network_id: 2147483648,
          },
          tipHeader,
        );
        return;
      }
      case 'interface': {
        const abi = this.abis.get(`${route.address}.${route.contractName}`);
        if (abi === undefined)
          send(res, 404, 'No contract interface data found', { 'content-type': 'text/plain' });
        else sendJson(res, abi, tipHeader);
        return;
      }
      case 'call-read': {
        const body = record.body;
        if (record.rawBody !== '' && body === undefined) {
          send(res, 400, 'Failed to parse JSON body', { 'content-type': 'text/plain' });
          return;
        }
        const shapeError = checkCallBody(body);
        if (shapeError !== undefined) {
          send(res, 400, shapeError, { 'content-type': 'text/plain' });
          return;
        }
        const { sender, arguments: args } = body as { sender: string; arguments: string[] };
        const contractId = `${route.address}.${route.contractName}`;
        if (!this.knownContracts.has(contractId)) {
          sendJson(res, { okay: false, cause: `RuntimeCheck(NoSuchContract("${contractId}"))` }, tipHeader);
          return;
        }
        const tip = record.query['tip'];
        let height = this.tip;
        let branch = this.branchAt(height);
        if (tip !== undefined && /^(?:0x)?[0-9a-fA-F]{64}$/.test(tip)) {
          const pinned = this.blockOf(tip);
          if (pinned === undefined) {
            send(res, 404, 'Chain tip not found', { 'content-type': 'text/plain' });
            return;
          }
          ({ height, branch } = pinned);
        }
        const entry = this.readOnly.get(`${contractId}::${route.functionName}`);
        if (entry === undefined) {
          sendJson(
            res,
            { okay: false, cause: `RuntimeCheck(UndefinedFunction("${route.functionName}"))` },
            tipHeader,
          );
          return;
        }
        const answer =
          typeof entry === 'function'
            ? await entry({
                address: route.address!,
                contractName: route.contractName!,
                functionName: route.functionName!,
                sender,
                arguments: args,
                tip,
                height,
                branch,
                request: record,
              })
            : entry;
        if (res.destroyed) return;
        if ('status' in answer) send(res, answer.status, answer.body, answer.headers ?? {});
        else sendJson(res, answer, tipHeader);
        return;
      }
      case 'other': {
        const registered = this.routes.get(`${record.method} ${record.path}`);
        if (registered !== undefined) {
          const answer = typeof registered === 'function' ? registered(record) : registered;
          const ok = answer.status >= 200 && answer.status < 300;
          send(res, answer.status, answer.body, { ...(ok ? tipHeader : {}), ...answer.headers });
          return;
        }
        const source = /^\/v2\/contracts\/source\/([^/]+)\/([^/?]+)$/.exec(record.path);
        const code = source === null ? undefined : this.sources.get(`${source[1]}.${source[2]}`);
        if (record.method === 'GET' && code !== undefined) {
          sendJson(res, { source: code, publish_height: 1, proof: '' }, tipHeader);
          return;
        }
        send(res, 404, 'Not found', { 'content-type': 'text/plain' });
        return;
      }
    }
  }
}

interface Route {
  kind: FakeEndpoint;
  address?: string;
  contractName?: string;
  functionName?: string;
}

function matchRoute(method: string, pathname: string): Route {
  const parts = pathname.split('/').slice(1);
  const decode = (s: string | undefined) => {
    try {
      return decodeURIComponent(s ?? '');
    } catch {
      return s ?? '';
    }
  };
  if (method === 'GET' && pathname === '/v2/info') return { kind: 'info' };
  if (
    method === 'GET' &&
    parts.length === 5 &&
    parts[0] === 'v2' &&
    parts[1] === 'contracts' &&
    parts[2] === 'interface'
  ) {
    return { kind: 'interface', address: decode(parts[3]), contractName: decode(parts[4]) };
  }
  if (
    method === 'POST' &&
    parts.length === 6 &&
    parts[0] === 'v2' &&
    parts[1] === 'contracts' &&
    parts[2] === 'call-read'
  ) {
    return {
      kind: 'call-read',
      address: decode(parts[3]),
      contractName: decode(parts[4]),
      functionName: decode(parts[5]),
    };
  }
  return { kind: 'other' };
}

function checkCallBody(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'Expected a JSON object body';
  const { sender, arguments: args } = body as Record<string, unknown>;
  if (typeof sender !== 'string' || sender === '') return 'Missing or invalid "sender"';
  if (!Array.isArray(args)) return 'Missing or invalid "arguments"';
  for (const a of args) {
    if (typeof a !== 'string' || !/^(0x)?([0-9a-fA-F]{2})*$/.test(a))
      return `Failed to deserialize argument ${String(a)}`;
  }
  return undefined;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: string, headers: Record<string, string>): void {
  if (res.destroyed || res.headersSent) return;
  res.writeHead(status, { ...headers, 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

function sendJson(res: ServerResponse, value: unknown, headers: Record<string, string>): void {
  send(res, 200, JSON.stringify(value), { 'content-type': 'application/json', ...headers });
}

/** Start a fake node on 127.0.0.1 and an ephemeral port. */
export async function startFakeNode(options: { tipHeight?: number } = {}): Promise<FakeNode> {
  const server = http.createServer({ keepAliveTimeout: 30_000 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const node = new FakeStacksNode(server, (server.address() as AddressInfo).port);
  if (options.tipHeight !== undefined) node.setTipHeight(options.tipHeight);
  return node;
}
