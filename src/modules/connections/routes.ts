import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { CursorQuery, cursorPage } from '../../http/pagination.js';
import type { ConnectionsService } from './service.js';

const TAGS = ['Connections'];
const Kind = Type.Union([Type.Literal('sip_ip'), Type.Literal('sip_credentials'), Type.Literal('smpp')]);
const Transport = Type.Union([Type.Literal('udp'), Type.Literal('tcp'), Type.Literal('tls')]);

const TestResult = Type.Object({
  id: Uuid(),
  host: Type.String(),
  port: Type.Integer(),
  transport: Transport,
  address: Nullable(Type.String({ description: 'the address tested; null when the name did not resolve' })),
  reachable: Type.Boolean(),
  status: Nullable(Type.Integer({ description: 'the final SIP status; null when nothing answered' })),
  rttMs: Nullable(Type.Number()),
  createdAt: DateTime(),
});

const ConnectionPoint = Type.Object({
  id: Uuid('the trunk address, purchase or SMPP credential id'),
  kind: Kind,
  identifier: Type.String({ description: 'the source address, SIP username or SMPP system_id' }),
  label: Nullable(Type.String()),
  status: Type.String({
    description:
      '`sip_ip`: approved or pending; `sip_credentials`: active or inactive (purchase no longer active); any: disabled',
  }),
  disabled: Type.Boolean({ description: 'calls or binds through it are refused until enabled again' }),
  disabledAt: Nullable(DateTime()),
  purchaseId: Nullable(Uuid()),
  allowedIps: Nullable(Type.Array(Type.String())),
  throughput: Nullable(Type.Integer({ description: 'SMPP submits per second per bind (0: unlimited)' })),
  maxBinds: Nullable(
    Type.Integer({
      description:
        "SMPP: binds these credentials may hold open at once, on every server (the credential's own, else the default)",
    }),
  ),
  maxConcurrentCalls: Nullable(
    Type.Integer({ description: 'SIP: calls at once through this point (null: only the account limits)' }),
  ),
  maxCps: Nullable(Type.Integer({ description: 'SIP: new calls per second through this point (null: no limit)' })),
  currentCalls: Nullable(Type.Integer({ description: 'SIP: calls live through this point now, on every server' })),
  currentCps: Nullable(Type.Integer({ description: 'SIP: calls let through in the current second' })),
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
          response: { 200: Ok(TestResult) },
        },
      },
      async (req) => ok(await connections.test(req.principal!.accountId, req.body)),
    );

    app.get(
      '/connections/tests',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: TAGS,
          summary: 'Reachability tests run so far, newest first',
          description:
            'Every `POST /connections/test` that sent a probe (or found the name unresolvable), as it answered.',
          querystring: Type.Object(CursorQuery()),
          response: { 200: CursorPage(TestResult) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(
          await connections.tests(req.principal!.accountId, { cursor: req.query.cursor, limit }),
          limit,
        );
      },
    );

    app.get(
      '/connections/:id',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: TAGS,
          summary: 'One connection point with its limits and live state',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(ConnectionPoint) },
        },
      },
      async (req) => ok(await connections.get(req.principal!.accountId, req.params.id)),
    );

    app.patch(
      '/connections/:id',
      {
        config: { access: { auth: 'required', scope: 'account:write', denyTestKeys: true } },
        schema: {
          tags: TAGS,
          summary: 'Set limits on a connection point, or disable it without deleting it',
          description:
            'SIP addresses and credentials take `maxConcurrentCalls` and `maxCps` (null lifts the limit); calls over ' +
            'them are refused with 503. SMPP credentials take `throughput` (submits per second per bind; over it, ' +
            '`ESME_RTHROTTLED`) and `maxBinds` (binds open at once on every server, 1 to 1000; null: the default; a bind ' +
            'over it gets `ESME_RBINDFAIL`, binds already open stay). A disabled point refuses calls (403) and binds (`ESME_RBINDFAIL`), and its bound ' +
            'sessions are unbound, on every server; enabling it again restores it as it was.',
          params: Type.Object({ id: Uuid() }),
          body: Type.Object(
            {
              disabled: Type.Optional(Type.Boolean()),
              maxConcurrentCalls: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100_000 }))),
              maxCps: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 10_000 }))),
              throughput: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000 })),
              maxBinds: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 1000 }))),
            },
            { additionalProperties: false, minProperties: 1 },
          ),
          response: { 200: Ok(ConnectionPoint) },
        },
      },
      async (req) => ok(await connections.update(req.principal!.accountId, req.params.id, req.body)),
    );
  };
}
