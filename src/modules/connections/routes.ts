import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import type { ConnectionsService } from './service.js';

const TAGS = ['Connections'];
const Kind = Type.Union([Type.Literal('sip_ip'), Type.Literal('sip_credentials'), Type.Literal('smpp')]);
const Transport = Type.Union([Type.Literal('udp'), Type.Literal('tcp'), Type.Literal('tls')]);

const ConnectionPoint = Type.Object({
  id: Uuid('the trunk address, purchase or SMPP credential id'),
  kind: Kind,
  identifier: Type.String({ description: 'the source address, SIP username or SMPP system_id' }),
  label: Nullable(Type.String()),
  status: Type.String({
    description: '`sip_ip`: approved or pending; `sip_credentials`: active or inactive; `smpp`: active or disabled',
  }),
  purchaseId: Nullable(Uuid()),
  allowedIps: Nullable(Type.Array(Type.String())),
  throughput: Nullable(Type.Integer({ description: 'SMPP submits per second per bind (0: unlimited)' })),
  binds: Nullable(
    Type.Array(Type.Object({ bindType: Type.String(), remoteIp: Type.String() }), {
      description: 'SMPP sessions bound now with these credentials',
    }),
  ),
  createdAt: DateTime(),
  updatedAt: Nullable(DateTime()),
});

export function connectionsRoutes(connections: ConnectionsService) {
  return (app: App) => {
    app.get(
      '/connections',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: TAGS,
          summary: "The account's connection points and their live state",
          description:
            'Whitelisted SIP source addresses (`POST /sip/trunk-ips`), SIP credentials of route purchases ' +
            '(`POST /purchases/{id}/sip-credentials`) and SMPP credentials (`POST /account/smpp-credentials`) in one list, ' +
            'each SMPP credential with the sessions bound with it now. Secrets are never shown.',
          querystring: Type.Object({ kind: Type.Optional(Kind) }),
          response: { 200: Ok(Type.Array(ConnectionPoint)) },
        },
      },
      async (req) => ok(await connections.list(req.principal!.accountId, req.query.kind)),
    );

    app.get(
      '/connections/settings',
      {
        config: { access: { auth: 'required' } },
        schema: {
          tags: TAGS,
          summary: 'Where to connect: SIP, SMPP and media addresses and ports',
          response: {
            200: Ok(
              Type.Object({
                sip: Type.Object({
                  hosts: Type.Array(Type.String()),
                  realm: Type.String({ description: 'the digest realm' }),
                  udpPort: Type.Integer(),
                  tcpPort: Type.Integer(),
                  tlsPort: Nullable(Type.Integer()),
                  authentication: Type.Array(Type.String()),
                  digestAlgorithm: Type.String(),
                  maxCallSeconds: Type.Integer(),
                }),
                smpp: Type.Object({
                  host: Type.String(),
                  port: Nullable(Type.Integer()),
                  tlsPort: Nullable(Type.Integer()),
                  version: Type.String(),
                  bindTypes: Type.Array(Type.String()),
                }),
                media: Type.Object({
                  rtpPortMin: Type.Integer(),
                  rtpPortMax: Type.Integer(),
                  codecs: Type.Array(Type.String()),
                  dtmf: Type.String(),
                }),
              }),
            ),
          },
        },
      },
      async () => ok(connections.settings()),
    );

    app.post(
      '/connections/test',
      {
        // Each request sends a probe to an address the customer chose.
        config: {
          access: { auth: 'required', scope: 'account:write', denyTestKeys: true },
          rateLimit: { points: 10, seconds: 10 },
        },
        schema: {
          tags: TAGS,
          summary: 'Check that the exchange reaches your SIP equipment (SIP OPTIONS)',
          description:
            'Sends one SIP OPTIONS from the exchange to your PBX or switch and answers with what came back: `reachable` when ' +
            'any final response below 500 other than 408 arrives in time. Nothing is billed. Only public addresses ' +
            "(or networks the operator allows) are tested; private, loopback and the exchange's own addresses answer 400.",
          body: Type.Object(
            {
              host: Type.String({ minLength: 1, maxLength: 253, description: 'host name or IP address' }),
              port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: '5060, or 5061 over TLS' })),
              transport: Type.Optional(Transport),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                host: Type.String(),
                port: Type.Integer(),
                transport: Transport,
                address: Nullable(
                  Type.String({ description: 'the address tested; null when the name did not resolve' }),
                ),
                reachable: Type.Boolean(),
                status: Nullable(Type.Integer({ description: 'the final SIP status; null when nothing answered' })),
                rttMs: Nullable(Type.Number()),
              }),
            ),
          },
        },
      },
      async (req) => ok(await connections.test(req.body)),
    );
  };
}
