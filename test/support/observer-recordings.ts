/**
 * Recorded event-observer traffic of real Stacks nodes (test/fixtures/observer-recordings/,
 * README.md there says where each comes from): one posted payload a line, gzip-compressed.
 *
 * A line is a row of PostgreSQL's COPY text format with four tab-separated columns: the
 * request's id, when it was received, the path it was posted to, and the body as posted
 * (JSON). In that format a backslash starts an escape (`\\`, `\t`, `\n`, `\r`, `\b`, `\f`,
 * `\v`, octal `\ddd`, hex `\xhh`); they are undone here, so `body` is the bytes the node sent.
 *
 * `loadRecording` keeps the event-observer routes (the ones a Stacks node posts to its
 * observers), in order, and counts the lines it skips. `chainBreaks` reads the recorded chain
 * itself (not the gateway's code) and says, block by block, whether a cached read of a
 * contract that no block touches can stay current across that block, and if not why.
 */

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import {
  addressFromVersionHash,
  addressHashModeToVersion,
  addressToString,
  deserializeTransaction,
  PayloadType,
} from '@stacks/transactions';

export const RECORDINGS_DIR = path.resolve(import.meta.dirname, '../fixtures/observer-recordings');

/** The routes a Stacks node posts to an event observer. */
export const OBSERVER_ROUTES: readonly string[] = [
  '/new_block',
  '/new_burn_block',
  '/new_mempool_tx',
  '/drop_mempool_tx',
  '/attachments/new',
  '/new_microblocks',
  '/stackerdb_chunks',
  '/proposal_response',
];

export function isObserverRoute(route: string): boolean {
  return OBSERVER_ROUTES.includes(route) || route.startsWith('/mined_');
}

/** One recorded post, as the node sent it. */
export interface RecordedPost {
  /** 1-based line of the recording. */
  readonly line: number;
  /** The recording's own id of the request (first column). */
  readonly id: string;
  readonly receivedAt: string;
  readonly path: string;
  readonly body: string;
}

export interface Recording {
  /** File name without `.tsv.gz`. */
  readonly name: string;
  readonly posts: readonly RecordedPost[];
  /** Lines that were not an event-observer post (other paths, or malformed rows), by reason. */
  readonly skipped: Readonly<Record<string, number>>;
}

/** The recordings present, by name (`<name>.tsv.gz`), sorted. */
export function recordingNames(dir = RECORDINGS_DIR): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.tsv.gz'))
    .map((f) => f.slice(0, -'.tsv.gz'.length))
    .sort();
}

export function loadRecording(name: string, dir = RECORDINGS_DIR): Recording {
  const text = gunzipSync(readFileSync(path.join(dir, `${name}.tsv.gz`))).toString('utf8');
  const posts: RecordedPost[] = [];
  const skipped: Record<string, number> = {};
  const skip = (reason: string) => {
    skipped[reason] = (skipped[reason] ?? 0) + 1;
  };
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  lines.forEach((raw, index) => {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const columns = line.split('\t');
    if (columns.length !== 4) {
      skip(`malformed row (${columns.length} columns)`);
      return;
    }
    const [id, receivedAt, route, body] = columns.map(unescapeCopyText) as [string, string, string, string];
    if (!isObserverRoute(route)) {
      skip(route);
      return;
    }
    posts.push({ line: index + 1, id, receivedAt, path: route, body });
  });
  return { name, posts, skipped };
}

/** Yields a recording's posts in order (the replay's source). */
export function* recordedPosts(name: string, dir = RECORDINGS_DIR): Generator<RecordedPost> {
  yield* loadRecording(name, dir).posts;
}

/** Undoes PostgreSQL COPY text-format escapes. */
export function unescapeCopyText(value: string): string {
  if (!value.includes('\\')) return value;
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (c !== '\\' || i + 1 >= value.length) {
      out += c;
      continue;
    }
    const next = value[++i]!;
    const simple: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' };
    if (next in simple) out += simple[next];
    else if (next === 'x' && /^[0-9a-fA-F]/.test(value[i + 1] ?? '')) {
      const hex = /^[0-9a-fA-F]{1,2}/.exec(value.slice(i + 1))![0];
      out += String.fromCharCode(Number.parseInt(hex, 16));
      i += hex.length;
    } else if (/[0-7]/.test(next)) {
      const oct = /^[0-7]{1,3}/.exec(value.slice(i))![0];
      out += String.fromCharCode(Number.parseInt(oct, 8));
      i += oct.length - 1;
    } else out += next;
  }
  return out;
}

// --- the recorded chain, read independently of the gateway ---

export type Network = 'mainnet' | 'testnet';

