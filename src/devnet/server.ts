/**
 * The devnet's HTTP server: the subset of the Stacks node RPC the gateway uses, worded as a
 * node words it, plus a small control API under /devnet to change the chain's state.
 *
 * Node RPC:
 *   GET  /v2/info
 *   GET  /v2/contracts/interface/{address}/{contract}[?tip=]
 *   POST /v2/contracts/call-read/{address}/{contract}/{function}[?tip=]  {sender, sponsor?, arguments}
 *   and those of devnet-node-routes.ts: sources, data vars, map entries, constants, accounts, PoX,
 *   tenure info, fee estimates, transaction broadcast
 * Control API (JSON in, JSON out; errors are {"error": "..."}):
 *   POST /devnet/mine          {blocks?: number}                            → {tip}
 *   POST /devnet/call-public   {sender, contract, function, arguments}       → {result, committed, events, tip}
 *   GET  /devnet/accounts                                                    → {deployer, accounts, contracts}
 *   GET  /devnet/blocks/{height}                                             → block identity
 *   POST /devnet/outage        {seconds?: number}                           → {until}
 *     stop the node: once this answer is sent, the server stops listening (connections are
 *     refused, as from a stopped node) for `seconds` (default 15, at most 600), then listens
 *     again on the same port. For showing what the gateway does while its node is down.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type ClarityValue, validateStacksAddress } from '@stacks/transactions';
import { DEPLOYER, DEVNET_ACCOUNTS } from './accounts.js';
import type { BlockIdentity } from './blocks.js';
import { consensusHashOf } from './blocks.js';
import { DevnetCallError, type DevnetChain } from './chain.js';
import { nodeRoute } from './devnet-node-routes.js';
import {
  ADDRESS,
  CLARITY_NAME,
  CONTRACT_NAME,
  decodeArgument,
  decodePathSegment,
  HttpAnswer,
  isJsonContentType,
  isPrincipal,
  json,
  readBody,
  SEGMENT,
  text,
} from './http.js';

const MAX_BLOCKS_PER_MINE = 10_000;
const INTERFACE_PATH = new RegExp(`^/v2/contracts/interface/(${ADDRESS})/(${CONTRACT_NAME})$`);
// The node's fast read-only call (/v3/contracts/fast-call-read) runs the same evaluation here.
const CALL_READ_PATH = new RegExp(
  `^/v(?:2/contracts/call-read|3/contracts/fast-call-read)/(${ADDRESS})/(${CONTRACT_NAME})/(${SEGMENT})$`,
);
const BLOCK_PATH = /^\/devnet\/blocks\/(\d{1,10})$/;

const MAX_OUTAGE_S = 600;

export class DevnetServer {
  private readonly server: Server;
  /** Where it listens, to listen there again after an outage. */
  private bound: { port: number; host: string } | undefined;
  private outageTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly chain: DevnetChain,
    private readonly log: (line: string) => void = () => {},
  ) {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        this.log(`devnet: internal error on ${req.method} ${req.url}: ${String(error)}`);
        if (!res.headersSent) this.send(res, text(500, `Internal server error: ${String(error)}`));
        else res.destroy();
      });
    });
    // A read at an earlier block replays the chain synchronously, blocking this event loop for
    // seconds. Node's 5 s keep-alive timer then fires the moment the loop is free and closes
    // idle sockets that a client has just sent its next request on (ECONNRESET): a longer
    // keep-alive outlasts any replay.
    this.server.keepAliveTimeout = 30_000;
  }

  listen(port: number, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        const address = this.server.address();
        const bound = typeof address === 'object' && address ? address.port : port;
        this.bound = { port: bound, host };
        resolve(bound);
      });
    });
  }

  close(): Promise<void> {
    this.closed = true;
    if (this.outageTimer !== undefined) clearTimeout(this.outageTimer);
    if (!this.server.listening) return Promise.resolve();
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  /** Stop listening for ms (connections refused), then listen again where it did. */
  stopFor(ms: number): void {
    if (this.bound === undefined || this.closed) return;
    const { port, host } = this.bound;
    this.server.close();
    this.server.closeAllConnections();
    this.log(`devnet: node stopped for ${ms / 1000} s (outage)`);
    if (this.outageTimer !== undefined) clearTimeout(this.outageTimer);
    this.outageTimer = setTimeout(() => {
      this.outageTimer = undefined;
      if (this.closed) return;
      this.listen(port, host).then(
        () => this.log('devnet: node listening again after the outage'),
        (error: unknown) => this.log(`devnet: could not listen again after the outage: ${String(error)}`),
      );
    }, ms);
    this.outageTimer.unref();
  }

  private send(res: ServerResponse, answer: HttpAnswer, tipHeader = false): void {
    const headers: Record<string, string | number> = {
      'Content-Type': answer.contentType,
      'Content-Length': Buffer.byteLength(answer.body),
    };
    if (tipHeader && answer.status === 200) headers['X-Canonical-Stacks-Tip-Height'] = this.chain.tipHeight;
    res.writeHead(answer.status, headers);
    res.end(answer.body);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://devnet.invalid');
    const method = req.method ?? 'GET';
    const path = url.pathname;
    const isRpc = path.startsWith('/v2/') || path.startsWith('/v3/');
    let answer: HttpAnswer;
    try {
      answer = await this.route(method, path, url.searchParams, req, res);
    } catch (thrown) {
      if (!(thrown instanceof HttpAnswer)) throw thrown;
      answer = thrown;
    }
    this.send(res, answer, isRpc);
  }

  private async route(
    method: string,
    path: string,
    query: URLSearchParams,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<HttpAnswer> {
    if (method === 'GET' && path === '/v2/info') return json(200, this.info());
    const iface = INTERFACE_PATH.exec(path);
    if (method === 'GET' && iface) return this.contractInterface(iface[1]!, iface[2]!, query);
    const callRead = CALL_READ_PATH.exec(path);
    if (method === 'POST' && callRead)
      return this.callRead(callRead[1]!, callRead[2]!, callRead[3]!, query, req);
    const node = await nodeRoute(this.chain, method, path, query, req, this.log);
    if (node) return node;
    if (method === 'POST' && path === '/devnet/mine') return this.mine(req);
    if (method === 'POST' && path === '/devnet/call-public') return this.callPublic(req);
    if (method === 'POST' && path === '/devnet/outage') return this.outage(req, res);
    if (method === 'GET' && path === '/devnet/accounts') {
      return json(200, { deployer: DEPLOYER, accounts: DEVNET_ACCOUNTS, contracts: this.chain.contracts });
    }
    const block = BLOCK_PATH.exec(path);
    if (method === 'GET' && block) {
      const identity = this.chain.block(Number(block[1]));
      return identity ? json(200, identity) : json(404, { error: `no block at height ${block[1]}` });
    }
    return text(404, `No such endpoint: ${method} ${path}`);
  }

  /**
   * Each devnet start is a new chain, as a node's fresh chain state is: it names itself with a
   * genesis hash of its own, so that a cache of an earlier run can tell it belongs elsewhere.
   */
  private readonly genesisChainstateHash = randomBytes(32).toString('hex');

  /** GET /v2/info, with the fields of a Nakamoto node; hashes are derived (see blocks.ts). */
  private info() {
    const tip = this.chain.tip;
    const burnHeight = this.chain.burnBlockHeight;
    const burnConsensus = consensusHashOf(burnHeight).toString('hex');
    return {
      peer_version: 4207599116,
      pox_consensus: burnConsensus,
      burn_block_height: burnHeight,
      stable_pox_consensus: burnConsensus,
      stable_burn_block_height: burnHeight,
      server_version: 'stacks-node clarity-cache devnet (Clarity VM of @stacks/clarinet-sdk simnet)',
      network_id: 2147483648,
      parent_network_id: 3669344250,
      stacks_tip_height: tip.height,
      stacks_tip: tip.blockHash,
      stacks_tip_consensus_hash: tip.consensusHash,
      genesis_chainstate_hash: this.genesisChainstateHash,
      unanchored_tip: null,
      unanchored_seq: null,
      tenure_height: burnHeight,
      exit_at_block_height: null,
      is_fully_synced: true,
      node_public_key: null,
      node_public_key_hash: null,
      stackerdbs: [],
    };
  }

  /**
   * `?tip=`: absent, empty or `latest` is the chain tip; 64 hex digits name a block by its
   * index block hash (404 if unknown); anything else falls back to the tip, as a node does.
   */
  private tipHeight(query: URLSearchParams): number {
    const tip = query.get('tip');
    if (tip === null || !/^(?:0x)?[0-9a-fA-F]{64}$/.test(tip)) return this.chain.tipHeight;
    const height = this.chain.heightOf(tip);
    if (height === undefined) throw text(404, 'Chain tip not found');
    return height;
  }

  private contractInterface(address: string, name: string, query: URLSearchParams): HttpAnswer {
    const height = this.tipHeight(query);
    const iface = this.chain.contractInterface(`${address}.${name}`, height);
    if (!iface) return text(404, 'No contract interface data found');
    return json(200, iface);
  }

  private async callRead(
    address: string,
    contractName: string,
    rawFunction: string,
    query: URLSearchParams,
    req: IncomingMessage,
  ): Promise<HttpAnswer> {
    const body = await readBody(req);
    if (body.length === 0) throw text(400, 'Invalid Http request: invalid body length for CallReadOnly (0)');
    if (!isJsonContentType(req)) throw text(400, 'Invalid content-type: expected application/json');
    if (!validateStacksAddress(address)) throw text(400, 'Failed to parse contract address');
    const fn = decodePathSegment(rawFunction);
    if (fn === undefined || fn.length > 128 || !CLARITY_NAME.test(fn))
      throw text(400, 'Failed to parse function name');

    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      throw text(400, 'Failed to parse JSON body');
    }
    const request = parsed as { sender?: unknown; sponsor?: unknown; arguments?: unknown };
    if (
      typeof parsed !== 'object' ||
      parsed === null ||
      Array.isArray(parsed) ||
      typeof request.sender !== 'string' ||
      !(request.sponsor === undefined || request.sponsor === null || typeof request.sponsor === 'string') ||
      !Array.isArray(request.arguments) ||
      !request.arguments.every((arg) => typeof arg === 'string')
    ) {
      throw text(400, 'Failed to parse JSON body');
    }
    if (!isPrincipal(request.sender)) throw text(400, 'Failed to parse sender principal');
    if (typeof request.sponsor === 'string' && !isPrincipal(request.sponsor)) {
      throw text(400, 'Failed to parse sponsor principal');
    }
    if (request.sender.includes('.')) {
      // A node accepts a contract principal as sender; simnet refuses to run one.
      throw text(400, 'devnet limitation: simnet cannot use a contract principal as sender');
    }
    const args: ClarityValue[] = [];
    for (const hex of request.arguments as string[]) {
      const value = decodeArgument(hex);
      if (!value) throw text(400, 'Failed to deserialize argument value');
      args.push(value);
    }

    const height = this.tipHeight(query);
    const result = await this.chain.callReadOnly(
      `${address}.${contractName}`,
      fn,
      args,
      request.sender,
      height,
    );
    return json(200, result);
  }

  private async jsonBody(req: IncomingMessage, optional = false): Promise<Record<string, unknown>> {
    const body = await readBody(req);
    if (body.length === 0 && optional) return {};
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      throw json(400, { error: 'the body must be a JSON object' });
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw json(400, { error: 'the body must be a JSON object' });
    }
    return parsed as Record<string, unknown>;
  }

  private async outage(req: IncomingMessage, res: ServerResponse): Promise<HttpAnswer> {
    const body = await this.jsonBody(req, true);
    const seconds = body.seconds ?? 15;
    if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_OUTAGE_S) {
      throw json(400, { error: `seconds must be a number above 0 and at most ${MAX_OUTAGE_S}` });
    }
    // Stop once this answer is out, so that the caller learns when the node is back.
    res.once('finish', () => this.stopFor(seconds * 1000));
    return json(200, { until: new Date(Date.now() + seconds * 1000).toISOString() });
  }

  private async mine(req: IncomingMessage): Promise<HttpAnswer> {
    const body = await this.jsonBody(req, true);
    const blocks = body.blocks ?? 1;
    if (
      typeof blocks !== 'number' ||
      !Number.isInteger(blocks) ||
      blocks < 1 ||
      blocks > MAX_BLOCKS_PER_MINE
    ) {
      throw json(400, { error: `blocks must be an integer from 1 to ${MAX_BLOCKS_PER_MINE}` });
    }
    const tip: BlockIdentity = this.chain.mine(blocks);
    this.log(`devnet: mined ${blocks} block(s), tip ${tip.height}`);
    return json(200, { tip });
  }

  private async callPublic(req: IncomingMessage): Promise<HttpAnswer> {
    const body = await this.jsonBody(req);
    const { sender, contract, function: fn } = body;
    const rawArgs = body.arguments ?? [];
    if (typeof sender !== 'string' || !validateStacksAddress(sender)) {
      throw json(400, { error: 'sender must be a standard Stacks address (ST...)' });
    }
    if (
      typeof contract !== 'string' ||
      !isPrincipal(contract.includes('.') ? contract : `${DEPLOYER}.${contract}`)
    ) {
      throw json(400, {
        error: 'contract must be "<address>.<name>", or a name deployed by the devnet deployer',
      });
    }
    if (typeof fn !== 'string' || !CLARITY_NAME.test(fn))
      throw json(400, { error: 'function must be a Clarity name' });
    if (!Array.isArray(rawArgs) || !rawArgs.every((arg) => typeof arg === 'string')) {
      throw json(400, { error: 'arguments must be an array of hex-serialized Clarity values' });
    }
    const args: ClarityValue[] = [];
    for (const [i, hex] of (rawArgs as string[]).entries()) {
      const value = decodeArgument(hex);
      if (!value) throw json(400, { error: `arguments[${i}] is not one serialized Clarity value` });
      args.push(value);
    }
    const contractId = contract.includes('.') ? contract : `${DEPLOYER}.${contract}`;
    try {
      const outcome = this.chain.callPublic(contractId, fn, args, sender);
      this.log(
        `devnet: ${sender} called ${contractId}::${fn} → ${outcome.result} at height ${outcome.tip.height}`,
      );
      return json(200, outcome);
    } catch (error) {
      if (!(error instanceof DevnetCallError)) throw error;
      const status = error.nodeCause.includes('NoSuchContract') ? 404 : 400;
      return json(status, {
        error: `${contractId}::${fn} failed`,
        cause: error.nodeCause,
        tip: this.chain.tip,
      });
    }
  }
}
