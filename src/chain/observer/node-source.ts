/**
 * Contract sources for the dependency analysis, asked of the network's first upstream
 * (GET /v2/contracts/source/{address}/{name}?proof=0). A deployed contract's code never
 * changes, and the analysis keeps what it learned, so each contract is asked for once. A
 * stand-in until the node routes' endpoint table serves this route (then cached there).
 */
import { request } from 'undici';
import type { ContractSourcePort } from '../../clarity/analysis/index.js';
import type { UpstreamDefinition } from '../../upstream/definitions.js';

export function nodeContractSource(upstream: UpstreamDefinition, timeoutMs: number): ContractSourcePort {
  return async (contractId) => {
    const dot = contractId.indexOf('.');
    const url = new URL(
      `/v2/contracts/source/${encodeURIComponent(contractId.slice(0, dot))}/${encodeURIComponent(contractId.slice(dot + 1))}?proof=0`,
      upstream.url,
    );
    const headers: Record<string, string> = { accept: 'application/json' };
    if (upstream.apiKey !== undefined) headers['x-api-key'] = upstream.apiKey;
    const res = await request(url, { headers, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`contract source of ${contractId}: HTTP ${res.statusCode}`);
    const body = JSON.parse(text) as { source?: unknown };
    if (typeof body.source !== 'string') throw new Error(`contract source of ${contractId}: no source field`);
    return body.source;
  };
}
