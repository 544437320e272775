import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import type { ApplicationService } from '../application/service.js';
import type { SmppCredentialsService } from './smpp-in.js';

const Issued = Type.Object({
  id: Uuid(),
  systemId: Type.String(),
  password: Type.String({ description: 'shown once' }),
  allowedIps: Type.Array(Type.String()),
  throughput: Type.Integer(),
  maxBinds: Nullable(Type.Integer({ description: 'binds open at once; null: the exchange default' })),
  accountId: Uuid(),
});

/** The SMPP section of an account: credentials for customer binds on `[smpp] port` (TLS on `tls_port`). */
export function smppCredentialRoutes(credentials: SmppCredentialsService, application: ApplicationService) {
  return (app: App) => {
    app.post(
      '/account/smpp-credentials',
      {
        config: { access: { auth: 'required', scope: 'account:write', denyTestKeys: true, grants: ['sms:send'] } },
        schema: {
          tags: ['Connections'],
          summary: 'Issue SMPP credentials (the password is shown once)',
          description:
            'Customers bind as transmitter, receiver or transceiver with these credentials; submit_sm goes through the same ' +
            'routing, pricing and ledger as POST /comms/sms. `allowedIps` empty allows any address. An operator may issue ' +
            'credentials for one of its sub-accounts with `subAccountId` (that sub-account pays). Insufficient balance answers ' +
            'submit_sm with command_status 0x00000401 (vendor range).',
          body: Type.Object(
            {
              systemId: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,16}$' })),
              allowedIps: Type.Optional(
                Type.Array(Type.String({ anyOf: [{ format: 'ipv4' }, { format: 'ipv6' }] }), { maxItems: 50 }),
              ),
              throughput: Type.Optional(
                Type.Integer({ minimum: 1, maximum: 1000, description: 'messages per second per bind' }),
              ),
              maxBinds: Type.Optional(
                Type.Integer({
                  minimum: 1,
                  maximum: 1000,
                  description:
                    'binds these credentials may hold open at once, on every server (throughput is per bind); default: ' +
                    "the exchange's `[smpp] max_binds_per_credential`. A bind over it gets ESME_RBINDFAIL",
                }),
              ),
              subAccountId: Type.Optional(Uuid()),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Issued) },
        },
      },
      async (req, reply) => {
        let accountId = req.principal!.accountId;
        if (req.body.subAccountId) {
          // Answers 404 unless the caller is this sub-account's operator.
          await application.get(accountId, req.body.subAccountId);
          accountId = req.body.subAccountId;
        }
        const issued = await credentials.issue(accountId, {
          ...(req.body.systemId ? { systemId: req.body.systemId } : {}),
          ...(req.body.allowedIps ? { allowedIps: req.body.allowedIps } : {}),
          ...(req.body.throughput ? { throughput: req.body.throughput } : {}),
          ...(req.body.maxBinds ? { maxBinds: req.body.maxBinds } : {}),
        });
        return reply.code(201).send(ok({ ...issued, accountId }));
      },
    );
  };
}
