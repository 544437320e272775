import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { DateTime, Money, Nullable, Ok, ok, Uuid } from '../../http/envelope.js';
import type { SpendingAlerts } from './alerts.js';

const Alert = Type.Object({
  id: Uuid(),
  period: Type.Unsafe<'day' | 'month'>(Type.String({ enum: ['day', 'month'] })),
  threshold: Money(),
  enabled: Type.Boolean(),
  lastFiredPeriod: Nullable(Type.String({ description: 'YYYY-MM-DD or YYYY-MM' })),
  lastFiredAt: Nullable(DateTime()),
  createdAt: DateTime(),
  updatedAt: DateTime(),
});

const Threshold = Type.String({ pattern: '^\\d{1,9}(\\.\\d{1,6})?$', description: 'USD' });
const write = { access: { auth: 'required' as const, scope: 'billing:write' as const } };

export function alertRoutes(alerts: SpendingAlerts) {
  return (app: App) => {
    app.get(
      '/billing/alerts',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: { tags: ['Billing'], summary: 'Spending alerts', response: { 200: Ok(Type.Array(Alert)) } },
      },
      async (req) => ok(await alerts.list(req.principal!.accountId)),
    );

    app.post(
      '/billing/alerts',
      {
        config: write,
        schema: {
          tags: ['Billing'],
          summary: 'Create a spending alert',
          description:
            'When live spend (charges and fees net of refunds) of the current UTC `day` or `month` reaches `threshold`, ' +
            'event `billing.spending_alert` is emitted, once per period. At most 20 alerts.',
          body: Type.Object(
            {
              period: Type.Union([Type.Literal('day'), Type.Literal('month')]),
              threshold: Threshold,
              enabled: Type.Optional(Type.Boolean({ default: true })),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Alert) },
        },
      },
      async (req, reply) => reply.code(201).send(ok(await alerts.create(req.principal!.accountId, req.body))),
    );

    app.patch(
      '/billing/alerts/:id',
      {
        config: write,
        schema: {
          tags: ['Billing'],
          summary: 'Change a spending alert (a new threshold may fire again in the same period)',
          params: Type.Object({ id: Uuid() }),
          body: Type.Object(
            { threshold: Type.Optional(Threshold), enabled: Type.Optional(Type.Boolean()) },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Alert) },
        },
      },
      async (req) => ok(await alerts.update(req.principal!.accountId, req.params.id, req.body)),
    );

    app.delete(
      '/billing/alerts/:id',
      {
        config: write,
        schema: {
          tags: ['Billing'],
          summary: 'Delete a spending alert',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(Type.Object({ deleted: Type.Literal(true) })) },
        },
      },
      async (req) => {
        await alerts.remove(req.principal!.accountId, req.params.id);
        return ok({ deleted: true as const });
      },
    );
  };
}
