import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { DateTime, Nullable, Ok, ok } from '../../http/envelope.js';
import type { SystemService } from './service.js';

const TAGS = ['System'];
const PUBLIC = { auth: 'public' } as const;

export function systemRoutes(system: SystemService) {
  return (app: App) => {
    app.get(
      '/system/version',
      {
        config: { access: PUBLIC },
        schema: {
          tags: TAGS,
          summary: 'Version and build of the running service',
          response: {
            200: Ok(
              Type.Object({
                name: Type.String(),
                version: Type.String(),
                apiVersion: Type.String(),
                schemaVersion: Nullable(Type.Integer({ description: 'the newest database migration applied' })),
                schemaUpdatedAt: Nullable(DateTime()),
                runtime: Type.String(),
                platform: Type.String(),
                startedAt: DateTime(),
                uptimeSeconds: Type.Integer(),
              }),
            ),
          },
        },
      },
      async () => ok(await system.version()),
    );

    app.get(
      '/system/time',
      {
        config: { access: PUBLIC },
        schema: {
          tags: TAGS,
          summary: 'Server time (UTC), to check clocks before signing webhooks or TOTP codes',
          response: {
            200: Ok(
              Type.Object({
                now: DateTime(),
                unixSeconds: Type.Integer(),
                unixMs: Type.Integer(),
                timezone: Type.Literal('UTC'),
              }),
            ),
          },
        },
      },
      async (_req, reply) => reply.header('cache-control', 'no-store').send(ok(system.time())),
    );

    app.get(
      '/system/capabilities',
      {
        config: { access: PUBLIC },
        schema: {
          tags: TAGS,
          summary: 'Supported countries, protocols, codecs, scopes, events and limits',
          response: { 200: Ok(Type.Record(Type.String(), Type.Unknown())) },
        },
      },
      async (_req, reply) => reply.header('cache-control', 'public, max-age=3600').send(ok(system.capabilities())),
    );
  };
}
