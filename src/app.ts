/**
 * Assembles the gateway: store, caching rules, upstream client, services, observability and
 * routes. Dependencies can be injected (tests inject stores or a node API); by default they
 * are built from the configuration.
 */

import type { FastifyInstance } from 'fastify';
import { networkOfKey } from './cache/keys.js';
import { ReadThroughCache } from './cache/read-through.js';
import type { CacheStore } from './cache/store.js';
import { createStore } from './cache/stores/create.js';
import { hotEntries } from './cache/stores/health.js';
import { ChainIdentities, identityOf } from './chain/identity.js';
import { ObservedNode } from './chain/observed-node.js';
import { startObserver } from './chain/observer/app-wiring.js';
import type { EventObserver } from './chain/observer/start.js';
import { StoreSharedTips } from './chain/shared-tips.js';
import { ChainTracker } from './chain/tracker.js';
import type { ContractSourcePort } from './clarity/analysis/index.js';
import type { Config } from './config/index.js';
import { registerSecret, SecretRedactor } from './config/redact.js';
import { configuredSecrets } from './config/secrets.js';
import { explorerRoutes } from './explorer/plugin.js';
import { Admission } from './http/admission/admission.js';
import { loadApiKeys } from './http/admission/api-keys.js';
import { installAdmission } from './http/admission/hook.js';
import { MemoryQuota } from './http/admission/quota-store.js';
import { requireHostHeader } from './http/client-errors.js';
import { manageConnections } from './http/connections.js';
import { installCors } from './http/cors.js';
import { installErrorHandling } from './http/error-handler.js';
import { FastLane } from './http/fast-lane.js';
import { registerOpenApi } from './http/openapi.js';
import { installJsonParsing } from './http/raw-body.js';
import { nextRequestId } from './http/request-ids.js';
import { trackEndpoints, trackRoutes } from './http/route-table.js';
import { abiRoutes } from './http/routes/abi.js';
import { adminRoutes } from './http/routes/admin.js';
import { batchRoute } from './http/routes/batch.js';
import { decodeRoute } from './http/routes/decode.js';
import { endpointIndexRoutes } from './http/routes/endpoint-index.js';
import { nodeRoutes } from './http/routes/node-routes.js';
import { opsRoutes } from './http/routes/ops.js';
import { readOnlyRoute } from './http/routes/read-only.js';
import { accessLogUrl, createServer, installRequestHooks, logsRequests } from './http/server.js';
import { NETWORKS, type Network } from './network.js';
import { cacheEndpointOf, Metrics } from './observability/metrics.js';
import { UpstreamHealth } from './observability/upstream-health.js';
import { AbiRegistry } from './service/abi-registry.js';
import { BatchService } from './service/batch.js';
import { CacheAdmin } from './service/cache-admin.js';
import { parseContractRef } from './service/contract-ref.js';
import { CurrencyProof } from './service/currency-proof.js';
import { NodeRouteService } from './service/node-routes.js';
import { ReadOnlyService } from './service/read-only.js';
import type { AttemptEvent } from './upstream/attempts.js';
import { createUpstreamBuckets } from './upstream/budget/local.js';
import type { Budget } from './upstream/budget/upstream-budget.js';
import type { NodeApi } from './upstream/node-api.js';
import { createPool, type Upstream, type UpstreamPool } from './upstream/pool.js';
import { StacksNodeClient } from './upstream/stacks-node.js';

export interface GatewayDeps {
  readonly store?: CacheStore;
  readonly node?: NodeApi & { close?(): Promise<void> | void; drain?(): void };
  /** The budget of each upstream, by upstream id (a network's first upstream has the network's name). */
  readonly budgets?: Record<string, Budget>;
  /** Contract sources for the event observer's dependency analysis (default: the network's first upstream). */
  readonly contractSource?: ContractSourcePort;
}

