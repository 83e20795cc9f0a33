/**
 * A broadcast (`POST /v2/transactions`) is sent once to one upstream and never resent once its
 * body may have gone out; but an upstream that refuses the connection was sent nothing, so the
 * broadcast goes to the next one (docs/upstreams.md). Over real HTTP: a closed port first (a
 * port freed after listening), then fake nodes that record what they receive.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { type RunningGateway, startGateway, testEnv } from '../../support/gateway.js';

// A testnet STX transfer's first bytes: version 0x80 names the network.
const TX = Uint8Array.from([0x80, 0x80, 0, 0, 0, 0x04, 0x00, 1, 2, 3]);
const TXID = `0x${'ab'.repeat(32)}`;

const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.close();
});

/** A fake node that accepts broadcasts, answering the txid. */
async function node(): Promise<FakeNode> {
  const n = await startFakeNode();
  n.setRoute('POST', '/v2/transactions', {
    status: 200,
    body: JSON.stringify(TXID),
    headers: { 'content-type': 'application/json' },
  });
  running.push(n);
  return n;
}

/** A node that listened once and is gone: its port refuses connections. */
async function closedPort(): Promise<FakeNode> {
  const n = await node();
  await n.down();
  return n;
}

async function gateway(
  nodes: readonly FakeNode[],
  env: Record<string, string> = {},
): Promise<RunningGateway> {
  const gw = await startGateway(
    testEnv(nodes.at(-1)!.url, { STACKS_API_URL_TESTNET: nodes.map((n) => n.url).join(','), ...env }),
  );
  running.push(gw);
  return gw;
}

/** The transaction in its JSON form (text, so that the node's record of it compares exactly). */
const BODY = JSON.stringify({ tx: Buffer.from(TX).toString('hex') });

async function broadcast(gw: RunningGateway): Promise<{ status: number; text: string }> {
  const res = await fetch(`${gw.url}/v2/transactions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: BODY,
  });
  return { status: res.status, text: await res.text() };
}

const broadcasts = (n: FakeNode) => n.requests.filter((r) => r.path === '/v2/transactions');

describe('a broadcast whose first upstream refuses the connection', () => {
  it('goes to the next upstream, which receives its bytes exactly once and answers', async () => {
    const refused = await closedPort();
    const second = await node();
    const gw = await gateway([refused, second]);
    const res = await broadcast(gw);
    expect(res.status).toBe(200);
    expect(res.text).toBe(JSON.stringify(TXID));
    expect(refused.total).toBe(0);
    const got = broadcasts(second);
    expect(got).toHaveLength(1);
    expect(got[0]!.rawBody).toBe(BODY);
    expect(got[0]!.headers['content-type']).toBe('application/json');
  });

  it('goes past every refusing upstream, each asked once, to one that answers', async () => {
    const [one, two] = [await closedPort(), await closedPort()];
    const third = await node();
    const gw = await gateway([one, two, third]);
    const res = await broadcast(gw);
    expect(res.status).toBe(200);
    expect(broadcasts(third)).toHaveLength(1);
  });

  it('answers the refusal when no other upstream is left, without asking it twice', async () => {
    const refused = await closedPort();
    const gw = await gateway([refused]);
    const res = await broadcast(gw);
    expect(res.status).toBe(502);
    expect(JSON.parse(res.text).error.details).toMatchObject({ cause: 'ECONNREFUSED' });
  });
});

describe('a broadcast that may have reached its upstream', () => {
  it('is not resent after a reset once sent', async () => {
    const [first, second] = [await node(), await node()];
    first.reset({ times: 1 });
    const gw = await gateway([first, second]);
    const res = await broadcast(gw);
    expect(res.status).toBe(502);
    expect(broadcasts(first)).toHaveLength(1);
    expect(broadcasts(second)).toHaveLength(0);
  });

  it('is not resent after a timeout', async () => {
    const [first, second] = [await node(), await node()];
    first.hang({ times: 1 });
    const gw = await gateway([first, second], { UPSTREAM_TIMEOUT_MS: '300' });
    const res = await broadcast(gw);
    expect(res.status).toBe(504);
    expect(broadcasts(first)).toHaveLength(1);
    expect(broadcasts(second)).toHaveLength(0);
  });

  it('is not resent after a 503', async () => {
    const [first, second] = [await node(), await node()];
    first.status5xx(503, { times: 1 });
    const gw = await gateway([first, second]);
    const res = await broadcast(gw);
    expect(res.status).toBe(502);
    expect(broadcasts(first)).toHaveLength(1);
    expect(broadcasts(second)).toHaveLength(0);
  });
});
