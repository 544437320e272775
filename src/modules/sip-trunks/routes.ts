import { SmsDeliveryTest, testSmsDelivery } from '../sms/delivery-test.js';
import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { notFound, ruleError, validationError } from '../../http/errors.js';
import { newId, randomToken } from '../../platform/ids.js';
import type { ProbeResult } from '../../telephony/sip/index.js';
import {
  isNeverAllowed,
  isPrivateAddress,
  REFUSED_MESSAGE,
  TargetRefusedError,
  unmapAddress,
  type NetworkList,
  type TargetGuard,
} from '../../platform/outbound-guard.js';
import type { PurchasesService } from '../marketplace/purchases/service.js';
import type { RoutesService } from '../marketplace/listings/service.js';
import type { HealthTarget } from './endpoint-health.js';
import type { SipTrunksService } from './service.js';

export interface RouteProbe {
  routes: Pick<RoutesService, 'visibleRoute' | 'endpointsFor' | 'smsDeliveryFor'>;
  probe(target: HealthTarget): Promise<ProbeResult>;
  /** Feeds the result to the endpoint health state, as a scheduled check would. */
  record(target: HealthTarget, result: ProbeResult): void;
  /** The supplier-target guard (`[security] private_supplier_networks`). */
  guard: TargetGuard;
}

/** Which source addresses a customer may whitelist for SIP trunk calls. */
export interface TrunkIpPolicy {
  permits(ip: string): boolean;
}

const TRUNK_IP_REFUSED =
  "must be a public address: loopback, unspecified, multicast, private, link-local and the exchange's own addresses are refused";

/**
 * Public unicast only, never the exchange itself; `[security] private_trunk_networks` lets an
 * operator's private networks (and, in tests, loopback) through. Unspecified and multicast never pass.
 */
export function trunkIpPolicy(allow: NetworkList, isOwnAddress: (ip: string) => boolean): TrunkIpPolicy {
  return {
    permits(ip) {
      if (isNeverAllowed(ip)) return false;
      if (allow.has(ip)) return true;
      return !isPrivateAddress(ip) && !isOwnAddress(ip);
    },
  };
}

