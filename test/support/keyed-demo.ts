/**
 * The upstream and keys file of the tests that read usage per key (the CLI's `usage`, the typed
 * client's `usage()`): a fake node serving the demo contract (get-info answers the fixture's
 * tuple, `fails` an `(err u7)`), and a keys file naming each given key.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Cl } from '@stacks/transactions';
import { tmpDir } from '../unit/cache/tmp-dir.js';
import { type FakeNode, startFakeNode } from './fake-node.js';
import { hex, INFO_VALUE, MAINNET_ADDR, SAMPLE_ABI } from './fixtures.js';

export async function keyedDemo(
  name: string,
  keys: Readonly<Record<string, string>>,
): Promise<{ node: FakeNode; keysFile: string }> {
  const node = await startFakeNode();
  node.setAbi(MAINNET_ADDR, 'demo', SAMPLE_ABI);
  node.setReadOnly(MAINNET_ADDR, 'demo', 'get-info', { okay: true, result: hex(INFO_VALUE) });
  node.setReadOnly(MAINNET_ADDR, 'demo', 'fails', { okay: true, result: hex(Cl.error(Cl.uint(7))) });
  const keysFile = path.join(tmpDir(name).dir, 'keys.json');
  writeFileSync(keysFile, JSON.stringify(Object.entries(keys).map(([n, key]) => ({ name: n, key }))));
  return { node, keysFile };
}
