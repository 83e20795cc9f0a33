/**
 * What start-up tells an operator, once each, read from the real process's output: that
 * latest-state entries are kept indefinitely without a block bound, and which upstream did not
 * answer its start-up GET /v2/info (its URL without credentials). Neither delays readiness.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeNode, startFakeNode } from '../../support/fake-node.js';
import { freePort, type ServiceProcess, startService } from '../../support/process.js';

const KEPT = 'latest-state entries are kept indefinitely';

const running: Array<ServiceProcess | FakeNode> = [];
afterEach(async () => {
  for (const r of running.splice(0)) {
    if ('stop' in r) await r.stop();
    else await r.close();
  }
});

/** Resolves once the output holds `text` (or rejects when the process exits first). */
function printed(svc: ServiceProcess, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (!svc.output().includes(text)) return;
      svc.child.stdout?.off('data', check);
      svc.child.stderr?.off('data', check);
      resolve();
    };
    svc.child.stdout?.on('data', check);
    svc.child.stderr?.on('data', check);
    void svc.exited.then(() => reject(new Error(`exited without printing "${text}":\n${svc.output()}`)));
    check();
  });
}

/**
 * A service whose upstreams are both a healthy fake node and whose entries are block-bounded,
 * so neither start-up warning is due; `env` adds what the test is about.
 */
async function startBoundedService(env: Record<string, string> = {}): Promise<{
  node: FakeNode;
  svc: ServiceProcess;
}> {
  const node = await startFakeNode();
  running.push(node);
  const svc = await startService({
    CACHE_STORE: 'memory',
    LOG_LEVEL: 'info',
    STACKS_API_URL_MAINNET: node.url,
    STACKS_API_URL_TESTNET: node.url,
    CACHE_MAX_BLOCKS: '3',
    ...env,
  });
  running.push(svc);
  return { node, svc };
}

describe('start-up warnings', () => {
  it('names an upstream that did not answer /v2/info, without its credentials, and warns of unbounded entries once', async () => {
    const node = await startFakeNode();
    running.push(node);
    const deadPort = await freePort();
    const svc = await startService({
      CACHE_STORE: 'memory',
      LOG_LEVEL: 'info',
      STACKS_API_URL_MAINNET: `http://operator:hunter22pass@127.0.0.1:${deadPort}/?key=QueryKey55`,
      STACKS_API_URL_TESTNET: node.url,
      UPSTREAM_RETRIES: '0',
    });
    running.push(svc);
    // Ready at once: /health answered before the check's outcome is known.
    expect((await fetch(`${svc.url}/health`)).status).toBe(200);
    await printed(svc, 'did not answer GET /v2/info at start-up');
    const out = svc.output();
    expect(out).toContain(`127.0.0.1:${deadPort}`);
    expect(out).not.toContain('hunter22pass');
    expect(out).not.toContain('QueryKey55');
    expect(out.split(KEPT).length - 1).toBe(1);
    // The healthy upstream answered: no warning names it, and it was asked exactly once.
    expect(out.split('did not answer GET /v2/info').length - 1).toBe(1);
    expect(node.count('info')).toBe(1);
  });

  it('says nothing of unbounded entries when CACHE_MAX_BLOCKS bounds them', async () => {
    const { node, svc } = await startBoundedService();
    // Start-up asks each network's upstream (both this node) for /v2/info: wait for both asks.
    await node.waitForRequests(2, { kind: 'info' });
    expect(node.count('info')).toBe(2);
    expect(svc.output()).not.toContain(KEPT);
    expect(svc.output()).not.toContain('did not answer');
  });

  it('names a misspelt variable once, with the one it probably meant', async () => {
    const { svc } = await startBoundedService({ CACHE_TTL_SECOND: '30' });
    await printed(svc, 'CACHE_TTL_SECOND');
    const out = svc.output();
    expect(out).toContain('unknown configuration variable CACHE_TTL_SECOND is ignored; did you mean');
    expect(out.split('CACHE_TTL_SECOND').length - 1).toBe(1);
  });

  it('names a near miss without any of our prefixes: API_KEY_FILE, which leaves the gateway open', async () => {
    const { svc } = await startBoundedService({ API_KEY_FILE: '/etc/clarity-cache/keys.json' });
    // Said before the gateway listens, on the stream that says it listens: already printed.
    const lines = svc.output().split('\n');
    const named = lines.filter((l) => l.includes('API_KEY_FILE'));
    expect(named).toHaveLength(1);
    expect(named[0]).toContain(
      'unknown configuration variable API_KEY_FILE is ignored; did you mean API_KEYS_FILE?',
    );
    expect(JSON.parse(named[0] as string).level).toBe(40);
  });
});
