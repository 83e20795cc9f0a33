/**
 * The devnet's node RPC and control API over real HTTP, against the real Clarity VM.
 * Tests run in file order and share one devnet; state-changing tests use accounts that the
 * read-only tests do not look at, or come last.
 */
import { Cl, type ClarityValue, cvToHex, deserializeCV } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { callPublic, callRead, callReadUrl, http, mine, readValue } from './helpers.js';

let devnet: Devnet;
let url: string;
let D: string;
let W1: string;
let W2: string;
let W3: string;
let TOKEN: string;
let NFT: string;
let DAO: string;

beforeAll(async () => {
  devnet = await startDevnet({ port: 0 });
  url = devnet.url;
  D = devnet.deployer;
  W1 = devnet.accounts.wallet_1;
  W2 = devnet.accounts.wallet_2;
  W3 = devnet.accounts.wallet_3;
  TOKEN = `${D}.demo-token`;
  NFT = `${D}.demo-nft`;
  DAO = `${D}.demo-dao`;
});

afterAll(async () => {
  await devnet?.close();
});

describe('start-up', () => {
  it('deploys the traits and the sample contracts from the devnet deployer', () => {
    expect(devnet.deployer).toBe('ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM');
    expect(devnet.contracts).toEqual(
      ['sip-010-trait-ft-standard', 'nft-trait', 'demo-token', 'demo-nft', 'demo-dao'].map(
        (n) => `${D}.${n}`,
      ),
    );
    expect(devnet.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });
});

describe('GET /v2/info', () => {
  it('reports the tip like a node, with the canonical tip height header', async () => {
    const res = await http(`${url}/v2/info`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const info = res.json;
    expect(info.stacks_tip_height).toBe(devnet.tipHeight());
    expect(info.stacks_tip_height).toBeGreaterThanOrEqual(6);
    expect(info.stacks_tip).toMatch(/^[0-9a-f]{64}$/);
    expect(info.stacks_tip_consensus_hash).toMatch(/^[0-9a-f]{40}$/);
    expect(info.burn_block_height).toBeGreaterThanOrEqual(1);
    expect(info.network_id).toBe(2147483648);
    expect(res.headers.get('x-canonical-stacks-tip-height')).toBe(String(info.stacks_tip_height));
  });

  it('names its chain with a genesis hash of its own: a fresh devnet is a fresh chain', async () => {
    const first = (await http(`${url}/v2/info`)).json.genesis_chainstate_hash;
    expect(first).toMatch(/^[0-9a-f]{64}$/);
    expect((await http(`${url}/v2/info`)).json.genesis_chainstate_hash).toBe(first);
    const other = await startDevnet({ port: 0 });
    try {
      expect((await http(`${other.url}/v2/info`)).json.genesis_chainstate_hash).not.toBe(first);
    } finally {
      await other.close();
    }
  });
});

describe('GET /v2/contracts/interface', () => {
  it('serves the ABI of each sample contract in the node shape', async () => {
    for (const contractId of devnet.contracts) {
      const [address, name] = contractId.split('.');
      const res = await http(`${url}/v2/contracts/interface/${address}/${name}`);
      expect(res.status, contractId).toBe(200);
      expect(res.headers.get('x-canonical-stacks-tip-height')).toMatch(/^\d+$/);
      expect(Object.keys(res.json).sort()).toEqual(
        [
          'clarity_version',
          'epoch',
          'functions',
          'fungible_tokens',
          'maps',
          'non_fungible_tokens',
          'variables',
        ].sort(),
      );
      expect(res.json.epoch).toBe('Epoch31');
      expect(res.json.clarity_version).toBe('Clarity3');
    }
  });

  it('describes demo-token as a SIP-010 token', async () => {
    const abi = (await http(`${url}/v2/contracts/interface/${D}/demo-token`)).json;
    expect(abi.fungible_tokens).toEqual([{ name: 'demo-token' }]);
    const byName = Object.fromEntries(abi.functions.map((f: { name: string }) => [f.name, f]));
    expect(byName['get-balance']).toEqual({
      name: 'get-balance',
      access: 'read_only',
      args: [{ name: 'who', type: 'principal' }],
      outputs: { type: { response: { ok: 'uint128', error: 'none' } } },
    });
    expect(byName['get-name'].outputs.type).toEqual({
      response: { ok: { 'string-ascii': { length: 10 } }, error: 'none' },
    });
    expect(byName.transfer.access).toBe('public');
    expect(byName.transfer.args.map((a: { type: unknown }) => a.type)).toEqual([
      'uint128',
      'principal',
      'principal',
      { optional: { buffer: { length: 34 } } },
    ]);
    expect(abi.variables).toContainEqual({
      name: 'token-uri',
      type: { optional: { 'string-utf8': { length: 256 } } },
      access: 'variable',
    });
  });

  it('describes demo-nft as a SIP-009 token and demo-dao with tuples, lists and maps', async () => {
    const nft = (await http(`${url}/v2/contracts/interface/${D}/demo-nft`)).json;
    expect(nft.non_fungible_tokens).toEqual([{ name: 'demo-nft', type: 'uint128' }]);
    const dao = (await http(`${url}/v2/contracts/interface/${D}/demo-dao`)).json;
    const preview = dao.functions.find((f: { name: string }) => f.name === 'preview-proposal');
    expect(preview.access).toBe('read_only');
    expect(preview.args).toContainEqual({
      name: 'tags',
      type: { list: { type: { 'string-ascii': { length: 16 } }, length: 5 } },
    });
    expect(dao.functions.find((f: { name: string }) => f.name === 'make-proposal').access).toBe('private');
    expect(dao.maps.map((m: { name: string }) => m.name)).toEqual(['members', 'proposals', 'votes']);
  });

  it('answers 404 text/plain for an unknown contract', async () => {
    const res = await http(`${url}/v2/contracts/interface/${D}/no-such-contract`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(res.text).toBe('No contract interface data found');
    expect(res.headers.get('x-canonical-stacks-tip-height')).toBeNull();
  });
});

describe('POST /v2/contracts/call-read: okay:true', () => {
  it('demo-token read-only functions', async () => {
    const read = (fn: string, args: ClarityValue[] = []) => readValue(url, TOKEN, fn, args, W2);
    expect(await read('get-name')).toEqual(Cl.ok(Cl.stringAscii('Demo Token')));
    expect(await read('get-symbol')).toEqual(Cl.ok(Cl.stringAscii('DEMO')));
    expect(await read('get-decimals')).toEqual(Cl.ok(Cl.uint(6)));
    expect(await read('get-total-supply')).toEqual(Cl.ok(Cl.uint(1_850_000_000_000n)));
    expect(await read('get-balance', [Cl.principal(W1)])).toEqual(Cl.ok(Cl.uint(500_000_000_000n)));
    expect(await read('get-balance', [Cl.principal(DAO)])).toEqual(Cl.ok(Cl.uint(100_000_000_000n)));
    expect(await read('get-balance', [Cl.principal(devnet.accounts.wallet_8)])).toEqual(Cl.ok(Cl.uint(0)));
    expect(await read('get-token-uri')).toEqual(
      Cl.ok(Cl.some(Cl.stringUtf8('https://example.com/demo-token.json'))),
    );
  });

  it('demo-nft read-only functions', async () => {
    const read = (fn: string, args: ClarityValue[] = []) => readValue(url, NFT, fn, args, D);
    expect(await read('get-last-token-id')).toEqual(Cl.ok(Cl.uint(3)));
    expect(await read('get-token-uri', [Cl.uint(2)])).toEqual(
      Cl.ok(Cl.some(Cl.stringAscii('https://example.com/demo-nft/2.json'))),
    );
    expect(await read('get-owner', [Cl.uint(1)])).toEqual(Cl.ok(Cl.some(Cl.principal(W1))));
    expect(await read('get-owner', [Cl.uint(3)])).toEqual(Cl.ok(Cl.some(Cl.principal(W2))));
    expect(await read('get-owner', [Cl.uint(99)])).toEqual(Cl.ok(Cl.none()));
  });

  it('demo-dao get-dao-info: a tuple of every kind of value, integers beyond 2^53 included', async () => {
    const info = await readValue(url, DAO, 'get-dao-info', [], D);
    expect(info.type).toBe('tuple');
    const fields = (info as { value: Record<string, ClarityValue> }).value;
    expect(fields['created-at']?.type).toBe('uint');
    const createdAt = (fields['created-at'] as { value: bigint }).value;
    expect(info).toEqual(
      Cl.tuple({
        name: Cl.stringAscii('Demo DAO'),
        motto: Cl.stringUtf8('Gouvernance décentralisée 🚀'),
        'treasury-cap': Cl.uint(2n ** 128n - 1n),
        'min-delta': Cl.int(-(2n ** 127n)),
        quorum: Cl.uint(2n ** 53n + 1n),
        'proposal-count': Cl.uint(2),
        'last-proposal-id': Cl.some(Cl.uint(2)),
        'treasury-locked': Cl.bool(true),
        founders: Cl.list([Cl.principal(D), Cl.principal(W1), Cl.principal(TOKEN)]),
        'charter-hash': fields['charter-hash']!,
        'created-at': Cl.uint(createdAt),
        settings: Cl.tuple({
          'voting-period': Cl.uint(144),
          'min-balance': Cl.some(Cl.uint(1_000_000)),
          veto: Cl.none(),
        }),
      }),
    );
    expect((fields['charter-hash'] as { type: string; value: string }).value).toMatch(/^[0-9a-f]{64}$/);
  });

  it('demo-dao proposals, members, votes and tallies', async () => {
    const read = (fn: string, args: ClarityValue[] = []) => readValue(url, DAO, fn, args, D);
    const p1 = await read('get-proposal', [Cl.uint(1)]);
    expect(p1.type).toBe('some');
    const proposal = (p1 as { value: { value: Record<string, ClarityValue> } }).value.value;
    expect(proposal.title).toEqual(Cl.stringAscii('Fund the devnet faucet'));
    expect(proposal.description).toEqual(Cl.stringUtf8('Send 1\u00a0000 STX to the faucet \u2014 💧'));
    expect(proposal.delta).toEqual(Cl.int(-250));
    expect(proposal.tags).toEqual(Cl.list([Cl.stringAscii('treasury'), Cl.stringAscii('faucet')]));
    expect(proposal.target).toEqual(Cl.some(Cl.principal(devnet.accounts.faucet)));
    expect(proposal['payload-hash']).toEqual(
      Cl.bufferFromHex('4bf5122f344554c53bde2ebb8cd2b7e3d1600ad631c385a5d7cce23c7785459a'),
    );
    expect(proposal['closes-at']?.type).toBe('some');

    const p2 = (await read('get-proposal', [Cl.uint(2)])) as {
      value: { value: Record<string, ClarityValue> };
    };
    expect(p2.value.value.delta).toEqual(Cl.int(2n ** 127n - 1n));
    expect(p2.value.value.tags).toEqual(Cl.list([]));
    expect(p2.value.value.target).toEqual(Cl.none());
    expect(p2.value.value['closes-at']).toEqual(Cl.none());
    expect(p2.value.value.executed).toEqual(Cl.bool(true));

    expect(await read('get-proposal', [Cl.uint(99)])).toEqual(Cl.none());
    expect(await read('get-proposal-ids')).toEqual(Cl.list([Cl.uint(1), Cl.uint(2)]));
    const member = await read('get-member', [Cl.principal(W1)]);
    expect(member.type).toBe('ok');
    expect((member as { value: { value: Record<string, ClarityValue> } }).value.value.role).toEqual(
      Cl.stringAscii('member'),
    );
    expect(await read('get-member', [Cl.principal(devnet.accounts.wallet_7)])).toEqual(
      Cl.error(Cl.uint(404)),
    );
    expect(await read('is-member', [Cl.principal(D)])).toEqual(Cl.bool(true));
    expect(await read('get-vote', [Cl.uint(1), Cl.principal(W2)])).toEqual(
      Cl.some(Cl.tuple({ 'in-favor': Cl.bool(false), weight: Cl.uint(5) })),
    );
    expect(await read('get-vote', [Cl.uint(2), Cl.principal(W2)])).toEqual(Cl.none());
    expect(await read('get-tally', [Cl.uint(1)])).toEqual(
      Cl.ok(Cl.tuple({ for: Cl.uint(100), against: Cl.uint(5), net: Cl.int(95) })),
    );
    expect(await read('get-share', [Cl.uint(10), Cl.uint(3)])).toEqual(Cl.uint(3));
  });

  it('returns (err ...) values as okay:true, like a node', async () => {
    const res = await callRead(url, DAO, 'get-treasury-withdrawal', [Cl.uint(5)], D);
    expect(res.status).toBe(200);
    expect(res.json.okay).toBe(true);
    const value = deserializeCV(res.json.result) as { type: string; value: ClarityValue };
    expect(value.type).toBe('err');
    expect((value.value as { value: Record<string, ClarityValue> }).value.reason).toEqual(
      Cl.stringAscii('treasury is locked'),
    );
  });

  it('runs as the given sender and takes arguments of every kind', async () => {
    const args = [
      Cl.stringAscii('Ship it'),
      Cl.stringUtf8('naïve café ✓'),
      Cl.int(-42),
      Cl.list([Cl.stringAscii('a'), Cl.stringAscii('b')]),
      Cl.bufferFromHex('00'.repeat(31) + 'ff'),
      Cl.some(Cl.principal(DAO)),
    ];
    const preview = await readValue(url, DAO, 'preview-proposal', args, W2);
    const tuple = (preview as { value: { value: Record<string, ClarityValue> } }).value.value;
    expect(preview.type).toBe('ok');
    expect(tuple.proposer).toEqual(Cl.principal(W2));
    expect(tuple.description).toEqual(Cl.stringUtf8('naïve café ✓'));
    expect(tuple.delta).toEqual(Cl.int(-42));
    expect(tuple.target).toEqual(Cl.some(Cl.principal(DAO)));
    expect(tuple['votes-for']).toEqual(Cl.uint(0));
    // A node accepts arguments with or without the 0x prefix.
    const bare = await http(callReadUrl(url, TOKEN, 'get-balance'), {
      body: { sender: D, arguments: [cvToHex(Cl.principal(W1)).slice(2)] },
    });
    expect(bare.json).toEqual({ okay: true, result: cvToHex(Cl.ok(Cl.uint(500_000_000_000n))) });
  });

  it('sets X-Canonical-Stacks-Tip-Height on successes', async () => {
    const res = await callRead(url, TOKEN, 'get-name', [], D);
    expect(res.headers.get('x-canonical-stacks-tip-height')).toBe(String(devnet.tipHeight()));
  });

  it('runs a public function that writes nothing, as a node does', async () => {
    expect(await readValue(url, DAO, 'ping', [], D)).toEqual(Cl.ok(Cl.uint(2)));
    // vote from a non-member returns before any write
    expect(await readValue(url, DAO, 'vote', [Cl.uint(1), Cl.bool(true)], devnet.accounts.wallet_6)).toEqual(
      Cl.error(Cl.uint(401)),
    );
  });
});

describe('POST /v2/contracts/call-read: okay:false', () => {
  async function cause(contractId: string, fn: string, args: ClarityValue[], sender = D): Promise<string> {
    const res = await callRead(url, contractId, fn, args, sender);
    expect(res.status).toBe(200);
    expect(res.json.okay).toBe(false);
    expect(res.json.result).toBeUndefined();
    expect(res.headers.get('x-canonical-stacks-tip-height')).toMatch(/^\d+$/);
    return res.json.cause;
  }

  it('unknown contract', async () => {
    expect(await cause(`${D}.no-such-contract`, 'get-name', [])).toBe(
      `RuntimeCheck(NoSuchContract("${D}.no-such-contract"))`,
    );
  });

  it('undefined function', async () => {
    expect(await cause(TOKEN, 'get-nothing', [])).toBe('RuntimeCheck(UndefinedFunction("get-nothing"))');
  });

  it('private function', async () => {
    expect(await cause(NFT, 'mint-at-deploy', [Cl.principal(W1)])).toBe(
      `RuntimeCheck(NoSuchPublicFunction("${NFT}", "mint-at-deploy"))`,
    );
  });

  it('public function that writes', async () => {
    expect(await cause(DAO, 'join', [], devnet.accounts.wallet_5)).toBe('NotReadOnly');
    expect(
      await cause(TOKEN, 'transfer', [Cl.uint(1), Cl.principal(W1), Cl.principal(W2), Cl.none()], W1),
    ).toBe('NotReadOnly');
    // ... and the trial left the chain untouched
    expect(await readValue(url, DAO, 'is-member', [Cl.principal(devnet.accounts.wallet_5)], D)).toEqual(
      Cl.bool(false),
    );
    expect(await readValue(url, TOKEN, 'get-balance', [Cl.principal(W1)], D)).toEqual(
      Cl.ok(Cl.uint(500_000_000_000n)),
    );
  });

  it('wrong argument count and types', async () => {
    expect(await cause(TOKEN, 'get-balance', [])).toBe('RuntimeCheck(IncorrectArgumentCount(1, 0))');
    expect(await cause(TOKEN, 'get-balance', [Cl.principal(W1), Cl.uint(1)])).toBe(
      'RuntimeCheck(IncorrectArgumentCount(1, 2))',
    );
    expect(await cause(NFT, 'get-owner', [Cl.int(1)])).toMatch(
      /^RuntimeCheck\(TypeValueError\(UIntType, .*Int\(1\)/,
    );
  });

  it('runtime errors', async () => {
    const divide = await cause(DAO, 'get-share', [Cl.uint(1), Cl.uint(0)]);
    expect(divide).toMatch(/^DivisionByZero\n Stack Trace: \n/);
    expect(divide).toContain(`${DAO}:get-share`);
  });
});

describe('POST /v2/contracts/call-read: bad requests are 400 text/plain', () => {
  const cases: Array<[string, { body?: unknown; rawBody?: string; contentType?: string | null }, string]> = [
    ['not JSON', { rawBody: '{"sender": ' }, 'Failed to parse JSON body'],
    ['a JSON array', { body: [] }, 'Failed to parse JSON body'],
    [
      'no arguments field',
      { body: { sender: 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM' } },
      'Failed to parse JSON body',
    ],
    [
      'arguments not strings',
      { body: { sender: 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM', arguments: [1] } },
      'Failed to parse JSON body',
    ],
    [
      'a bad sender',
      { body: { sender: 'not-a-principal', arguments: [] } },
      'Failed to parse sender principal',
    ],
    [
      'a bad checksum',
      { body: { sender: 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGN', arguments: [] } },
      'Failed to parse sender principal',
    ],
    [
      'undecodable hex',
      { body: { sender: 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM', arguments: ['0xzz'] } },
      'Failed to deserialize argument value',
    ],
    [
      'an unknown type byte',
      { body: { sender: 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM', arguments: ['0x7f'] } },
      'Failed to deserialize argument value',
    ],
    [
      'truncated data',
      { body: { sender: 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM', arguments: ['0x0100'] } },
      'Failed to deserialize argument value',
    ],
    [
      'trailing bytes',
      {
        body: {
          sender: 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM',
          arguments: [`${cvToHex(Cl.uint(1))}00`],
        },
      },
      'Failed to deserialize argument value',
    ],
    ['no body', { rawBody: '' }, 'Invalid Http request: invalid body length for CallReadOnly (0)'],
    [
      'a non-JSON content type',
      {
        body: { sender: 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM', arguments: [] },
        contentType: 'text/plain',
      },
      'Invalid content-type: expected application/json',
    ],
  ];
  for (const [label, init, message] of cases) {
    it(label, async () => {
      const res = await http(callReadUrl(url, TOKEN, 'get-name'), init);
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(res.text).toBe(message);
    });
  }

  it('answers 404 for paths a node does not serve', async () => {
    const res = await http(`${url}/v2/contracts/call-read/not-an-address/demo-token/get-name`, {
      body: { sender: D, arguments: [] },
    });
    expect(res.status).toBe(404);
  });
});

describe('control API and state changes', () => {
  it('transfers tokens with call-public and get-balance shows it', async () => {
    const before = devnet.tipHeight();
    const balanceOf = async (who: string) => readValue(url, TOKEN, 'get-balance', [Cl.principal(who)], D);
    expect(await balanceOf(W3)).toEqual(Cl.ok(Cl.uint(0)));

    const res = await callPublic(url, {
      sender: W1,
      contract: TOKEN,
      function: 'transfer',
      arguments: [
        Cl.uint(1_234_567),
        Cl.principal(W1),
        Cl.principal(W3),
        Cl.some(Cl.bufferFromAscii('hello')),
      ],
    });
    expect(res.status).toBe(200);
    expect(res.json.result).toBe(cvToHex(Cl.ok(Cl.bool(true))));
    expect(res.json.committed).toBe(true);
    expect(res.json.tip.height).toBe(before + 1);
    expect(res.json.tip.indexBlockHash).toMatch(/^[0-9a-f]{64}$/);
    expect(res.json.events.map((e: { event: string }) => e.event)).toEqual([
      'ft_transfer_event',
      'print_event',
    ]);
    expect(devnet.tipHeight()).toBe(before + 1);

    expect(await balanceOf(W3)).toEqual(Cl.ok(Cl.uint(1_234_567)));
    expect(await balanceOf(W1)).toEqual(Cl.ok(Cl.uint(500_000_000_000n - 1_234_567n)));
  });

  it('returns an (err ...) result without committing', async () => {
    const res = await callPublic(url, {
      sender: W3,
      contract: 'demo-token', // a bare name is the deployer's
      function: 'transfer',
      arguments: [Cl.uint(5), Cl.principal(W1), Cl.principal(W3), Cl.none()],
    });
    expect(res.status).toBe(200);
    expect(res.json.result).toBe(cvToHex(Cl.error(Cl.uint(101))));
    expect(res.json.committed).toBe(false);
  });

  it('changes DAO state that read-only calls then see', async () => {
    const vote = await callPublic(url, {
      sender: W1,
      contract: DAO,
      function: 'vote',
      arguments: [Cl.uint(2), Cl.bool(false)],
    });
    expect(vote.json.result).toBe(cvToHex(Cl.ok(Cl.bool(true))));
    expect(await readValue(url, DAO, 'get-tally', [Cl.uint(2)], D)).toEqual(
      Cl.ok(Cl.tuple({ for: Cl.uint(0), against: Cl.uint(10), net: Cl.int(-10) })),
    );
  });

  it('mines blocks and advances the tip', async () => {
    const info = (await http(`${url}/v2/info`)).json;
    const one = await mine(url);
    expect(one.status).toBe(200);
    expect(one.json.tip.height).toBe(info.stacks_tip_height + 1);
    const five = await mine(url, 5);
    expect(five.json.tip.height).toBe(info.stacks_tip_height + 6);
    const after = await http(`${url}/v2/info`);
    expect(after.json.stacks_tip_height).toBe(info.stacks_tip_height + 6);
    expect(after.json.burn_block_height).toBe(info.burn_block_height + 6);
    expect(after.json.stacks_tip).not.toBe(info.stacks_tip);
    expect(after.json.stacks_tip).toBe(five.json.tip.blockHash);
    expect(after.headers.get('x-canonical-stacks-tip-height')).toBe(String(info.stacks_tip_height + 6));
  });

  it('refuses bad control requests', async () => {
    expect((await mine(url, 0)).status).toBe(400);
    expect((await http(`${url}/devnet/mine`, { rawBody: 'nope' })).status).toBe(400);
    const readOnly = await callPublic(url, {
      sender: D,
      contract: TOKEN,
      function: 'get-name',
      arguments: [],
    });
    expect(readOnly.status).toBe(400);
    expect(readOnly.json.cause).toBe(`RuntimeCheck(NoSuchPublicFunction("${TOKEN}", "get-name"))`);
    const unknown = await callPublic(url, { sender: D, contract: `${D}.nope`, function: 'x', arguments: [] });
    expect(unknown.status).toBe(404);
    const count = await callPublic(url, { sender: D, contract: TOKEN, function: 'transfer', arguments: [] });
    expect(count.status).toBe(400);
    expect(count.json.cause).toBe('RuntimeCheck(IncorrectArgumentCount(4, 0))');
    const types = await callPublic(url, {
      sender: D,
      contract: TOKEN,
      function: 'transfer',
      arguments: [Cl.int(1), Cl.principal(D), Cl.principal(W1), Cl.none()],
    });
    expect(types.status).toBe(400);
    expect(types.json.cause).toMatch(/TypeValueError/);
    const badSender = await http(`${url}/devnet/call-public`, {
      body: { sender: 'nobody', contract: TOKEN, function: 'transfer', arguments: [] },
    });
    expect(badSender.status).toBe(400);
  });
});

describe('?tip= (answers as of an earlier block)', () => {
  it('answers call-read and interface as of the block with that index block hash', async () => {
    const before = (await http(`${url}/devnet/blocks/${devnet.tipHeight()}`)).json;
    const balanceAt = (tip?: string) => readValue(url, TOKEN, 'get-balance', [Cl.principal(W2)], W2, tip);
    const start = await balanceAt();
    const res = await callPublic(url, {
      sender: W2,
      contract: TOKEN,
      function: 'transfer',
      arguments: [Cl.uint(1000), Cl.principal(W2), Cl.principal(W3), Cl.none()],
    });
    expect(res.json.committed).toBe(true);
    await mine(url, 2);

    expect(await balanceAt()).toEqual(Cl.ok(Cl.uint(250_000_000_000n - 1000n)));
    expect(await balanceAt(before.indexBlockHash)).toEqual(start);
    expect(await balanceAt(`0x${before.indexBlockHash}`)).toEqual(start);
    expect(await balanceAt(res.json.tip.indexBlockHash)).toEqual(Cl.ok(Cl.uint(250_000_000_000n - 1000n)));
    expect(await balanceAt('latest')).toEqual(Cl.ok(Cl.uint(250_000_000_000n - 1000n)));

    // Before demo-dao was deployed it did not exist.
    const daoHeight = devnet.contracts.indexOf(DAO) + 2; // traits and tokens first, from height 2
    const early = (await http(`${url}/devnet/blocks/${daoHeight - 1}`)).json;
    const missing = await callRead(url, DAO, 'get-dao-info', [], D, early.indexBlockHash);
    expect(missing.json).toEqual({ okay: false, cause: `RuntimeCheck(NoSuchContract("${DAO}"))` });
    const abi = await http(`${url}/v2/contracts/interface/${D}/demo-dao?tip=${early.indexBlockHash}`);
    expect(abi.status).toBe(404);
    const abiLater = await http(`${url}/v2/contracts/interface/${D}/demo-dao?tip=${before.indexBlockHash}`);
    expect(abiLater.status).toBe(200);

    // A write-free public function as of an earlier block, too.
    expect(await readValue(url, DAO, 'ping', [], D, before.indexBlockHash)).toEqual(Cl.ok(Cl.uint(2)));
  });

  it('answers 404 for an unknown tip', async () => {
    const res = await callRead(url, TOKEN, 'get-name', [], D, 'ab'.repeat(32));
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(res.text).toBe('Chain tip not found');
  });
});