export function callsRoutes(
  calls: SipTrunksService,
  purchases: PurchasesService,
  sipHost: string,
  voice: RouteProbe,
  trunkIps: TrunkIpPolicy,
) {
  return (app: App) => {
    app.post(
      '/routes/:id/test',
      {
        config: { access: { auth: 'required', scope: 'routes:read' }, rateLimit: { points: 5, seconds: 10 } },
        schema: {
          tags: ['Marketplace routes'],
          summary: "Probe a voice route's SIP endpoints with OPTIONS, or check an own SMS route's delivery",
          description:
            'Sends SIP OPTIONS to each endpoint of the route (your own, or one visible to you) in priority order and answers with ' +
            "the first that responds (`ok`: any final response below 500 other than 408), else the first endpoint's result. " +
            'The same probe the scheduled health checks use; no call is placed and nothing is billed. ' +
            'On an SMS route (its seller only, as it uses the stored credentials): SMPP delivery performs one real bind and unbind ' +
            'and sends nothing; HTTPS delivery is checked for a well-formed https URL and a signing secret. That answer is ' +
            '`{ pass, via, checks[] { label, value, ok }, message }`.',
          params: Type.Object({ id: Uuid() }),
          response: {
            200: Ok(
              Type.Union([
                Type.Object({ ok: Type.Boolean(), status: Nullable(Type.Integer()), rttMs: Type.Number() }),
                SmsDeliveryTest,
              ]),
            ),
          },
        },
      },
      async (req) => {
        const route = await voice.routes.visibleRoute(req.params.id, req.principal!.accountId);
        if (!route) throw notFound('Route');
        if (route.type === 'sms') {
          if (route.sellerId !== req.principal!.accountId)
            throw ruleError("Only the route's seller can test its SMS delivery");
          const d = (await voice.routes.smsDeliveryFor([route.id])).get(route.id);
          if (!d) throw ruleError('The route has no SMS delivery to test');
          return ok(await testSmsDelivery(d, { guard: voice.guard }));
        }
        if (route.type !== 'voice') throw ruleError('Only voice routes have SIP endpoints to probe');
        const endpoints = (await voice.routes.endpointsFor([req.params.id])).sort((a, b) => a.priority - b.priority);
        let first: ProbeResult | null = null;
        let refused = false;
        for (const e of endpoints) {
          const target = { host: e.host, port: e.port, transport: e.transport };
          if (target.transport !== 'udp' && target.transport !== 'tcp' && target.transport !== 'tls') continue;
          // Checked before anything is sent, so a refused endpoint answers the same whatever listens there.
          try {
            await voice.guard.resolve(target.host, target.port);
          } catch (err) {
            if (err instanceof TargetRefusedError) {
              refused = true;
              continue;
            }
          }
          const r = await voice.probe(target);
          voice.record(target, r);
          if (r.ok) return ok(r);
          first ??= r;
        }
        if (!first && refused)
          throw validationError(
            [{ path: 'endpoints', message: REFUSED_MESSAGE }],
            "The route's SIP endpoints are not allowed addresses",
          );
        if (!first) throw ruleError('The route has no SIP endpoint to probe');
        return ok(first);
      },
    );

    const TrunkIp = Type.Object({
      id: Uuid(),
      ip: Type.String(),
      label: Nullable(Type.String()),
      status: Type.Union([Type.Literal('approved'), Type.Literal('pending')], {
        description:
          '`pending`: another account holds the address; calls from it are not attributed to this account unless the operator approves the claim',
      }),
      createdAt: DateTime(),
    });
    app.get(
      '/sip/trunk-ips',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: ['Connections'],
          summary: 'Whitelisted source addresses',
          response: { 200: Ok(Type.Array(TrunkIp)) },
        },
      },
      async (req) =>
        ok(
          (await calls.repo.listTrunkIps(req.principal!.accountId)).map((r) => ({
            ...r,
            createdAt: r.createdAt.toISOString(),
          })),
        ),
    );

    app.post(
      '/sip/trunk-ips',
      {
        config: { access: { auth: 'required', scope: 'account:write', denyTestKeys: true, grants: ['voice:send'] } },
        schema: {
          tags: ['Connections'],
          summary: 'Whitelist a source address for SIP trunk calls',
          description:
            'Every call from a whitelisted address bills this account without digest authentication (attribution step 1), ' +
            'so per-customer billing of sub-accounts never runs for calls from it. The address must be public: loopback, ' +
            "unspecified, multicast, private, link-local and the exchange's own addresses are refused (400 `VALIDATION_ERROR`), " +
            'except private networks the operator allows. An address another account has already whitelisted is kept ' +
            '`pending` until the operator approves it, and bills nobody here meanwhile.',
          body: Type.Object(
            {
              ip: Type.String({ anyOf: [{ format: 'ipv4' }, { format: 'ipv6' }] }),
              label: Type.Optional(Type.String({ maxLength: 60 })),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(TrunkIp) },
        },
      },
      async (req, reply) => {
        const ip = unmapAddress(req.body.ip);
        if (!trunkIps.permits(ip)) throw validationError([{ path: 'ip', message: TRUNK_IP_REFUSED }]);
        const r = await calls.repo.addTrunkIp({
          id: newId(),
          accountId: req.principal!.accountId,
          ip,
          label: req.body.label ?? null,
        });
        if (r.status === 'pending')
          req.log.warn({ trunkIpId: r.id }, 'trunk address claimed by a second account: pending operator approval');
        return reply.code(201).send(ok({ ...r, createdAt: r.createdAt.toISOString() }));
      },
    );

    app.delete(
      '/sip/trunk-ips/:id',
      {
        config: { access: { auth: 'required', scope: 'account:write', denyTestKeys: true } },
        schema: {
          tags: ['Connections'],
          summary: 'Remove a whitelisted address',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(Type.Object({ deleted: Type.Boolean() })) },
        },
      },
      async (req) => {
        if (!(await calls.repo.removeTrunkIp(req.principal!.accountId, req.params.id))) throw notFound('Trunk address');
        return ok({ deleted: true });
      },
    );

    app.post(
      '/purchases/:id/sip-credentials',
      {
        config: { access: { auth: 'required', scope: 'purchases:write', denyTestKeys: true, grants: ['voice:send'] } },
        schema: {
          tags: ['Connections'],
          summary: 'Issue (or rotate) the SIP credentials of a route purchase',
          description:
            `Calls authenticated with these credentials bill the purchasing account and take this route first (attribution step 2). ` +
            `Digest realm: \`${sipHost}\`, MD5, no qop. The password is shown once; rotating invalidates the old one at once.`,
          params: Type.Object({ id: Uuid() }),
          response: {
            201: Ok(
              Type.Object({
                purchaseId: Uuid(),
                sipUsername: Type.String(),
                sipPassword: Type.String(),
                realm: Type.String(),
              }),
            ),
          },
        },
      },
      async (req, reply) => {
        const p = await purchases.get(req.principal!.accountId, req.params.id);
        if ((p as { status?: string }).status !== 'active')
          throw ruleError('Only an active purchase can have SIP credentials');
        const username = `pur_${req.params.id.replaceAll('-', '').slice(-12)}`;
        const password = randomToken(24);
        await calls.purchaseCredentials(req.principal!.accountId, req.params.id, password, username);
        return reply
          .code(201)
          .send(ok({ purchaseId: req.params.id, sipUsername: username, sipPassword: password, realm: sipHost }));
      },
    );
  };
}
