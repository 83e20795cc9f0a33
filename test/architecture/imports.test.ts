/**
 * The house's import rules (docs/architecture.md), checked on the real import graph as
 * dependency-cruiser resolves it (TypeScript's own resolution, type-only imports included:
 * a type import ties two folders together as much as a value import does).
 *
 * - Folders of src/ import downward only: each sits in a layer and may import only folders of
 *   lower layers, so no two folders can reach each other, directly or round a circle.
 * - The local chain (src/devnet, on the GPL-3.0 clarinet-sdk) is never imported by the
 *   server; clarinet-sdk is imported nowhere else.
 * - The client package (client/) stands alone: it imports nothing of the server.
 */
import { cruise, type IModule } from 'dependency-cruiser';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * Bottom first. A folder may import the folders of the layers below its own, never its own
 * layer's other folders nor a layer above. `client` is the published client package.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['network', 'client'],
  ['config'],
  ['redis'], // the connection to Redis only; each Redis implementation sits beside its interface
  ['cache'],
  ['errors'],
  ['clarity', 'api', 'explorer'],
  ['upstream'],
  ['chain'],
  ['service'],
  ['observability'],
  ['http'],
  ['scale-out'],
  ['app'], // src/app.ts and its wiring steps, src/app/
  ['main', 'cli'],
];
/** Its own world: imports only packages and itself (and the codec below it). */
const DEVNET = 'devnet';

const layerOf = new Map<string, number>();
LAYERS.forEach((units, i) => {
  for (const u of units) layerOf.set(u, i);
});

/** `src/cache/stores/redis.ts` → `cache`; `src/app.ts` → `app`; `client/src/index.ts` → `client`. */
function unitOf(path: string): string | undefined {
  const parts = path.split('/');
  if (parts[0] === 'client') return 'client';
  if (parts[0] !== 'src') return undefined;
  if (parts.length > 2) return parts[1];
  return parts[1]?.replace(/\.(m?ts|m?js)$/, '');
}

let modules: IModule[];

beforeAll(async () => {
  const result = await cruise(
    ['src', 'client'],
    {
      tsPreCompilationDeps: true,
      doNotFollow: { path: 'node_modules' },
      // client/build.mjs is the package's build script, not part of the package.
      exclude: { path: ['\\.d\\.ts$', '^client/(dist|node_modules)/', '^client/build\\.mjs$'] },
    },
    { extensions: ['.ts', '.mts', '.js', '.mjs', '.json'] },
    { tsConfig: { fileName: 'tsconfig.json' } },
  );
  if (typeof result.output === 'string') throw new Error('dependency-cruiser gave text, not a graph');
  modules = result.output.modules.filter(
    (m) => m.source.startsWith('src/') || m.source.startsWith('client/'),
  );
}, 60_000);

interface Edge {
  readonly from: string;
  readonly to: string;
  readonly fromUnit: string;
  readonly toUnit: string;
}

function localEdges(): Edge[] {
  const edges: Edge[] = [];
  for (const m of modules) {
    const fromUnit = unitOf(m.source);
    if (fromUnit === undefined) continue;
    for (const d of m.dependencies) {
      const toUnit = unitOf(d.resolved);
      if (toUnit === undefined || toUnit === fromUnit) continue;
      edges.push({ from: m.source, to: d.resolved, fromUnit, toUnit });
    }
  }
  return edges;
}

describe('imports between folders', () => {
  it('resolves every local import (a path that moved would otherwise pass unseen)', () => {
    expect(modules.length).toBeGreaterThan(150);
    const unresolved = modules.flatMap((m) =>
      m.dependencies.filter((d) => d.couldNotResolve).map((d) => `${m.source} -> ${d.module}`),
    );
    expect(unresolved).toEqual([]);
  });

  it('places every folder of src/ in a layer', () => {
    const units = new Set(modules.map((m) => unitOf(m.source)).filter((u) => u !== undefined));
    const unplaced = [...units].filter((u) => u !== DEVNET && !layerOf.has(u));
    expect(unplaced).toEqual([]);
  });

  it('imports downward only: no folder reaches its own layer’s neighbours or a layer above', () => {
    const upward = localEdges()
      .filter((e) => e.fromUnit !== DEVNET && e.toUnit !== DEVNET)
      .filter((e) => (layerOf.get(e.toUnit) ?? Number.POSITIVE_INFINITY) >= (layerOf.get(e.fromUnit) ?? -1))
      .map((e) => `${e.from} -> ${e.to}`);
    expect(upward).toEqual([]);
  });

  it('has no circle between folders', () => {
    const graph = new Map<string, Set<string>>();
    for (const e of localEdges()) {
      if (!graph.has(e.fromUnit)) graph.set(e.fromUnit, new Set());
      graph.get(e.fromUnit)?.add(e.toUnit);
    }
    const circles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (u: string, path: string[]): void => {
      if (state.get(u) === 'done') return;
      if (state.get(u) === 'open') {
        circles.push([...path.slice(path.indexOf(u)), u].join(' -> '));
        return;
      }
      state.set(u, 'open');
      for (const v of graph.get(u) ?? []) visit(v, [...path, u]);
      state.set(u, 'done');
    };
    for (const u of graph.keys()) visit(u, []);
    expect(circles).toEqual([]);
  });
});

describe('the local chain and the client package', () => {
  it('keeps src/devnet and clarinet-sdk out of the server', () => {
    const offending = modules
      .filter((m) => unitOf(m.source) !== DEVNET)
      .flatMap((m) =>
        m.dependencies
          .filter((d) => unitOf(d.resolved) === DEVNET || d.module.startsWith('@stacks/clarinet-sdk'))
          .map((d) => `${m.source} -> ${d.module}`),
      );
    expect(offending).toEqual([]);
  });

  it('keeps the client package free of the server and of runtime packages', () => {
    const offending = modules
      .filter((m) => m.source.startsWith('client/'))
      .flatMap((m) =>
        m.dependencies
          .filter((d) => !d.coreModule && !d.resolved.startsWith('client/'))
          .map((d) => `${m.source} -> ${d.module}`),
      );
    expect(offending).toEqual([]);
  });
});
