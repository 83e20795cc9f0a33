/**
 * Starts the real gateway in-process on a real socket (127.0.0.1, port 0) with a test
 * configuration, and offers a small JSON client over real HTTP.
 */
import { createGateway, type Gateway, type GatewayDeps } from '../../src/app.js';
import { loadConfig } from '../../src/config/index.js';

export interface RunningGateway {
  readonly url: string;
  readonly gateway: Gateway;
  close(): Promise<void>;
}

export function testEnv(upstreamUrl: string, env: Record<string, string> = {}): Record<string, string> {
  return {
    HOST: '127.0.0.1',
    PORT: '0',
    CACHE_STORE: 'memory',
    LOG_LEVEL: 'silent',
    STACKS_API_URL_MAINNET: upstreamUrl,
    STACKS_API_URL_TESTNET: upstreamUrl,
    UPSTREAM_RETRY_BASE_MS: '1',
    UPSTREAM_TIMEOUT_MS: '2000',
    UPSTREAM_RATE_LIMIT_PER_MINUTE: '100000',
    ...env,
  };
}

export async function startGateway(
  env: Record<string, string>,
  deps: GatewayDeps = {},
): Promise<RunningGateway> {
  const config = loadConfig(env);
  const gateway = await createGateway(config, deps);
  const address = await gateway.app.listen({ port: config.port, host: config.host });
  return { url: address, gateway, close: () => gateway.close() };
}

export interface JsonResponse {
  readonly status: number;
  readonly headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary envelope shapes
  readonly body: any;
}

export async function request(
  url: string,
  init: { method?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<JsonResponse> {
  const hasBody = init.body !== undefined || init.rawBody !== undefined;
  const res = await fetch(url, {
    method: init.method ?? (hasBody ? 'POST' : 'GET'),
    headers: { ...(hasBody ? { 'content-type': 'application/json' } : {}), ...init.headers },
    ...(hasBody ? { body: init.rawBody ?? JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, headers: res.headers, body };
}
