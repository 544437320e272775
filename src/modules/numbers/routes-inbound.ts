import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { Ok, Uuid, ok } from '../../http/envelope.js';
import { badRequest, unauthorized } from '../../http/errors.js';
import { verifySignature } from '../../messaging/index.js';
import type { Clock } from '../../platform/clock.js';
import type { InboundSmsReceiver } from './inbound-sms.js';
import { TAGS } from './schemas.js';

/** The signing secret of an HTTPS-delivered SMS route (the sms module's); null when it has none. */
export type RouteSecret = (routeId: string) => Promise<string | null>;

/**
 * Inbound SMS from a number's seller over HTTPS: public, the seller's SMS route signing secret
 * is the credential (as its receipt callbacks), so an unsigned or stale request reads nothing.
 */
export function inboundRoutes(deps: {
  inbound: InboundSmsReceiver;
  routeSecret: RouteSecret;
  clock: Clock;
  toleranceSec: number;
}) {
  return (app: App) => {
    app.post(
      '/numbers/inbound/sms/:routeId',
      {
        config: { access: { auth: 'public' } },
        schema: {
          tags: TAGS,
          summary: 'A mobile-originated SMS to a rented number, from its seller over HTTPS (signed)',
          description:
            "Called by the seller of the number, with one of its SMS routes that delivers over HTTPS: headers `X-Svc-Timestamp` (Unix seconds, within the route's receipt tolerance) and `X-Svc-Signature` (`v1=` + hex HMAC-SHA256 of `<timestamp>.<raw body>` keyed with the route's `signingSecret`). " +
            'The message is kept on the number (`direction: in`) and `number.sms.received` is sent to the owner. ' +
            'A repeated `supplierMessageId` is answered 200 with `duplicate: true`. 401 on a missing or bad signature; ' +
            '404 when the number is not actively rented from this seller.',
          params: Type.Object({ routeId: Uuid() }),
          body: Type.Object(
            {
              from: Type.String({ minLength: 1, maxLength: 32 }),
              to: Type.String({ minLength: 1, maxLength: 32 }),
              text: Type.String({ maxLength: 1600 }),
              supplierMessageId: Type.String({ minLength: 1, maxLength: 64 }),
            },
            { additionalProperties: true },
          ),
          response: {
            200: Ok(Type.Object({ received: Type.Literal(true), messageId: Uuid(), duplicate: Type.Boolean() })),
          },
        },
      },
      async (req) => {
        const secret = await deps.routeSecret(req.params.routeId);
        // One answer for an unknown route and a bad signature: the path says nothing about which routes exist.
        if (!secret) throw unauthorized('Invalid signature');
        const ts = Number(req.headers['x-svc-timestamp']);
        const sig = req.headers['x-svc-signature'];
        if (!Number.isInteger(ts) || typeof sig !== 'string') throw unauthorized('Invalid signature');
        if (Math.abs(deps.clock.now().getTime() / 1000 - ts) > deps.toleranceSec)
          throw unauthorized('Timestamp outside the allowed window');
        if (!verifySignature([secret], ts, Buffer.from(req.rawBody ?? '', 'utf8'), sig))
          throw unauthorized('Invalid signature');
        // The sender's number is the conversation key (peer).
        if (!/^\+?\d{1,32}$/.test(req.body.from)) throw badRequest("from must be the sender's number (digits)");
        const r = await deps.inbound.receive(req.params.routeId, req.body);
        return ok({ received: true as const, messageId: r.messageId, duplicate: r.duplicate });
      },
    );
  };
}