/** The network of a recording: its transactions' version byte (0x00 mainnet, 0x80 testnet), else its addresses. */
export function recordingNetwork(recording: Recording): Network {
  for (const post of recording.posts) {
    if (post.path !== '/new_block' && post.path !== '/new_microblocks') continue;
    const block = parseJson(post.body) as { transactions?: { raw_tx?: unknown }[] } | undefined;
    for (const tx of block?.transactions ?? []) {
      if (typeof tx.raw_tx !== 'string' || tx.raw_tx.length < 4 || tx.raw_tx === '0x00') continue;
      const version = Number.parseInt(tx.raw_tx.replace(/^0x/, '').slice(0, 2), 16);
      if (version === 0x00) return 'mainnet';
      if (version === 0x80) return 'testnet';
    }
  }
  const all = recording.posts.map((p) => p.body).join('\n');
  return /"S[PM][0-9A-Z]{20,}/.test(all) ? 'mainnet' : 'testnet';
}

/** Why a block ends every proof (or touches the read), from the recording's own data. */
export type BreakCause =
  /** The first block of the replay: nothing is cached yet. */
  | 'first'
  /** A height above the previous block's plus one (a missed block). */
  | 'gap'
  /** The parent is not the previous block (a reorg, a fork, a sibling at the same height, a restart). */
  | 'parent'
  /** A payload since the previous block could not be used (it may have been a block). */
  | 'unusable'
  /**
   * The block right after a gap, fork or unusable payload: a read made at the block that began
   * the new run may have come from a node still on the other fork (it reports the same
   * height), so it is not proven past it.
   */
  | 'after-break'
  /** A burnchain operation (`raw_tx` "0x00"): it moves balances the node writes itself. */
  | 'burnchain-op'
  /** A transaction that does not decode. */
  | 'undecodable'
  /** A poison-microblock report (it moves miner rewards). */
  | 'poison-microblock'
  /** A call into a contract whose source the replay does not have (its reach is unknown). */
  | 'unknown-reach'
  /** The block runs or names the read contract itself. */
  | 'touches-read';

export interface RecordedBlock {
  /** Index of the post in `recording.posts`. */
  readonly post: number;
  readonly height: number;
  /** 64 lowercase hex digits. */
  readonly indexBlockHash: string;
  readonly parentIndexBlockHash: string;
  /** Why a read cached before this block cannot be a hit after it; none: it can. */
  readonly causes: readonly BreakCause[];
  /** A repeat of a block already posted (changes nothing). */
  readonly duplicate: boolean;
}

export interface ChainBreakOptions {
  /** The contract read (it must not be touched; a block that does is a break). */
  readonly readContract: string;
  /** Contracts whose source the replay has (a call into another non-boot contract has unknown reach). */
  readonly knownSources: ReadonlySet<string>;
}

const BOOT_ADDRESSES = new Set(['SP000000000000000000002Q6VF78', 'ST000000000000000000002AMW42H']);
const HASH = /^(0x)?[0-9a-fA-F]{64}$/;

/**
 * Every usable /new_block of the recording with the reasons, if any, why a cached read of
 * `readContract` taken after the block before it is not current after it. The rules, from the
 * node's payloads: STX transfers, coinbases and tenure changes touch no contract; a contract
 * call touches the called contract and what it reaches (boot contracts reach nothing else;
 * other contracts are known only through `knownSources`); a deploy touches the deployed
 * contract; events naming a contract touch it; burnchain operations, undecodable
 * transactions and poison-microblock reports touch everything; a height gap, a parent that is not the previous block and an
 * unusable payload end every proof.
 */
