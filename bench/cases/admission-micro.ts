/**
 * What keys and quotas cost per request in the gateway's own code, in process: the admission
 * of one request, the RateLimit headers of its answer and the charge of its units, with keys
 * off (the reference, measured in the same run), one request quota, and the access bench's
 * keys file (requests, units and month quotas). Node's HTTP work is not in it: the
 * access-and-observer case measures the whole answer under wrk.
 *
 *   node --import tsx bench/run.ts admission-micro
 */
import type { IncomingMessage } from 'node:http';
import { Admission } from '../../src/http/admission/admission.js';
import { ApiKeyRing, parseApiKeys } from '../../src/http/admission/api-keys.js';
import { MemoryQuota } from '../../src/http/admission/quota-store.js';
import { rateLimitHeaders } from '../../src/http/metering.js';
import { type BenchCase, log, median, QUICK, round, runStandalone, x } from '../support.js';

const KEY = 'bench-0123456789abcdef0123456789abcdef';
const N = QUICK ? 100_000 : 500_000;
const ROUNDS = 5;
const VARIANTS = ['keys off', 'one request quota', 'requests, units and month quotas'] as const;
type Variant = (typeof VARIANTS)[number];

function gate(variant: Variant): Admission {
  const quotas =
    variant === 'keys off'
      ? undefined
      : {
          requestsPerMinute: 1e8,
          ...(variant === 'one request quota' ? {} : { unitsPerMinute: 1e8, unitsPerMonth: 1e8 }),
        };
  const keys =
    quotas === undefined ? undefined : new ApiKeyRing(parseApiKeys([{ name: 'bench', key: KEY, ...quotas }]));
  let month = 0;
  return new Admission({
    trustProxy: 0,
    keys,
    keysRequired: keys !== undefined,
    quota: new MemoryQuota(),
    onKeyUse: () => {},
    monthUnits: () => month++,
  });
}

/** µs per request over N requests: admit, the headers of a 1-unit answer, the charge. */
function measure(admission: Admission): number {
  const req = {
    method: 'POST',
    url: '/contract-calls/read-only/SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9/demo/get-info',
    headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    socket: { remoteAddress: '127.0.0.1' },
  } as unknown as IncomingMessage;
  let bytes = 0;
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const verdict = admission.admit(req);
    if (verdict instanceof Promise || !verdict.ok) throw new Error('admission refused a bench request');
    const headers = rateLimitHeaders(verdict.quotas, 1);
    if (headers !== undefined) bytes += headers[1].length;
    admission.charge(verdict, 1);
  }
  const us = ((performance.now() - t0) * 1000) / N;
  if (bytes < 0) throw new Error('unreachable');
  return us;
}

async function run() {
  const gates = new Map(VARIANTS.map((v) => [v, gate(v)]));
  const times = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
  for (let r = 0; r < ROUNDS; r++) {
    // Alternating, one round of each at a time; the first round warms the JIT up and is kept out.
    for (const v of VARIANTS) {
      const us = measure(gates.get(v)!);
      if (r > 0) times.get(v)!.push(us);
    }
  }
  const med = (v: Variant) => median(times.get(v)!);
  const off = med('keys off');
  log(`admission-micro: ${VARIANTS.map((v) => `${v} ${med(v).toFixed(2)} µs`).join(', ')}`);
  return {
    settings: { requestsPerRound: N, rounds: ROUNDS, measuredRounds: ROUNDS - 1 },
    rows: VARIANTS.slice(1).map((v) => ({
      figure: `admission, RateLimit headers and charge: ${v}`,
      value: `${med(v).toFixed(2)} µs`,
      reference: `${off.toFixed(2)} µs (keys off)`,
      ratio: x(med(v) / off, 2),
      target: '—',
      status: '—',
    })),
    notes: [
      `In process, ${N} requests per round, ${ROUNDS - 1} measured rounds after one to warm up, medians.`,
      'Node parses no request and writes no header here: see access-and-observer for the whole answer.',
    ],
    results: Object.fromEntries(VARIANTS.map((v) => [v, round(med(v), 3)])),
  };
}

export const admissionMicro: BenchCase = { title: 'what admission costs per request, in process', run };
runStandalone(import.meta.filename, admissionMicro);
