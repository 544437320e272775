import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import type { HealthRegistry } from '../../platform/health.js';

export function statusRoutes(health: HealthRegistry, startedAt: Date) {
  return (app: App) => {
    app.get(
      '/status',
      {
        config: { access: { auth: 'public' } },
        schema: {
          tags: ['Status'],
          summary: 'Liveness and readiness of the database, Redis and each listener',
          description: 'Answers 200 when every component is ready, 503 otherwise; the body lists each component.',
          response: {
            200: Type.Object({ success: Type.Literal(true), data: StatusData }),
            503: Type.Object({ success: Type.Literal(true), data: StatusData }),
          },
        },
      },
      async (_req, reply) => {
        const components = await health.report();
        const ready = Object.values(components).every((c) => c.ok);
        return reply.code(ready ? 200 : 503).send({
          success: true,
          data: { live: true, ready, startedAt: startedAt.toISOString(), components },
        });
      },
    );
  };
}

const StatusData = Type.Object({
  live: Type.Boolean(),
  ready: Type.Boolean(),
  startedAt: Type.String({ format: 'date-time' }),
  components: Type.Record(Type.String(), Type.Object({ ok: Type.Boolean() }, { additionalProperties: true })),
});
