import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { DateTime, Ok, ok, Uuid } from '../../http/envelope.js';
import { validationError } from '../../http/errors.js';
import type { RouteMarkups } from './route-markups.js';
import { checkRanges, Dec } from './routes.js';

const access = { auth: 'required', scope: 'application:write' } as const;
// A markup changes what live traffic pays: never a test key's to change.
const writeAccess = { ...access, denyTestKeys: true } as const;
const tags = ['Application Manager'];
const Params = Type.Object({ id: Uuid() });
const RouteParams = Type.Object({ id: Uuid(), routeId: Uuid() });

const RouteMarkup = Type.Object({
  routeId: Uuid(),
  markupPct: Type.String({ description: '3 decimals' }),
  createdAt: DateTime(),
  updatedAt: DateTime(),
});

/** Markup per route for one sub-account (docs/account.md, Application Manager). */
export function markupRoutes(markups: RouteMarkups) {
  return (app: App) => {
    app.get(
      '/application/sub-accounts/:id/route-markups',
      {
        config: { access },
        schema: {
          tags,
          summary: "A sub-account's markup per route",
          description:
            "`markupPct` is what the sub-account pays on every other route (its own markup, else the operator's " +
            'default); each item replaces it on one route, for calls (trunk and API) and SMS alike.',
          params: Params,
          response: {
            200: Ok(
              Type.Object({
                subAccountId: Uuid(),
                markupPct: Type.String(),
                items: Type.Array(RouteMarkup),
              }),
            ),
          },
        },
      },
      async (req) => ok(await markups.list(req.principal!.accountId, req.params.id)),
    );

    app.put(
      '/application/sub-accounts/:id/route-markups/:routeId',
      {
        config: { access: writeAccess },
        schema: {
          tags,
          summary: "Set a sub-account's markup on one route",
          description:
            'From the next call or message on that route (a live call keeps the markup it started with). ' +
            '404 for an unknown route or sub-account.',
          params: RouteParams,
          body: Type.Object({ markupPct: Dec(100000, 3) }, { additionalProperties: false }),
          response: { 200: Ok(RouteMarkup) },
        },
      },
      async (req) => {
        const bad = checkRanges(req.body);
        if (bad.length > 0) throw validationError(bad);
        return ok(await markups.put(req.principal!.accountId, req.params.id, req.params.routeId, req.body.markupPct));
      },
    );

    app.delete(
      '/application/sub-accounts/:id/route-markups/:routeId',
      {
        config: { access: writeAccess },
        schema: {
          tags,
          summary: "Remove a sub-account's markup on one route: its own markup applies there again",
          params: RouteParams,
          response: { 200: Ok(Type.Object({ routeId: Uuid(), deleted: Type.Literal(true) })) },
        },
      },
      async (req) => ok(await markups.remove(req.principal!.accountId, req.params.id, req.params.routeId)),
    );
  };
}
