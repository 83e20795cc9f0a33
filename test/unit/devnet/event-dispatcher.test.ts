import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { newBlockCheck } from '../../../src/chain/observer/payload-schemas.js';
import { blockIdentity } from '../../../src/devnet/blocks.js';
import { EventDispatcher, newBlockPayload, observerUrls } from '../../../src/devnet/event-dispatcher.js';

const servers: ReturnType<typeof createServer>[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** A real HTTP observer that fails the first `failures` posts with 500 and records the rest. */
async function observer(failures: number): Promise<{ url: string; heights: number[]; paths: string[] }> {
  const heights: number[] = [];
  const paths: string[] = [];
  let left = failures;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      paths.push(req.url ?? '');
      if (left > 0) {
        left--;
        res.writeHead(500).end();
        return;
      }
      heights.push((JSON.parse(body) as { block_height: number }).block_height);
      res.writeHead(200).end();
    });
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, heights, paths };
}

const made = (height: number) => ({
  block: blockIdentity(height, height),
  parent: blockIdentity(height - 1, height - 1),
  transactions: [{ rawTx: '00', txid: `0x${'1'.repeat(64)}` }],
  events: [],
});

describe('EventDispatcher', () => {
  it('builds a payload the observer accepts, with 0x hashes and the parent link', () => {
    const payload = newBlockPayload(made(7));
    expect(newBlockCheck.Check(payload)).toBe(true);
    expect(payload.index_block_hash).toBe(`0x${blockIdentity(7, 7).indexBlockHash}`);
    expect(payload.parent_index_block_hash).toBe(`0x${blockIdentity(6, 6).indexBlockHash}`);
    expect(payload.transactions).toMatchObject([{ raw_tx: '0x00', tx_index: 0, status: 'success' }]);
  });

  it('posts /new_block to every observer in block order, retrying a failed post', async () => {
    const a = await observer(1);
    const b = await observer(0);
    const d = new EventDispatcher({ urls: [a.url, b.url], attempts: 3 });
    await Promise.all([d.dispatch(made(1)), d.dispatch(made(2)), d.dispatch(made(3))]);
    expect(a.heights).toEqual([1, 2, 3]);
    expect(b.heights).toEqual([1, 2, 3]);
    expect(a.paths.every((p) => p === '/new_block')).toBe(true);
    expect(a.paths).toHaveLength(4);
  });

  it('gives a post up after its attempts and reports it', async () => {
    const a = await observer(5);
    const errors: string[] = [];
    const d = new EventDispatcher({ urls: [a.url], attempts: 2, onError: (url) => errors.push(url) });
    await d.dispatch(made(1));
    expect(errors).toEqual([a.url]);
    expect(a.paths).toHaveLength(2);
  });

  it('reads EVENT_OBSERVER_URLS as a comma-separated list', () => {
    expect(observerUrls({ EVENT_OBSERVER_URLS: ' http://a:1 ,, http://b:2' })).toEqual([
      'http://a:1',
      'http://b:2',
    ]);
    expect(observerUrls({})).toEqual([]);
  });
});