export function chainBreaks(recording: Recording, options: ChainBreakOptions): RecordedBlock[] {
  const blocks: RecordedBlock[] = [];
  const seen = new Set<string>();
  let previous: { height: number; hash: string } | undefined;
  let lostSincePrevious = false;
  let previousBroke = false;
  recording.posts.forEach((post, index) => {
    if (post.path !== '/new_block' && post.path !== '/new_burn_block') return;
    const body = parseJson(post.body);
    if (post.path === '/new_burn_block') {
      if (!usableBurnBlock(body)) lostSincePrevious = true;
      return;
    }
    if (!usableBlock(body)) {
      lostSincePrevious = true;
      return;
    }
    const hash = body.index_block_hash.replace(/^0x/, '').toLowerCase();
    const parent = body.parent_index_block_hash.replace(/^0x/, '').toLowerCase();
    if (seen.has(hash)) {
      blocks.push({
        post: index,
        height: body.block_height,
        indexBlockHash: hash,
        parentIndexBlockHash: parent,
        causes: lostSincePrevious ? ['unusable'] : [],
        duplicate: true,
      });
      return;
    }
    seen.add(hash);
    const causes = new Set<BreakCause>();
    if (previous === undefined) causes.add('first');
    else if (body.block_height > previous.height + 1) causes.add('gap');
    else if (body.block_height !== previous.height + 1 || parent !== previous.hash) causes.add('parent');
    if (lostSincePrevious) causes.add('unusable');
    if (previousBroke) causes.add('after-break');
    for (const cause of transactionCauses(body.transactions, options)) causes.add(cause);
    if (eventsName(body.events, options.readContract)) causes.add('touches-read');
    blocks.push({
      post: index,
      height: body.block_height,
      indexBlockHash: hash,
      parentIndexBlockHash: parent,
      causes: [...causes],
      duplicate: false,
    });
    previous = { height: body.block_height, hash };
    previousBroke = causes.has('gap') || causes.has('parent') || causes.has('unusable');
    lostSincePrevious = false;
  });
  return blocks;
}

/** Whether a /new_block or /new_burn_block body carries what the observer needs (JSON, the fields of the node's payload). */
export function usablePayload(post: RecordedPost): boolean {
  const body = parseJson(post.body);
  return post.path === '/new_block' ? usableBlock(body) : usableBurnBlock(body);
}

interface UsableBlock {
  block_height: number;
  index_block_hash: string;
  parent_index_block_hash: string;
  transactions: { raw_tx: string }[];
  events: unknown[];
}

function usableBlock(body: unknown): body is UsableBlock {
  if (typeof body !== 'object' || body === null) return false;
  const b = body as Record<string, unknown>;
  return (
    Number.isInteger(b.block_height) &&
    (b.block_height as number) >= 0 &&
    typeof b.index_block_hash === 'string' &&
    HASH.test(b.index_block_hash) &&
    typeof b.parent_index_block_hash === 'string' &&
    HASH.test(b.parent_index_block_hash) &&
    Array.isArray(b.transactions) &&
    b.transactions.every(
      (t) => typeof t === 'object' && t !== null && typeof (t as { raw_tx?: unknown }).raw_tx === 'string',
    ) &&
    Array.isArray(b.events)
  );
}

function usableBurnBlock(body: unknown): boolean {
  if (typeof body !== 'object' || body === null) return false;
  const b = body as Record<string, unknown>;
  return (
    Number.isInteger(b.burn_block_height) &&
    (b.burn_block_height as number) >= 0 &&
    typeof b.burn_block_hash === 'string' &&
    HASH.test(b.burn_block_hash)
  );
}