export interface Gateway {
  readonly app: FastifyInstance;
  readonly config: Config;
  readonly store: CacheStore;
  readonly cache: ReadThroughCache;
  readonly metrics: Metrics;
  /** The upstreams and their state (undefined when a node API was injected). */
  readonly upstreams: UpstreamPool | undefined;
  /**
   * The start-up round (main.ts): one GET /v2/info of each upstream, which names each
   * network's chain and its first tip (the median of the first three answers). The upstreams
   * that did not answer, with why. Absent when a node API was injected.
   */
  readonly startupRound?: (() => Promise<Array<{ upstream: Upstream; failure: string }>>) | undefined;
  /** What the gateway knows of each network's tip (and currentBlock() for pinning a batch). */
  readonly chain: ChainTracker;
  /** The exact-repeat fast lane in front of the router (src/http/fast-lane.ts). */
  readonly lane: FastLane;
  /** The event observer and its block ledger, when EVENT_OBSERVER_PORT is set (docs/events.md). */
  readonly observer: EventObserver | undefined;
  /** Stop accepting, finish what is in flight, then release the store and upstream pools. */
  close(): Promise<void>;
}

export async function createGateway(config: Config, deps: GatewayDeps = {}): Promise<Gateway> {
  const startedAt = Date.now();
  // What no answer, error or log line may show, whoever echoes it (docs/access-control.md).
  const secretValues = configuredSecrets(config);
  for (const secret of secretValues) registerSecret(secret);
  const app = createServer(config);
  const log = app.log;

  // Metrics read the store and budgets lazily, so they can be created first.
  let store: CacheStore | undefined = deps.store;
  // CACHE_STORE=redis: one upstream budget and coalescing across every instance on that Redis.
  // Loaded only then: ioredis costs start-up time the other stores do not need to pay.
  const scaleOut =
    config.cacheStore === 'redis'
      ? await (await import('./scale-out.js')).createRedisScaleOut(config, log)
      : undefined;
  const rawBudgets: Record<string, Budget> =
    deps.budgets ?? scaleOut?.budgets ?? createUpstreamBuckets(config.upstreams, config);
  let pool: UpstreamPool | undefined;
  let chain: ChainTracker | undefined;
  const metrics = new Metrics({
    pool: () => pool,
    hotEntries: () => (store === undefined ? 0 : hotEntries(store)),
    tipHeight: (network) => chain?.known(network)?.height,
  });
  const onStoreError = (err: unknown, op: string): void => {
    metrics.storeError(op);
    log.warn({ err, op }, 'cache store operation failed');
  };
  if (store === undefined) {
    const created = await createStore(config, {
      onError: onStoreError,
      ...(scaleOut === undefined ? {} : { onSharedChange: (key: string) => scaleOut.hotTier.announce(key) }),
    });
    // A store with a hot tier in front of the shared Redis: other instances' writes evict from it.
    if (scaleOut !== undefined && created.evictHot !== undefined) {
      scaleOut.hotTier.bind({ evictHot: created.evictHot.bind(created) });
    }
    store = created;
  }
  // Which chain entries belong to (docs/freshness.md): learned from every /v2/info, recorded
  // in the store, and the one entries are served under.
  const identityKey = (network: Network) => `chain:id:${network}`;
  const identityStore = store;
  const otherChainLogged = new Set<Network>();
  const identities = new ChainIdentities({
    record: {
      load: async (network) => (await identityStore.get(identityKey(network)))?.value,
      save: (network, identity) => identityStore.set(identityKey(network), identity),
    },
    onChange: (network, from, to) => {
      otherChainLogged.delete(network);
      chain?.tips.forget(network);
      log.warn(
        { network, from, to },
        'the upstreams now serve another chain: entries of the old one are no longer served',
      );
    },
    onError: (err) => log.debug({ err }, 'chain identity record: store operation failed'),
  });
  await identities.restore(NETWORKS);
  // Which cache a key's lookups count under: its namespace's (src/cache/keys.ts).
  const endpointOf = cacheEndpointOf;
  const cache = new ReadThroughCache(store, {
    onStoreError,
    onOutcome: (outcome, key) => metrics.cache(endpointOf(key), outcome),
    coalescer: scaleOut?.coalescer,
    onCorrupt: () => metrics.storeCorrupt(),
    chain: {
      current: (key) => {
        const network = networkOfKey(key);
        return network === undefined ? undefined : identities.current(network);
      },
      onOtherChain: (key) => {
        const network = networkOfKey(key);
        if (network === undefined || otherChainLogged.has(network)) return;
        otherChainLogged.add(network);
        log.warn(
          { network, chain: identities.current(network) },
          'the store holds entries of another chain (a reset, a local chain, or a store shared with another gateway): they are not served',
        );
      },
    },
    stale: {
      onStale: (kind, key) => metrics.stale(endpointOf(key), kind),
      onRevalidate: (result, key, err) => {
        metrics.backgroundRefresh(endpointOf(key), result);
        if (err !== undefined) log.debug({ err, key }, 'background refresh failed; the stale entry stays');
      },
    },
  });

  const onAttempt = (event: AttemptEvent): void => {
    metrics.upstreamAttempt(event);
    upstreamHealth.record(event);
  };
  // The upstreams of both networks (docs/upstreams.md): selection, failover, breakers,
  // hedging, lag and the fair queue for budget tokens all live in the pool and the attempt loop.
  if (deps.node === undefined) {
    pool = createPool(config, rawBudgets, {
      settings: {
        breakerFailures: config.upstreamBreakerFailures,
        breakerCooldownMs: config.upstreamBreakerCooldownMs,
        // A probe that never reports (its instance died) blocks others no longer than an attempt can take.
        probeLeaseMs: config.upstreamTimeoutMs + 1000,
        maxLagBlocks: config.upstreamMaxLagBlocks,
        queueTimeoutMs: config.upstreamQueueTimeoutMs,
        maxWaitingPerClient: config.upstreamMaxWaitingPerClient,
      },
      ...(scaleOut === undefined ? {} : { breakerSync: scaleOut.breakers }),
      onBreaker: (u, state) => {
        if (state === 'open') {
          log.warn(
            {
              network: u.network,
              upstream: u.id,
              url: u.label,
              cooldownMs: config.upstreamBreakerCooldownMs,
            },
            'upstream circuit open: skipping this upstream until one probe succeeds',
          );
        } else {
          log.info({ network: u.network, upstream: u.id, url: u.label }, 'upstream circuit closed');
        }
      },
      onAcquire: (network, upstream, waitedMs) => metrics.budgetWait(network, upstream?.id, waitedMs / 1000),
    });
  }
  const upstreamPool = pool;
  const upstreamHealth = new UpstreamHealth(() => upstreamPool);
  const rawNode =
    deps.node ??
    new StacksNodeClient({
      config,
      pool: upstreamPool!,
      logger: log,
      onAttempt,
      secrets: new SecretRedactor(secretValues),
      onInfo: (network, info) => identities.learn(network, identityOf(info)),
      // Bound late: the tip tracker is built just below, from this client's answers.
      plausibleTip: (network, height) => chain?.tips.plausible(network, height) ?? true,
    });

  // Tip knowledge: learned from every answer (ObservedNode) and, on demand, from /v2/info.
  const sharedStore = store.backing ?? store;
  chain = new ChainTracker({
    node: rawNode,
    maxAgeMs: config.chainTipMaxAgeMs,
    maxAdvance: config.chainTipMaxAdvance,
    shared:
      scaleOut === undefined
        ? undefined
        : new StoreSharedTips(sharedStore, scaleOut.coalescer, (err) =>
            log.debug({ err }, 'shared chain tip: redis operation failed'),
          ),
    onRefresh: (network, result) => metrics.tipRefresh(network, result),
    onRefreshError: (network, err) =>
      log.debug({ err, network }, 'chain tip refresh failed; block-bounded reads go upstream'),
  });
  const node = new ObservedNode(rawNode, chain);
  // Tips another instance's event observer learned move this instance's tip at once.
  scaleOut?.observedTips.onTip((tip) =>
    chain!.learnFromPeer(tip.network, { height: tip.height, indexBlockHash: tip.indexBlockHash }),
  );

  const abis = new AbiRegistry(cache, node, config.abiMemoMaxBytes, config.cacheNegativeTtlS * 1000);
  const readOnly = new ReadOnlyService(cache, abis, node, {
    chain,
    maxBlocks: config.cacheMaxBlocks,
    staleWhileRevalidateS: config.cacheStaleWhileRevalidateS,
    staleIfErrorS: config.cacheStaleIfErrorS,
    staleMaxS: config.cacheStaleMaxS,
    nodeMaxBlocks: config.nodeMaxBlocks,
  });
  readOnly.onCorrupt = () => metrics.storeCorrupt();
  // The node routes of the endpoint table (docs/node-routes.md), when the node API forwards them.
  const routes =
    rawNode.send === undefined
      ? undefined
      : new NodeRouteService(cache, node as Required<Pick<NodeApi, 'send'>>, {
          chain,
          maxBlocks: config.nodeMaxBlocks,
          defaultNetwork: config.nodeDefaultNetwork,
          timedMs: config.chainTipMaxAgeMs,
          negativeTtlMs: config.cacheNegativeTtlS * 1000,
          staleWhileRevalidateS: config.cacheStaleWhileRevalidateS,
          staleIfErrorS: config.cacheStaleIfErrorS,
          staleMaxS: config.cacheStaleMaxS,
        });
  if (routes !== undefined) routes.onCorrupt = () => metrics.storeCorrupt();
  // "consistent" batches pin to the tracker's current block (one shared /v2/info).
  const batch = new BatchService(readOnly, chain);

  installJsonParsing(app);

  const routeTable = trackRoutes(app);
  installErrorHandling(app, routeTable);
  // Who may ask (docs/access-control.md): admission decides every request in the front listener
  // the lane installs, before the lane or Fastify sees it. Fastify's onRequest hooks then run in
  // this order: the Host check (malformed HTTP/1.1 is answered 400 whatever the verdict), the
  // refusal of a refused request, the CORS preflight (which, like every CORS header, follows
  // the verdict).
  const apiKeys = config.apiKeysFile === undefined ? undefined : loadApiKeys(config.apiKeysFile);
  const admission = new Admission({
    trustProxy: config.trustProxy,
    adminToken: config.adminToken,
    keys: apiKeys,
    keysRequired: config.apiKeysRequired,
    anonymousPerMinute: config.anonymousRequestsPerMinute,
    quota: scaleOut?.quota ?? new MemoryQuota(),
    onKeyUse: (name, admitted) => metrics.keys.record(name, admitted),
  });
  requireHostHeader(app);
  installAdmission(app, admission);
  installCors(app, config.corsOrigins, routeTable);
  const endpoints = trackEndpoints(app);

  let draining = false;
  installRequestHooks(app, {
    logLevel: config.logLevel,
    onAnswered: (route, method, status, seconds) => metrics.request(route, method, status, seconds),
    isDraining: () => draining,
  });
  // Last of the root hooks: it captures answers with the headers every other hook added.
  const lane = new FastLane({
    admission,
    isDraining: () => draining,
    onAnswered: (route, method, status, seconds) => metrics.request(route, method, status, seconds),
    logRequest: logsRequests(config.logLevel)
      ? (fields) =>
          log.info(
            {
              reqId: nextRequestId(),
              ...fields,
              ...(typeof fields['url'] === 'string' ? { url: accessLogUrl(fields['url']) } : {}),
            },
            'request',
          )
      : undefined,
  });
  lane.install(app);
  // After the lane: connections end without a reset, answered requests first (connections.ts).
  manageConnections(app.server);

  await registerOpenApi(app, { admin: config.adminToken !== undefined });
  await app.register(endpointIndexRoutes, { endpoints });
  await app.register(explorerRoutes);
  await app.register(decodeRoute);
  await app.register(readOnlyRoute, { service: readOnly });
  await app.register(abiRoutes, { abis });
  await app.register(batchRoute, { batch, maxCalls: config.batchMaxCalls });
  await app.register(nodeRoutes, { service: readOnly, abis, routes });
  const observer = await startObserver(
    config,
    {
      contractSource: deps.contractSource,
      routes: routes === undefined ? undefined : (req) => routes.answer(req),
    },
    {
      tips: chain.tips,
      metrics: metrics.observer,
      log,
      tipChannel: scaleOut?.observedTips,
      // A deployed contract is no longer unknown: its remembered 404s (ABI, node routes) go at once.
      onDeployed: async (contractId) => {
        const [address, name] = contractId.split('.') as [string, string];
        try {
          const ref = parseContractRef(address, name);
          await abis.forgetUnknown(ref);
          await routes?.forgetUnknown(ref.network, contractId);
        } catch (err) {
          log.debug({ err, contractId }, 'event observer: could not forget the deployed contract’s ABI 404');
        }
      },
    },
  );
  // Entries the observer proves current stay fresh across blocks that did not touch them.
  if (observer !== undefined) {
    const network = observer.status().network;
    const proof = new CurrencyProof({
      network,
      dependsOn: (contractId, fn) => observer.dependsOn(contractId, fn),
      current: (read, tipHeight) => observer.ledger.current(read, tipHeight),
      generation: () => observer.ledger.generation,
      analysisVersion: () => observer.analyzer.version,
      learnedSince: (version) => observer.analyzer.learnedSince(version),
      onKeptCurrent: () => metrics.observer.keptCurrent(network),
    });
    readOnly.useProof(proof);
    routes?.useProof(proof);
    // The tip a node's /v2/info described (at start-up, before any block) is held: the first
    // observed block that is its child continues the proofs of entries read at it.
    chain?.onDescribed((described, block) => {
      if (described === network) observer.ledger.hold(block, Date.now());
    });
  }
  await app.register(opsRoutes, {
    tipHeight: (network) => chain?.known(network)?.height,
    observer: observer === undefined ? undefined : () => observer.status(),
    store,
    metrics,
    upstream: upstreamHealth,
    isDraining: () => draining,
    startedAt,
  });
  if (config.adminToken !== undefined) {
    await app.register(adminRoutes, {
      admission,
      admin: new CacheAdmin(cache, abis, readOnly),
      keyUses: apiKeys === undefined ? undefined : () => metrics.keys.uses(apiKeys.list().map((k) => k.name)),
    });
  }

  const ownedStore = store;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      draining = true;
      // Upstream first: requests waiting for a budget token (in the pool's fair queue or a
      // budget) or in a retry's backoff are answered SERVICE_UNAVAILABLE 503 now and no retry
      // starts, so that app.close() below drains answered requests instead of waiting on the
      // upstream until the grace period kills the process with their sockets still open.
      rawNode.drain?.();
      upstreamPool?.close();
      for (const b of Object.values(rawBudgets)) b.close();
      // Attempts under way get half the grace period to finish, then are aborted (503), so
      // that every request is answered before SHUTDOWN_GRACE_MS ends the process.
      const abort = setTimeout(() => void rawNode.close?.(), Math.floor(config.shutdownGraceMs / 2));
      try {
        await app.close();
        await observer?.close();
      } finally {
        clearTimeout(abort);
      }
      await rawNode.close?.();
      await scaleOut?.close();
      await ownedStore.close();
    })();
    return closing;
  };
  const startupRound =
    rawNode instanceof StacksNodeClient && upstreamPool !== undefined
      ? async () => {
          const failures: Array<{ upstream: Upstream; failure: string }> = [];
          for (const network of NETWORKS) {
            const ups = upstreamPool.upstreams(network);
            const results = await Promise.all(ups.map((u) => rawNode.startupCheck(u)));
            const infos = results.flatMap((r) => (r !== undefined && 'info' in r ? [r.info] : []));
            chain!.believeFirst(network, infos);
            results.forEach((r, i) => {
              if (r !== undefined && 'failure' in r) failures.push({ upstream: ups[i]!, failure: r.failure });
            });
          }
          return failures;
        }
      : undefined;
  return {
    app,
    config,
    store,
    cache,
    metrics,
    upstreams: upstreamPool,
    startupRound,
    chain,
    lane,
    observer,
    close,
  };
}
