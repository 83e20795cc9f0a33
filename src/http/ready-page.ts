/**
 * `/ready` for people: the same facts as the JSON answer, as a small HTML page (asked for with
 * `Accept: text/html`, as a browser does): each upstream with its state and latency, each
 * network's tip, the cache's size in memory and its hit ratio over the last minute. No script,
 * no external asset; it refreshes itself every 10 seconds.
 *
 * On a phone: only the upstream's cell (its id and URL, long tokens without spaces) may break
 * anywhere. Allowing it in every cell lets the table shrink each column to a letter's width,
 * and words such as "mainnet" or a tip of "182,340" came out split over three lines. Numbers
 * keep their unit on their line; should the columns' words still not fit, the table scrolls
 * sideways inside its own box, never the page.
 */
import type { UpstreamListing } from '../observability/upstream-health.js';

export interface ReadyPageFacts {
  readonly status: 'ready' | 'degraded';
  readonly store: { readonly ok: boolean; readonly kind: string; readonly error?: string | undefined };
  readonly networks: ReadonlyArray<{
    readonly network: string;
    readonly state: string;
    readonly tipHeight: number | undefined;
    readonly upstreams: readonly UpstreamListing[];
  }>;
  readonly entriesInMemory: number;
  readonly recent: { readonly hits: number; readonly lookups: number };
  readonly observer?: { readonly height: number; readonly ageMs: number } | undefined;
}

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function readyPage(f: ReadyPageFacts): string {
  const ratio =
    f.recent.lookups === 0 ? 'no lookups' : `${Math.round((100 * f.recent.hits) / f.recent.lookups)} %`;
  const rows = f.networks
    .flatMap((n) =>
      n.upstreams.length === 0
        ? [`<tr><td>${escapeHtml(n.network)}</td><td colspan="4">${escapeHtml(n.state)}</td></tr>`]
        : n.upstreams.map(
            (u) =>
              `<tr><td>${escapeHtml(n.network)}</td><td class="token">${escapeHtml(u.id)}<br><small>${escapeHtml(u.url)}</small></td><td class="${escapeHtml(u.state)}">${escapeHtml(u.state)}${u.excluded === undefined ? '' : `<br><small>${escapeHtml(u.excluded.reason)}</small>`}</td><td class="num">${u.latencyMs === undefined ? '—' : `${Math.round(u.latencyMs)} ms`}</td><td class="num">${u.tipHeight === undefined ? '—' : u.tipHeight.toLocaleString('en-US')}</td></tr>`,
          ),
    )
    .join('\n');
  const tips = f.networks
    .map(
      (n) =>
        `<li>${escapeHtml(n.network)}: ${n.tipHeight === undefined ? 'not known yet' : `block ${n.tipHeight.toLocaleString('en-US')}`}</li>`,
    )
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="10"><title>clarity-cache: ${escapeHtml(f.status)}</title>
<style>body{font:15px/1.5 system-ui,sans-serif;margin:1rem auto;max-width:60rem;padding:0 1rem;overflow-wrap:break-word}.scroll{overflow-x:auto}table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}.token{overflow-wrap:anywhere}.num{white-space:nowrap}@media (max-width:30rem){body{padding:0 .6rem}td,th{padding:.3rem .35rem}}.ok,.up{color:#0a6b2d}.open,.down,.implausible,.wrong-chain,.sitting-out{color:#a30d0d}.lagging,.degraded{color:#8a5a00}</style>
</head><body>
<h1>clarity-cache is <span class="${escapeHtml(f.status)}">${escapeHtml(f.status)}</span></h1>
<h2>Chain tip</h2><ul>${tips}</ul>
${f.observer === undefined ? '' : `<p>Event observer: last block ${f.observer.height.toLocaleString('en-US')}, ${Math.round(f.observer.ageMs / 1000)} s ago.</p>`}
<h2>Cache</h2>
<p>Store: ${escapeHtml(f.store.kind)} (${f.store.ok ? 'reachable' : `unreachable${f.store.error === undefined ? '' : `: ${escapeHtml(f.store.error)}`}`}); ${f.entriesInMemory.toLocaleString('en-US')} entries in memory; hit ratio over the last minute: ${ratio} (${f.recent.hits.toLocaleString('en-US')} of ${f.recent.lookups.toLocaleString('en-US')} lookups).</p>
<h2>Upstreams</h2>
<div class="scroll"><table><thead><tr><th>network</th><th>upstream</th><th>state</th><th>latency</th><th>tip</th></tr></thead><tbody>
${rows}
</tbody></table></div>
<p><small>The same facts as JSON: <code>curl -s /ready</code>. Metrics: <a href="/metrics">/metrics</a>.</small></p>
</body></html>
`;
}
