/**
 * The usage API (docs/usage.md): `GET /admin/usage` for the operator (every key, behind
 * ADMIN_TOKEN) and `GET /usage` for a key's own figures (admission lets it in only with a valid
 * key). Both answer the usage rows grouped as asked, in the envelope or, with `Accept:
 * text/csv`, as RFC 4180 CSV with a header row.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ok } from '../../api/envelope.js';
import { ErrorEnvelope, successEnvelope } from '../../api/schemas.js';
import { GatewayError } from '../../errors.js';
import {
  oldestKeptDay,
  USAGE_DIMENSIONS,
  USAGE_FIGURES,
  type UsageDimension,
  type UsageQuery,
  type UsageResult,
  type UsageResultRow,
  utcDay,
} from '../../service/usage/usage.js';
import { admissionOf } from '../admission/hook.js';

/** What the routes read: the recorder's query (its own unflushed figures included). */
export interface UsageReader {
  readonly retentionDays: number;
  query(query: UsageQuery): Promise<UsageResult>;
}

export interface UsageRoutesOptions {
  readonly usage: UsageReader;
  /** Register GET /admin/usage (only behind an admission that checks ADMIN_TOKEN). */
  readonly admin: boolean;
  readonly now?: () => number;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

const Figures = {
  requests: Type.Integer(),
  units: Type.Integer(),
  upstreamRequests: Type.Integer(),
  bytesSent: Type.Integer(),
};
const UsageData = Type.Object({
  from: Type.String({ description: 'first UTC day, inclusive' }),
  to: Type.String({ description: 'last UTC day, inclusive' }),
  groupBy: Type.Array(Type.String()),
  rows: Type.Array(
    Type.Object({
      key: Type.Optional(Type.Union([Type.String(), Type.Null()])),
      day: Type.Optional(Type.String()),
      route: Type.Optional(Type.String()),
      function: Type.Optional(Type.String()),
      outcome: Type.Optional(Type.String()),
      ...Figures,
    }),
  ),
  totals: Type.Object(Figures),
});
const Query = Type.Object({
  key: Type.Optional(Type.String({ description: 'a key name; `-` for anonymous requests' })),
  from: Type.Optional(Type.String({ description: 'first UTC day (YYYY-MM-DD), inclusive' })),
  to: Type.Optional(Type.String({ description: 'last UTC day (YYYY-MM-DD), inclusive' })),
  groupBy: Type.Optional(
    Type.String({ description: 'comma-separated: key, day, route, function, outcome (default key,day)' }),
  ),
});
const response = { 200: successEnvelope(UsageData), '4xx': ErrorEnvelope, '5xx': ErrorEnvelope };

export const usageRoutes: FastifyPluginAsyncTypebox<UsageRoutesOptions> = async (app, options) => {
  const { usage } = options;
  const now = options.now ?? Date.now;

  if (options.admin) {
    app.get(
      '/admin/usage',
      {
        schema: {
          summary: 'Usage per key, day, route, function and outcome (JSON, or CSV with Accept: text/csv)',
          tags: ['admin'],
          security: [{ bearerAuth: [] }],
          querystring: Query,
          response,
        },
      },
      async (request, reply) => {
        const q = request.query;
        const key = q.key === undefined ? undefined : q.key === '-' ? null : q.key;
        return answer(request, reply, usage, parse(q, now(), usage.retentionDays, key));
      },
    );
  }

  app.get(
    '/usage',
    {
      schema: {
        summary: "The calling API key's own usage (JSON, or CSV with Accept: text/csv)",
        tags: ['usage'],
        security: [{ apiKey: [] }],
        querystring: Type.Omit(Query, ['key']),
        response,
      },
    },
    async (request, reply) => {
      // Admission let it in with a valid key only.
      const key = admissionOf(request)?.key?.name ?? null;
      return answer(request, reply, usage, parse(request.query, now(), usage.retentionDays, key));
    },
  );
};

interface Asked {
  readonly query: UsageQuery & { readonly from: string; readonly to: string };
}

function parse(
  q: { from?: string | undefined; to?: string | undefined; groupBy?: string | undefined },
  now: number,
  retentionDays: number,
  key: string | null | undefined,
): Asked {
  for (const field of ['from', 'to'] as const) {
    const v = q[field];
    const at = v === undefined ? Number.NaN : Date.parse(`${v}T00:00:00Z`);
    if (v !== undefined && (!DAY.test(v) || !Number.isFinite(at) || utcDay(at) !== v)) {
      throw new GatewayError('VALIDATION_ERROR', `${field} must be a UTC day, YYYY-MM-DD`, {
        field,
        value: v,
      });
    }
  }
  const groupBy = (q.groupBy ?? 'key,day')
    .split(',')
    .map((d) => d.trim())
    .filter((d) => d !== '');
  const seen = new Set<string>();
  for (const d of groupBy) {
    if (!(USAGE_DIMENSIONS as readonly string[]).includes(d) || seen.has(d)) {
      throw new GatewayError(
        'VALIDATION_ERROR',
        `groupBy takes each of ${USAGE_DIMENSIONS.join(', ')} at most once, got ${JSON.stringify(d)}`,
        { field: 'groupBy', value: q.groupBy },
      );
    }
    seen.add(d);
  }
  const from = q.from ?? oldestKeptDay(now, retentionDays);
  const to = q.to ?? utcDay(now);
  if (from > to) {
    throw new GatewayError('VALIDATION_ERROR', `from (${from}) is after to (${to})`, { from, to });
  }
  // Not before the oldest day kept: older rows are gone, and saying so is clearer than zeros.
  const oldest = oldestKeptDay(now, retentionDays);
  return {
    query: {
      ...(key === undefined ? {} : { key }),
      from: laterDay(from, oldest),
      to,
      groupBy: groupBy as UsageDimension[],
    },
  };
}

async function answer(
  request: FastifyRequest,
  reply: FastifyReply,
  usage: UsageReader,
  asked: Asked,
): Promise<FastifyReply> {
  const { query } = asked;
  const result = await usage.query(query);
  if (wantsCsv(request)) return reply.type('text/csv; charset=utf-8').send(csv(query.groupBy, result.rows));
  return reply.send(
    ok({ from: query.from, to: query.to, groupBy: query.groupBy, rows: result.rows, totals: result.totals }),
  );
}

function wantsCsv(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  return /(^|,)\s*text\/csv\b/i.test(accept);
}

/** RFC 4180: CRLF line ends, a header row, fields quoted when they hold a comma, quote or line end. */
export function csv(groupBy: readonly UsageDimension[], rows: readonly UsageResultRow[]): string {
  const columns = [...groupBy, ...USAGE_FIGURES];
  const lines = [columns.join(',')];
  for (const row of rows) {
    lines.push(columns.map((c) => field((row as unknown as Record<string, unknown>)[c])).join(','));
  }
  return `${lines.join('\r\n')}\r\n`;
}

function field(value: unknown): string {
  // The anonymous key is empty in CSV (null in JSON).
  const text = value === null || value === undefined ? '' : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** The later of two UTC days (`YYYY-MM-DD` sorts as text). */
function laterDay(a: string, b: string): string {
  return a.localeCompare(b) >= 0 ? a : b;
}
