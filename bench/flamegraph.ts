/**
 * A flame graph of a V8 .cpuprofile with no outside tool: the busy samples' stacks (bundle frames
 * mapped back to their sources, as bench/analyze-profile.ts does) folded into
 * `root;caller;callee <µs>` lines (Brendan Gregg's folded format, readable by any flame-graph
 * tool and by grep), and drawn as a self-contained SVG: one box per frame, its width its share
 * of the busy time, callers below callees, a tooltip (<title>) with the full name and time.
 *
 * Usage: node --import tsx bench/flamegraph.ts <file.cpuprofile> <out.svg> [out.folded]
 */
import fs from 'node:fs';
import { isGatewayFrame, label, loadProfile, moduleOf } from './analyze-profile.js';

interface Tree {
  readonly name: string;
  readonly module: string;
  us: number;
  readonly children: Map<string, Tree>;
}

export interface Flame {
  /** Folded stacks, heaviest first. */
  readonly folded: string;
  readonly svg: string;
  readonly busyMs: number;
}

const escapeXml = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** Colour by where the frame lives: the gateway warm, packages green, Node blue, V8 grey. */
function colour(module: string, url: string): string {
  if (isGatewayFrame(url)) return '#f0a04b';
  if (module === 'node (internals)') return '#7fa7d9';
  if (module.startsWith('(')) return '#bbbbbb';
  if (module === 'fastify' || module.startsWith('@fastify') || module === 'find-my-way' || module === 'avvio')
    return '#8fcf7a';
  return '#c8d96f';
}

export function flameGraph(file: string, title: string): Flame {
  const profile = loadProfile(file);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const meanGap =
    profile.samples.length > 0 ? (profile.endTime - profile.startTime) / profile.samples.length : 0;
  const root: Tree = { name: 'all', module: '', us: 0, children: new Map() };
  const urls = new Map<string, string>();
  const folded = new Map<string, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const us = i + 1 < profile.timeDeltas.length ? Math.max(0, profile.timeDeltas[i + 1]!) : meanGap;
    const leaf = byId.get(profile.samples[i]!);
    if (leaf === undefined || leaf.callFrame.functionName === '(idle)') continue;
    const stack: { name: string; module: string }[] = [];
    for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
      const f = byId.get(id)!.callFrame;
      if (f.functionName === '(root)') continue;
      const name = label(f);
      urls.set(name, f.url);
      stack.push({ name, module: moduleOf(f) });
    }
    stack.reverse();
    folded.set(
      stack.map((s) => s.name.replace(/;/g, ',')).join(';'),
      (folded.get(stack.map((s) => s.name.replace(/;/g, ',')).join(';')) ?? 0) + us,
    );
    root.us += us;
    let node = root;
    for (const s of stack) {
      let child = node.children.get(s.name);
      if (child === undefined) {
        child = { name: s.name, module: s.module, us: 0, children: new Map() };
        node.children.set(s.name, child);
      }
      child.us += us;
      node = child;
    }
  }

  // --- SVG: frames narrower than MIN_PX are dropped (their time stays in their parent's width) ---
  const WIDTH = 1600;
  const ROW = 17;
  const MIN_PX = 0.5;
  const scale = (WIDTH - 20) / Math.max(1, root.us);
  const boxes: string[] = [];
  let maxDepth = 0;
  const draw = (node: Tree, x: number, depth: number): void => {
    const w = node.us * scale;
    if (w < MIN_PX) return;
    maxDepth = Math.max(maxDepth, depth);
    boxes.push(
      `<g><title>${escapeXml(node.name)} — ${(node.us / 1000).toFixed(1)} ms, ${((node.us / Math.max(1, root.us)) * 100).toFixed(2)} % of busy</title>` +
        `<rect x="${(10 + x).toFixed(1)}" y="{Y${depth}}" width="${w.toFixed(1)}" height="${ROW - 1}" fill="${node === root ? '#dddddd' : colour(node.module, urls.get(node.name) ?? '')}" rx="2"/>` +
        (w > 40
          ? `<text x="${(13 + x).toFixed(1)}" y="{T${depth}}">${escapeXml(node.name.slice(0, Math.floor(w / 6.5)))}</text>`
          : '') +
        '</g>',
    );
    let cx = x;
    for (const child of [...node.children.values()].sort((a, b) => b.us - a.us)) {
      draw(child, cx, depth + 1);
      cx += child.us * scale;
    }
  };
  draw(root, 0, 0);
  const height = (maxDepth + 1) * ROW + 50;
  // Flame graph orientation: depth 0 (the root) at the bottom.
  const y = (depth: number): number => height - 10 - (depth + 1) * ROW;
  const body = boxes
    .map((b) =>
      b
        .replace(/\{Y(\d+)\}/, (_, d: string) => String(y(Number(d))))
        .replace(/\{T(\d+)\}/, (_, d: string) => String(y(Number(d)) + ROW - 5)),
    )
    .join('\n');
  const svg = [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="monospace" font-size="11" role="img" aria-label="${escapeXml(`Flame graph: ${title}`)}">`,
    `<title>${escapeXml(`Flame graph: ${title}`)}</title>`,
    `<text x="10" y="20" font-size="14">${escapeXml(title)} — ${(root.us / 1000).toFixed(0)} ms busy; orange: gateway (src/), green: Fastify and packages, blue: Node, grey: V8</text>`,
    body,
    '</svg>',
    '',
  ].join('\n');
  const foldedText = [...folded.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([stack, us]) => `${stack} ${Math.round(us)}`)
    .join('\n');
  return { folded: `${foldedText}\n`, svg, busyMs: Math.round(root.us / 1000) };
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) {
  const [file, svgOut, foldedOut] = process.argv.slice(2);
  if (file === undefined || svgOut === undefined) {
    process.stderr.write('usage: flamegraph <file.cpuprofile> <out.svg> [out.folded]\n');
    process.exit(2);
  }
  const flame = flameGraph(file, file);
  fs.writeFileSync(svgOut, flame.svg);
  if (foldedOut !== undefined) fs.writeFileSync(foldedOut, flame.folded);
}
