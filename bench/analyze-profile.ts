/**
 * A tiny analyzer for V8 .cpuprofile files (as written by `node --cpu-prof`): self time and
 * inclusive time per function, and self time per module (a package in node_modules, a file of
 * the gateway, Node's internals, V8's own buckets such as the garbage collector).
 *
 * Frames of a bundle (the production dist/clarity-cache.mjs) are mapped back to their original
 * source file and line through the bundle's source map (node:module's SourceMap), so that the
 * gateway's modules and the packages stay told apart.
 *
 * Usage: node --import tsx bench/analyze-profile.ts <file.cpuprofile> [topN]
 */
import fs from 'node:fs';
import { SourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

export interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface FunctionTime {
  /** `name (where:line)`. */
  readonly fn: string;
  readonly module: string;
  readonly ms: number;
  /** Share of the busy (non-idle) time, %. */
  readonly pct: number;
}

export interface ProfileSummary {
  readonly file: string;
  readonly wallMs: number;
  /** Sampled time not spent idle. */
  readonly busyMs: number;
  readonly idleMs: number;
  readonly self: FunctionTime[];
  /** Inclusive time of the gateway's own functions (dist/src), each sample counted once per function. */
  readonly inclusiveGateway: FunctionTime[];
  /**
   * Every busy sample charged to the innermost gateway function on its stack (its own time plus
   * the library and Node calls it makes), or to the module of its leaf when no gateway function
   * is on the stack (HTTP parsing and writing, Fastify's own work): a breakdown that adds up.
   */
  readonly attributed: FunctionTime[];
  readonly byModule: { module: string; ms: number; pct: number }[];
}

const SPECIAL = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);

const ROOT = path.resolve(import.meta.dirname, '..');

/** A frame of the gateway's own code: the tsc output, or a source file the bundle's map points to. */
export const isGatewayFrame = (url: string): boolean =>
  url.includes('/dist/src/') || url.startsWith(`file://${ROOT}/src/`);

/**
 * Read a .cpuprofile, with every frame of a source-mapped file (a `.map` beside it) rewritten to
 * its original file and line: the bundle's one file becomes src/… and node_modules/… again.
 */
export function loadProfile(file: string): CpuProfile {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const maps = new Map<string, SourceMap | undefined>();
  const mapOf = (url: string): SourceMap | undefined => {
    if (!maps.has(url)) {
      let map: SourceMap | undefined;
      try {
        const js = fileURLToPath(url);
        if (fs.existsSync(`${js}.map`)) {
          map = new SourceMap(JSON.parse(fs.readFileSync(`${js}.map`, 'utf8')));
        }
      } catch {
        map = undefined;
      }
      maps.set(url, map);
    }
    return maps.get(url);
  };
  for (const node of profile.nodes) {
    const f = node.callFrame;
    if (!f.url.startsWith('file://')) continue;
    const map = mapOf(f.url);
    if (map === undefined) continue;
    const entry = map.findEntry(f.lineNumber, f.columnNumber) as {
      originalSource?: string;
      originalLine?: number;
      originalColumn?: number;
    };
    if (entry.originalSource === undefined) continue;
    const source = entry.originalSource.startsWith('file://')
      ? entry.originalSource
      : `file://${path.resolve(path.dirname(fileURLToPath(f.url)), entry.originalSource)}`;
    node.callFrame = {
      ...f,
      url: source,
      lineNumber: entry.originalLine ?? f.lineNumber,
      columnNumber: entry.originalColumn ?? f.columnNumber,
    };
  }
  return profile;
}

/** The module a frame belongs to: a package, a gateway file, Node internals, or a V8 bucket. */
export function moduleOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (url === '') return SPECIAL.has(functionName) ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node (internals)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const src = url.indexOf('/dist/src/');
  if (src >= 0) return `gateway: ${url.slice(src + '/dist/'.length)}`;
  if (url.startsWith(`file://${ROOT}/src/`)) return `gateway: ${url.slice(`file://${ROOT}/`.length)}`;
  return url.replace(/^file:\/\//, '');
}