function transactionCauses(
  transactions: { raw_tx: string; status?: unknown }[],
  options: ChainBreakOptions,
): BreakCause[] {
  const causes: BreakCause[] = [];
  for (const { raw_tx, status } of transactions) {
    if (raw_tx === '0x00') {
      causes.push('burnchain-op');
      continue;
    }
    // A transaction the node reports failed changed nothing but its fee and nonce.
    if (typeof status === 'string' && status !== 'success') continue;
    let tx: ReturnType<typeof deserializeTransaction>;
    try {
      tx = deserializeTransaction(raw_tx.replace(/^0x/, ''));
    } catch {
      causes.push('undecodable');
      continue;
    }
    const payload = tx.payload;
    if (payload.payloadType === PayloadType.ContractCall) {
      const id = `${addressToString(payload.contractAddress)}.${payload.contractName.content}`;
      if (id === options.readContract) causes.push('touches-read');
      else if (!BOOT_ADDRESSES.has(id.split('.')[0]!) && !options.knownSources.has(id))
        causes.push('unknown-reach');
    } else if (
      payload.payloadType === PayloadType.SmartContract ||
      payload.payloadType === PayloadType.VersionedSmartContract
    ) {
      // A deploy touches the contract it creates (never the read one, which exists already),
      // and what its own deploy-time code calls: a contract the replay has no source for
      // reaches what nobody can tell. Calls inside function definitions do not run at deploy.
      const condition = tx.auth.spendingCondition;
      const deployer = addressToString(
        addressFromVersionHash(
          addressHashModeToVersion(condition.hashMode, tx.transactionVersion === 0 ? 'mainnet' : 'testnet'),
          condition.signer,
        ),
      );
      for (const target of deployTimeCalls(payload.codeBody.content)) {
        const id = target.startsWith('.') ? `${deployer}${target}` : target.replace(/^'/, '');
        if (!BOOT_ADDRESSES.has(id.split('.')[0]!) && !options.knownSources.has(id))
          causes.push('unknown-reach');
      }
    } else if (payload.payloadType === PayloadType.PoisonMicroblock) {
      causes.push('poison-microblock');
    }
    // Token transfers, coinbases (all kinds) and tenure changes touch no contract.
  }
  return causes;
}

/**
 * The targets (as written: `.name`, `'SP….name`, or a trait parameter's name) of the
 * `contract-call?`s a contract's code makes at deploy time: outside its function definitions,
 * once comments and strings are blanked out. A crude scan of the test's own, independent of the
 * gateway's reader.
 */
function deployTimeCalls(code: string): string[] {
  // Blank out strings and comments, keeping every other character where it was.
  let plain = '';
  for (let i = 0; i < code.length; i++) {
    const c = code[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < code.length && code[j] !== '"') j += code[j] === '\\' ? 2 : 1;
      plain += ' '.repeat(j - i + 1);
      i = j;
    } else if (c === ';') {
      let j = i;
      while (j < code.length && code[j] !== '\n') j++;
      plain += ' '.repeat(j - i);
      i = j - 1;
    } else plain += c;
  }
  // Drop every (define-public …), (define-read-only …) and (define-private …) form.
  let outside = '';
  for (let i = 0; i < plain.length; i++) {
    if (plain[i] === '(' && /^\(\s*define-(public|read-only|private)\b/.test(plain.slice(i, i + 40))) {
      let depth = 0;
      let j = i;
      for (; j < plain.length; j++) {
        if (plain[j] === '(') depth++;
        else if (plain[j] === ')' && --depth === 0) break;
      }
      i = j;
    } else outside += plain[i];
  }
  return [...outside.matchAll(/contract-call\?\s+([^\s()]+)/g)].map((m) => m[1]!);
}

function eventsName(events: unknown[], contract: string): boolean {
  for (const event of events) {
    if (typeof event !== 'object' || event === null) continue;
    for (const value of Object.values(event)) {
      if (typeof value !== 'object' || value === null) continue;
      const v = value as Record<string, unknown>;
      for (const named of [v.contract_identifier, v.asset_identifier]) {
        if (typeof named === 'string' && named.split('::')[0] === contract) return true;
      }
    }
  }
  return false;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// --- replaying a recording over real HTTP ---

export interface ReplayTarget {
  /** Base URL of the observer's listener (http://host:port). */
  readonly observerUrl: string;
  /**
   * Resolves once `count` /new_block and /new_burn_block bodies were handed in and applied
   * (`post` is the last one posted).
   */
  untilHandled(count: number, post: RecordedPost): Promise<void>;
  /** After each block of `blocks` was applied (not after unusable payloads). */
  afterBlock?(block: RecordedBlock): Promise<void>;
}

export interface PostAnswer {
  readonly line: number;
  readonly path: string;
  readonly status: number;
}

/**
 * Posts every payload of `recording` to the observer in order, over HTTP, as the node would
 * (one at a time: the node waits for each answer), waiting after each /new_block and
 * /new_burn_block until the gateway has applied it. Returns every answer's status.
 */
export async function replay(
  recording: Recording,
  blocks: readonly RecordedBlock[],
  target: ReplayTarget,
): Promise<PostAnswer[]> {
  const byPost = new Map(blocks.map((b) => [b.post, b]));
  const answers: PostAnswer[] = [];
  let handed = 0;
  for (const [index, post] of recording.posts.entries()) {
    const res = await fetch(`${target.observerUrl}${post.path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: post.body,
    });
    await res.arrayBuffer();
    answers.push({ line: post.line, path: post.path, status: res.status });
    if (post.path !== '/new_block' && post.path !== '/new_burn_block') continue;
    handed++;
    await target.untilHandled(handed, post);
    const block = byPost.get(index);
    if (block !== undefined) await target.afterBlock?.(block);
  }
  return answers;
}

/**
 * The read the replays keep asking: a contract no recorded block touches (a data var read by a
 * read-only function), as the stand-in node serves it, for the test and the bench alike.
 */
export const UNTOUCHED_READ = {
  name: 'untouched-counter',
  fn: 'get-count',
  source: '(define-data-var n uint u7)\n(define-read-only (get-count) (var-get n))\n',
  /** u7, serialized: the var's value. */
  result: '0x0100000000000000000000000000000007',
  abi: {
    functions: [{ name: 'get-count', access: 'read_only', args: [], outputs: { type: 'uint128' } }],
    variables: [{ name: 'n', type: 'uint128', access: 'variable' }],
    maps: [],
    fungible_tokens: [],
    non_fungible_tokens: [],
    epoch: 'Epoch31',
    clarity_version: 'Clarity3',
  },
} as const;
