/**
 * The service as a user runs it: a real process on a real port, with the SQLite store on disk.
 * Persistence across a restart, graceful shutdown, and start-up refusal of bad configuration.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { hex, MAINNET_ADDR, SAMPLE_ABI, TESTNET_ADDR } from '../../support/fixtures.js';
import { request } from '../../support/gateway.js';
import { logLines, runExpectingFailure, startService } from '../../support/process.js';

let node: FakeNode;
let dataDir: string;

beforeAll(async () => {
  node = await startFakeNode();
  for (const addr of [MAINNET_ADDR, TESTNET_ADDR]) {
    node.setAbi(addr, 'demo', SAMPLE_ABI);
    node.setReadOnly(addr, 'demo', 'get-balance', { okay: true, result: hex(Cl.ok(Cl.uint(77))) });
  }
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'clarity-cache-proc-'));
});

afterAll(async () => {
  await node?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const env = () => ({
  CACHE_STORE: 'sqlite',
  DATA_DIR: dataDir,
  STACKS_API_URL_MAINNET: node.url,
  STACKS_API_URL_TESTNET: node.url,
  UPSTREAM_RETRY_BASE_MS: '1',
});
const body = { functionArgs: [{ type: 'principal', value: MAINNET_ADDR }] };

describe('the service process', () => {
  it('keeps cached ABIs, results and known contracts across a restart on the same DATA_DIR', async () => {
    const first = await startService(env());
    try {
      expect(
        (await request(`${first.url}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`, { body }))
          .status,
      ).toBe(200);
      expect((await request(`${first.url}/contract-calls/abi/${TESTNET_ADDR}/demo`)).status).toBe(200);
    } finally {
      expect(await first.stop()).toBe(0);
    }

    node.resetStats();
    const second = await startService(env());
    try {
      const res = await request(`${second.url}/contract-calls/read-only/${MAINNET_ADDR}/demo/get-balance`, {
        body,
      });
      expect(res.body).toEqual({ success: true, data: '77' });
      const abi = await request(`${second.url}/contract-calls/abi/${TESTNET_ADDR}/demo`);
      expect(abi.body.data).toEqual(SAMPLE_ABI);
      const known = await request(`${second.url}/contract-calls/known-contracts`);
      expect(known.body.data.contracts.cached).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ contractAddress: MAINNET_ADDR, contractName: 'demo' }),
          expect.objectContaining({ contractAddress: TESTNET_ADDR, contractName: 'demo' }),
        ]),
      );
      // Nothing but the start-up /v2/info check went upstream.
      expect(node.total - node.count('info')).toBe(0);
    } finally {
      expect(await second.stop('SIGINT')).toBe(0);
    }
  });

  it('finishes an in-flight request on SIGTERM before exiting', async () => {
    const svc = await startService({ ...env(), CACHE_STORE: 'memory' });
    node.resetStats();
    node.gate({ kind: 'call-read' });
    try {
      const pending = request(`${svc.url}/contract-calls/read-only/${TESTNET_ADDR}/demo/get-balance`, {
        body: { functionArgs: [{ type: 'principal', value: TESTNET_ADDR }] },
      });
      await node.waitForRequests(1, { kind: 'call-read' });
      svc.child.kill('SIGTERM');
      await new Promise<void>((resolve) => {
        const check = (chunk: Buffer) => {
          if (chunk.toString().includes('shutting down')) resolve();
        };
        svc.child.stdout?.on('data', check);
        if (svc.output().includes('shutting down')) resolve();
      });
      node.release();
      const res = await pending;
      expect(res.status).toBe(200);
      expect(res.body.data).toBe('77');
      expect(await svc.exited).toBe(0);
    } finally {
      node.clearFaults();
      node.release();
      await svc.stop();
    }
  });

  it('logs one line per request with its id, and the error id in the error line; LOG_LEVEL is honoured', async () => {
    const svc = await startService({ ...env(), CACHE_STORE: 'memory' });
    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(`${svc.url}/contract-calls/abi/NOT-AN-ADDRESS/demo`);
      await request(`${svc.url}/health`);
    } finally {
      await svc.stop();
    }
    const lines = logLines(svc);
    const errorLine = lines.find((l) => l.errorId === res.body.error.id);
    expect(errorLine).toMatchObject({ code: 'INVALID_CONTRACT_ADDRESS', status: 400 });
    const requestLines = lines.filter((l) => l.msg === 'request');
    expect(requestLines).toHaveLength(2);
    // The access line is written once the answer has gone out, so the client may already have sent
    // the next request: the two lines can come in either order. Match them by status instead.
    expect(requestLines.map((l) => l.statusCode).sort()).toEqual([200, 400]);
    expect(requestLines.every((l) => typeof l.reqId === 'string')).toBe(true);
    expect(errorLine?.reqId).toBe(requestLines.find((l) => l.statusCode === 400)?.reqId);

    const quiet = await startService({ ...env(), CACHE_STORE: 'memory', LOG_LEVEL: 'warn' });
    try {
      await request(`${quiet.url}/health`);
    } finally {
      await quiet.stop();
    }
    expect(quiet.output()).not.toContain('"msg":"request"');
  });

  it.each([
    ['UPSTREAM_TIMEOUT_MS', 'abc'],
    ['CACHE_STORE', 'mongo'],
    ['STACKS_API_URL_MAINNET', 'ftp://example'],
    ['STACKS_API_URL_TESTNET', 'http://a.example,,http://b.example'],
    ['UPSTREAMS_FILE', '/nonexistent/upstreams.json'],
    ['PORT', '70000'],
  ])('refuses to start with an invalid %s, in one line naming it', async (name, value) => {
    const { code, stderr } = await runExpectingFailure({ [name]: value });
    expect(code).toBe(1);
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(name);
  });
});
