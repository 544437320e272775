import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { createCsvWriter } from '../../http/csv.js';
import { CursorPage, DateTime, Money, Nullable, Uuid } from '../../http/envelope.js';
import { CursorQuery, cursorPage } from '../../http/pagination.js';
import type { CdrRow } from './repo.js';
import type { CdrsService } from './service.js';

const Cdr = Type.Object({
  id: Uuid(),
  callUuid: Nullable(Uuid()),
  callGroupId: Nullable(Uuid()),
  direction: Type.String(),
  kind: Type.String(),
  routeId: Nullable(Uuid()),
  fromNumber: Nullable(Type.String()),
  toNumber: Nullable(Type.String()),
  cli: Nullable(Type.String()),
  status: Nullable(Type.String()),
  sipCode: Nullable(Type.Integer()),
  hangupCause: Nullable(Type.String()),
  durationSeconds: Nullable(Type.Integer()),
  billedSeconds: Nullable(Type.Integer()),
  segments: Nullable(Type.Integer()),
  pddMs: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
    description:
      'Post-dial delay of this leg in ms: from the INVITE sent to the supplier to its first 18x or 2xx; null when neither came (refused, timed out) and for SMS',
  }),
  mediaMode: Type.Union([Type.Literal('direct'), Type.Literal('proxy'), Type.Null()], {
    description:
      "A trunk call leg: its route's media mode when the call was set up (proxy: audio relayed by the exchange); null for SMS and for calls placed through the API",
  }),
  buyerCost: Nullable(Money()),
  sellerCredit: Nullable(Money('only for the route seller')),
  ratePerUnit: Nullable(Money()),
  answeredAt: Nullable(DateTime()),
  endedAt: Nullable(DateTime()),
  createdAt: DateTime(),
});

const CSV_MAX = 50_000;
const CDR_CSV_NUMERIC = ['buyerCost', 'sellerCredit', 'ratePerUnit'];
const iso = (d: Date | null) => (d ? d.toISOString() : null);

function present(r: CdrRow, viewerId: string) {
  const buyer = r.accountId === viewerId;
  return {
    id: r.id,
    callUuid: r.callUuid,
    callGroupId: r.callGroupId,
    direction: r.direction,
    kind: r.kind,
    routeId: r.routeId,
    fromNumber: r.fromNumber,
    toNumber: r.toNumber,
    cli: r.cli,
    status: r.status,
    sipCode: r.sipCode,
    hangupCause: r.hangupCause,
    durationSeconds: r.durationSeconds,
    billedSeconds: r.billedSeconds,
    segments: r.segments,
    pddMs: r.pddMs,
    mediaMode: r.mediaMode,
    // A seller sees its credit, not what the buyer paid; a buyer never sees the seller's credit.
    buyerCost: buyer || r.sellerId !== viewerId ? r.buyerCost : null,
    sellerCredit: r.sellerId === viewerId ? r.sellerCredit : null,
    ratePerUnit: r.ratePerUnit,
    answeredAt: iso(r.answeredAt),
    endedAt: iso(r.endedAt),
    createdAt: r.createdAt.toISOString(),
  };
}

export function cdrsRoutes(cdrs: Pick<CdrsService, 'listCdrs'>) {
  return (app: App) => {
    app.get(
      '/billing/cdrs',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: ['Billing'],
          summary: 'Call and message records',
          description:
            'One row per call leg (legs of a failed-over call share `callGroupId`) and per SMS. A buyer sees its own rows ' +
            "(an operator also its sub-accounts'); a seller sees the rows of its routes with `sellerCredit`. Test probes are " +
            `excluded. \`format=csv\` streams up to ${CSV_MAX} rows (larger exports: POST /billing/exports).`,
          querystring: Type.Object({
            from: Type.Optional(Type.String({ format: 'date-time', description: 'inclusive' })),
            to: Type.Optional(Type.String({ format: 'date-time', description: 'exclusive' })),
            kind: Type.Optional(Type.Union([Type.Literal('voice'), Type.Literal('sms')])),
            direction: Type.Optional(Type.Union([Type.Literal('outbound'), Type.Literal('inbound')])),
            mediaMode: Type.Optional(
              Type.Union([Type.Literal('direct'), Type.Literal('proxy')], {
                description: 'trunk call legs of routes in this media mode',
              }),
            ),
            format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('csv')], { default: 'json' })),
            ...CursorQuery(50, 100),
          }),
          // The CSV form is a stream, which Fastify sends without this serializer.
          response: { 200: CursorPage(Cdr) },
        },
      },
      async (req, reply) => {
        const viewerId = req.principal!.accountId;
        const q = req.query;
        const filter = {
          viewerId,
          from: q.from ? new Date(q.from) : undefined,
          to: q.to ? new Date(q.to) : undefined,
          kind: q.kind,
          direction: q.direction,
          mediaMode: q.mediaMode,
          cursor: q.cursor,
        };
        if (q.format === 'csv') {
          const rows = await cdrs.listCdrs({ ...filter, limit: CSV_MAX });
          const csv = createCsvWriter(Object.keys(present(rows[0] ?? emptyRow, viewerId)), CDR_CSV_NUMERIC);
          reply.type('text/csv; charset=utf-8').header('content-disposition', 'attachment; filename="cdrs.csv"');
          for (const r of rows) csv.write(present(r, viewerId));
          csv.end();
          // A stream bypasses the JSON serializer; the typed reply only knows the JSON page.
          return reply.send(csv as unknown as never);
        }
        const limit = q.limit ?? 50;
        const rows = await cdrs.listCdrs({ ...filter, limit: limit + 1 });
        return cursorPage(
          rows.map((r) => ({ ...present(r, viewerId) })),
          limit,
        );
      },
    );
  };
}

const emptyRow: CdrRow = {
  id: '',
  accountId: '',
  sellerId: null,
  callUuid: null,
  callGroupId: null,
  direction: '',
  kind: '',
  routeId: null,
  fromNumber: null,
  toNumber: null,
  cli: null,
  status: null,
  sipCode: null,
  hangupCause: null,
  durationSeconds: null,
  billedSeconds: null,
  segments: null,
  pddMs: null,
  mediaMode: null,
  buyerCost: null,
  sellerCredit: null,
  ratePerUnit: null,
  answeredAt: null,
  endedAt: null,
  createdAt: new Date(0),
};

/** The CSV shape of records as `viewerId` sees them (GET /billing/cdrs?format=csv, billing exports). */
export function cdrCsv(viewerId: string) {
  return {
    columns: Object.keys(present(emptyRow, viewerId)),
    numeric: CDR_CSV_NUMERIC,
    row: (r: CdrRow) => present(r, viewerId),
  };
}