export function label(frame: CallFrame): string {
  const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
  if (frame.url === '') return name;
  let where = frame.url.replace(/^file:\/\//, '');
  const nm = where.lastIndexOf('/node_modules/');
  if (nm >= 0) where = where.slice(nm + '/node_modules/'.length);
  else if (where.includes('/dist/')) where = where.slice(where.indexOf('/dist/') + 1);
  else if (where.startsWith(`${ROOT}/`)) where = where.slice(ROOT.length + 1);
  return `${name} (${where}:${frame.lineNumber + 1})`;
}

export function analyzeProfile(file: string, top = 10): ProfileSummary {
  const profile = loadProfile(file);
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const { samples, timeDeltas } = profile;
  // The time of sample i is the gap until the next sample (the last one gets the mean gap).
  const meanGap = samples.length > 0 ? (profile.endTime - profile.startTime) / samples.length : 0;
  const selfUs = new Map<string, { frame: CallFrame; us: number }>();
  const inclusiveUs = new Map<string, { frame: CallFrame; us: number }>();
  const attributedUs = new Map<string, { frame: CallFrame; us: number }>();
  let idleUs = 0;
  let totalUs = 0;
  for (let i = 0; i < samples.length; i++) {
    const us = i + 1 < timeDeltas.length ? Math.max(0, timeDeltas[i + 1]!) : meanGap;
    const node = byId.get(samples[i]!);
    if (node === undefined) continue;
    totalUs += us;
    if (node.callFrame.functionName === '(idle)') {
      idleUs += us;
      continue;
    }
    const key = label(node.callFrame);
    const self = selfUs.get(key) ?? { frame: node.callFrame, us: 0 };
    self.us += us;
    selfUs.set(key, self);
    const seen = new Set<string>();
    let charged = false;
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id)!.callFrame;
      if (!isGatewayFrame(frame.url)) continue;
      if (!charged) {
        charged = true;
        const a = attributedUs.get(label(frame)) ?? { frame, us: 0 };
        a.us += us;
        attributedUs.set(label(frame), a);
      }
      const k = label(frame);
      if (seen.has(k)) continue;
      seen.add(k);
      const inc = inclusiveUs.get(k) ?? { frame, us: 0 };
      inc.us += us;
      inclusiveUs.set(k, inc);
    }
    if (!charged) {
      const k = `(no gateway frame) ${moduleOf(node.callFrame)}`;
      const a = attributedUs.get(k) ?? { frame: node.callFrame, us: 0 };
      a.us += us;
      attributedUs.set(k, a);
    }
  }
  const busyUs = totalUs - idleUs;
  const pct = (us: number): number => Math.round((us / Math.max(1, busyUs)) * 1000) / 10;
  const ms = (us: number): number => Math.round(us / 100) / 10;
  const rank = (m: Map<string, { frame: CallFrame; us: number }>): FunctionTime[] =>
    [...m.entries()]
      .sort((a, b) => b[1].us - a[1].us)
      .slice(0, top)
      .map(([fn, v]) => ({ fn, module: moduleOf(v.frame), ms: ms(v.us), pct: pct(v.us) }));
  const modules = new Map<string, number>();
  for (const v of selfUs.values())
    modules.set(moduleOf(v.frame), (modules.get(moduleOf(v.frame)) ?? 0) + v.us);
  return {
    file: path.basename(file),
    wallMs: ms(profile.endTime - profile.startTime),
    busyMs: ms(busyUs),
    idleMs: ms(idleUs),
    self: rank(selfUs),
    inclusiveGateway: rank(inclusiveUs),
    attributed: rank(attributedUs),
    byModule: [...modules.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([module, us]) => ({ module, ms: ms(us), pct: pct(us) })),
  };
}

/** The summary as Markdown tables. */
export function formatProfile(s: ProfileSummary): string {
  const table = (head: string, rows: FunctionTime[]): string =>
    [
      `| # | ${head} | module | ms | % of busy |`,
      '| ---: | --- | --- | ---: | ---: |',
      ...rows.map((r, i) => `| ${i + 1} | \`${r.fn}\` | ${r.module} | ${r.ms} | ${r.pct} |`),
    ].join('\n');
  return [
    `Profile \`${s.file}\`: ${s.wallMs} ms sampled, ${s.busyMs} ms busy, ${s.idleMs} ms idle.`,
    '',
    '**Top functions by self time**',
    '',
    table('function (self time)', s.self),
    '',
    '**Self time by module**',
    '',
    '| module | ms | % of busy |',
    '| --- | ---: | ---: |',
    ...s.byModule.map((m) => `| ${m.module} | ${m.ms} | ${m.pct} |`),
    '',
    "**The gateway's own functions by inclusive time**",
    '',
    table('function (inclusive)', s.inclusiveGateway),
    '',
    '**Busy time charged to the innermost gateway function on the stack** (its own time plus the',
    'library and Node calls it makes; samples with no gateway function on the stack go to the module',
    'of their leaf): these add up to the busy time.',
    '',
    table('function (attributed)', s.attributed),
    '',
  ].join('\n');
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) {
  const file = process.argv[2];
  if (file === undefined) {
    process.stderr.write('usage: analyze-profile <file.cpuprofile> [topN]\n');
    process.exit(2);
  }
  process.stdout.write(formatProfile(analyzeProfile(file, Number(process.argv[3] ?? 15))));
}
