import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { badRequest, unauthorized } from '../../http/errors.js';
import { Ok, Uuid, ok } from '../../http/envelope.js';
import { verifyReceiptCallback } from '../../messaging/index.js';
import type { Clock } from '../../platform/clock.js';
import type { SmsService } from './service.js';

const ReceiptBody = Type.Object({
  supplierMessageId: Type.String({
    minLength: 1,
    maxLength: 128,
    description: 'the id the supplier answered our submit with',
  }),
  messageId: Type.Optional(
    Type.String({ maxLength: 64, description: 'our message id, echoed (X-Svc-Message-Id of the submit)' }),
  ),
  status: Type.Union(
    ['delivered', 'undelivered', 'expired', 'rejected', 'deleted', 'accepted', 'enroute', 'unknown'].map((s) =>
      Type.Literal(s),
    ),
  ),
  errorCode: Type.Optional(Type.String({ maxLength: 16 })),
  doneAt: Type.Optional(Type.String({ maxLength: 40, description: 'ISO 8601' })),
});

/**
 * Receipt callbacks of suppliers delivering over HTTPS (src/messaging/README.md "Receipt
 * callback"). Public: the route's signing secret is the credential, so an unsigned, mis-signed
 * or stale request is refused before anything is read.
 */
export function smsReceiptRoutes(svc: SmsService, opts: { clock: Clock; toleranceSec: number }) {
  return (app: App) => {
    app.post(
      '/sms/receipts/:routeId',
      {
        config: { access: { auth: 'public' } },
        schema: {
          tags: ['Voice and SMS'],
          summary: 'Delivery receipt from an HTTPS SMS supplier (signed)',
          description:
            'Called by a supplier of an SMS route whose delivery is `http`, at the `callbackUrl` sent with each submit. ' +
            'Headers: `X-Svc-Timestamp` (Unix seconds, within ' +
            String(opts.toleranceSec) +
            ' s of our clock) and `X-Svc-Signature`: ' +
            "`v1=` + lowercase hex HMAC-SHA256 of `<timestamp>.<raw body>` keyed with the route's `signingSecret`. " +
            'A final `delivered` marks the message delivered; `undelivered`, `expired`, `rejected` or `deleted` fail it and refund ' +
            'the buyer; other states are recorded only. 200 once stored (also for a receipt naming no message yet: it is kept in ' +
            'the database for 10 minutes and matched when the send commits, across a restart); 401 on a missing or bad signature; any other answer means: retry.',
          params: Type.Object({ routeId: Uuid() }),
          body: ReceiptBody,
          response: { 200: Ok(Type.Object({ received: Type.Literal(true), matched: Type.Boolean() })) },
        },
      },
      async (req) => {
        const secret = await svc.httpSigningSecret(req.params.routeId);
        // One answer for an unknown route and a bad signature: the path says nothing about which routes exist.
        if (!secret) throw unauthorized('Invalid receipt signature');
        const v = verifyReceiptCallback({
          rawBody: Buffer.from(req.rawBody ?? '', 'utf8'),
          headers: req.headers,
          secrets: [secret],
          now: opts.clock.now(),
          toleranceSec: opts.toleranceSec,
        });
        if (!v.ok && v.reason === 'bad_body') throw badRequest('Receipt body is not a receipt');
        if (!v.ok)
          throw unauthorized(
            v.reason === 'stale_timestamp'
              ? 'Receipt timestamp outside the allowed window'
              : 'Invalid receipt signature',
          );
        const r = await svc.onHttpReceipt(req.params.routeId, v.receipt);
        return ok({ received: true as const, matched: r === 'applied' });
      },
    );
  };
}
