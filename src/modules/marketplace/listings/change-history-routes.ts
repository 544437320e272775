import { Type } from 'typebox';
import type { App } from '../../../http/app.js';
import { DateTime, Nullable, OffsetPage, Ok, Uuid, ok } from '../../../http/envelope.js';
import { OffsetQuery } from '../../../http/pagination.js';
import type { ListingChanges } from './change-history.js';
import type { LiveCapacity } from './live-capacity.js';

const TAGS = ['Marketplace routes'];

/** A listing's change history and its live use of capacity and CPS: the seller's read-outs of one listing. */
export function listingChangeRoutes(changes: ListingChanges, live: LiveCapacity | null) {
  return (app: App) => {
    if (live !== null)
      app.get(
        '/routes/:id/capacity',
        {
          config: { access: { auth: 'required', scope: 'routes:read' } },
          schema: {
            tags: TAGS,
            summary:
              "An own voice listing's live use: calls in progress and calls this second against capacity and CPS",
            description:
              'The counters the SIP plane admits calls with (every daemon’s, through Redis); null where the listing ' +
              'states no capacity or CPS. 404 unless own; 400 for SMS listings and blends.',
            params: Type.Object({ id: Uuid() }),
            response: {
              200: Ok(
                Type.Object({
                  routeId: Uuid(),
                  capacity: Nullable(Type.Integer()),
                  maxCps: Nullable(Type.Integer()),
                  concurrentCalls: Nullable(Type.Integer()),
                  capacityUsedPercent: Nullable(Type.Number()),
                  callsThisSecond: Nullable(Type.Integer()),
                  cpsUsedPercent: Nullable(Type.Number()),
                  at: DateTime(),
                }),
              ),
            },
          },
        },
        async (req) => ok(await live.read(req.principal!.accountId, req.params.id)),
      );

    app.get(
      '/routes/:id/changes',
      {
        config: { access: { auth: 'required', scope: 'routes:read' } },
        schema: {
          tags: TAGS,
          summary: "A listing's change history: every field changed, old and new value, when and (seller) by whom",
          description:
            'Newest first. The seller sees every field with `by` (seller or operator) and `actorId`; buyers and others ' +
            'who can see the listing see its terms, stated figures, visibility and status, without who.',
          params: Type.Object({ id: Uuid() }),
          querystring: Type.Object({
            ...OffsetQuery(25, 100),
            field: Type.Optional(Type.String({ pattern: '^[a-zA-Z]{1,40}$', description: 'one field, e.g. maxCps' })),
          }),
          response: {
            200: OffsetPage(
              Type.Object({
                id: Type.String(),
                field: Type.String(),
                from: Type.Unknown(),
                to: Type.Unknown(),
                changedAt: DateTime(),
                by: Type.Optional(Type.Union([Type.Literal('seller'), Type.Literal('operator')])),
                actorId: Type.Optional(Nullable(Uuid())),
              }),
            ),
          },
        },
      },
      async (req) =>
        ok(
          await changes.list(req.principal!.accountId, req.params.id, {
            ...(req.query.field === undefined ? {} : { field: req.query.field }),
            limit: req.query.limit ?? 25,
            offset: req.query.offset ?? 0,
          }),
        ),
    );
  };
}
