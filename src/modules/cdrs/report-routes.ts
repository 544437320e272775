import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { createCsvWriter } from '../../http/csv.js';
import { DateTime, Money, Nullable, Ok, ok, Uuid } from '../../http/envelope.js';
import { validationError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import type { CdrReports } from './reports.js';

const MAX_WINDOW_DAYS = 366;

const CountryUsage = Type.Object({
  country: Type.String(),
  countryCode: Nullable(Type.String({ description: 'ISO 3166 alpha-2; null when the number has no country' })),
  attempts: Type.Integer({ description: 'deprecated alias of records' }),
  records: Type.Integer(),
  voiceSessions: Type.Integer({ description: 'calls, a failed-over call counted once' }),
  answered: Type.Integer(),
  minutes: Type.Number({ description: 'billed minutes (display number)' }),
  segments: Type.Integer({ description: 'SMS segments' }),
  asr: Nullable(Type.Number({ description: 'percent of voice sessions answered; voice only' })),
  asrBasis: Nullable(Type.Literal('voice_sessions')),
  acd: Nullable(Type.Number({ description: 'average answered call duration, seconds' })),
  cost: Money(),
});

export function cdrReportRoutes(reports: CdrReports, clock: Clock) {
  return (app: App) => {
    app.get(
      '/billing/earnings-by-route',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: ['Billing'],
          summary: 'Seller earnings by route: the top 50 over `days`',
          description:
            'Credits of records this account sold, per route, largest first. Records that name no route are summed in ' +
            'an `Unattributed` row (`routeId` null), hence `attribution: partial`.',
          querystring: Type.Object({ days: Type.Optional(Type.Integer({ minimum: 1, maximum: 366, default: 30 })) }),
          response: {
            200: Ok(
              Type.Object({
                items: Type.Array(
                  Type.Object({
                    routeId: Nullable(Uuid()),
                    destinationName: Type.String(),
                    credits: Money(),
                    count: Type.Integer(),
                  }),
                ),
                days: Type.Integer(),
                attribution: Type.Literal('partial'),
              }),
            ),
          },
        },
      },
      async (req) => ok(await reports.earningsByRoute(req.principal!.accountId, clock.now(), req.query.days ?? 30)),
    );

    app.get(
      '/billing/usage-by-country',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: ['Billing'],
          summary: 'Usage by destination country (JSON or CSV)',
          description:
            '`from` inclusive, `to` exclusive (default: the last 30 days; at most 366 days). Outbound records of the ' +
            'account; route checks and test-key traffic excluded. Largest cost first.',
          querystring: Type.Object({
            from: Type.Optional(Type.String({ format: 'date-time' })),
            to: Type.Optional(Type.String({ format: 'date-time' })),
            format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('csv')], { default: 'json' })),
          }),
          response: {
            200: Ok(
              Type.Object({
                items: Type.Array(CountryUsage),
                basis: Type.Object({
                  population: Type.String(),
                  window: Type.Object({ from: DateTime(), to: DateTime() }),
                }),
              }),
            ),
          },
        },
      },
      async (req, reply) => {
        const to = req.query.to ? new Date(req.query.to) : clock.now();
        const from = req.query.from ? new Date(req.query.from) : new Date(to.getTime() - 30 * 86_400_000);
        if (from >= to) throw validationError([{ path: 'from', message: 'must be before "to"' }]);
        if (to.getTime() - from.getTime() > MAX_WINDOW_DAYS * 86_400_000)
          throw validationError([{ path: 'from', message: `the window is at most ${MAX_WINDOW_DAYS} days` }]);
        const r = await reports.usageByCountry(req.principal!.accountId, from, to);
        if (req.query.format !== 'csv') return ok(r);
        const csv = createCsvWriter(
          [
            'country',
            'countryCode',
            'records',
            'voiceSessions',
            'answered',
            'minutes',
            'segments',
            'asr',
            'acd',
            'cost',
          ],
          ['cost'],
        );
        reply
          .type('text/csv; charset=utf-8')
          .header('content-disposition', 'attachment; filename="usage-by-country.csv"');
        for (const i of r.items) csv.write(i);
        csv.end();
        return reply.send(csv as never);
      },
    );
  };
}
