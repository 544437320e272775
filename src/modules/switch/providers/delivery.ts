import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Sql } from '../../../db/connection.js';
import { notFound, ruleError, validationError } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { newId, randomToken } from '../../../platform/ids.js';
import type { Mailer } from '../../../platform/mailer.js';
import type { TargetGuard } from '../../../platform/outbound-guard.js';
import {
  guardedCheckBind,
  httpsUrlCheck,
  refuseUrlTarget,
  type SmsDeliveryTestResult,
} from '../../sms/delivery-test.js';
import type { EndpointService } from './endpoints.js';
import type { SecretSealer } from './secrets.js';
import type { TrunkService } from './trunks.js';

const BIND_CHECK_TIMEOUT_MS = 10_000;
export const PORTAL_INVITE_DAYS = 7;

/** One SIP OPTIONS reachability test (the connections module's, kept in the account's test history). */
export type ReachabilityProbe = (
  accountId: string,
  target: { host: string; port: number; transport: 'udp' | 'tcp' | 'tls' },
) => Promise<{ reachable: boolean; status: number | null; rttMs: number | null }>;

/**
 * What reaches outside for a saved trunk: the SMS delivery check (a real bind with the stored
 * credentials, nothing sent), the supplier portal invitation by e-mail, and SIP OPTIONS to its endpoints.
 */
export function createTrunkDelivery(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  guard: TargetGuard;
  sealer: SecretSealer;
  mailer: Mailer;
  probe: ReachabilityProbe;
  trunks: TrunkService;
  endpoints: EndpointService;
}) {
  const { sql, clock, guard, sealer, trunks } = deps;

  return {
    async testSms(accountId: string, trunkId: string): Promise<SmsDeliveryTestResult> {
      const t = await trunks.one(accountId, trunkId);
      const method = t['smsDeliveryMethod'] as 'http' | 'smpp' | null;
      if (method === null) throw ruleError('The trunk has no SMS delivery method (smsDeliveryMethod) to test');
      if (method === 'http') {
        await refuseUrlTarget(guard, t['smsDeliveryUrl'], '/smsDeliveryUrl');
        const check = httpsUrlCheck(t['smsDeliveryUrl']);
        return {
          pass: check.ok,
          via: 'http',
          checks: [check],
          message: check.ok
            ? 'Well-formed https URL (nothing was sent)'
            : 'The delivery URL is not a well-formed https URL',
        };
      }
      const [secret] = await sql<{ smppPasswordSealed: string | null }[]>`
        select smpp_password_sealed from switch_trunks where id = ${trunkId}`;
      const missing = (['smppHost', 'smppSystemId'] as const).filter((k) => t[k] === null);
      if (!secret?.smppPasswordSealed) missing.push('smppPassword' as never);
      if (missing.length)
        throw validationError(
          missing.map((path) => ({
            path: `/${path}`,
            message: 'required for an SMPP bind check; set it on the trunk',
          })),
        );
      const r = await guardedCheckBind(
        guard,
        {
          host: t['smppHost'] as string,
          port: (t['smppPort'] as number | null) ?? 2775,
          tls: false,
          systemId: t['smppSystemId'] as string,
          password: await sealer.unseal(secret!.smppPasswordSealed!),
          bindType: (t['smppBindType'] as 'transceiver' | 'transmitter' | null) ?? 'transceiver',
          ...(t['smppSystemType'] ? { systemType: t['smppSystemType'] as string } : {}),
          timeoutMs: BIND_CHECK_TIMEOUT_MS,
        },
        '/smppHost',
      );
      return { pass: r.pass, via: 'smpp', checks: r.checks, message: r.message };
    },

    /**
     * E-mails a sign-in link to the trunk's portal address (else its provider's). Only the token's
     * hash is kept; the link is valid for PORTAL_INVITE_DAYS days.
     */
    async portalInvite(accountId: string, trunkId: string) {
      const t = await trunks.one(accountId, trunkId);
      const [p] = t.supplierId
        ? await sql<
            { portalEmail: string | null; name: string }[]
          >`select portal_email, name from switch_providers where id = ${t.supplierId}`
        : [];
      const to = (t['portalEmail'] as string | null) ?? p?.portalEmail ?? null;
      if (!to)
        throw validationError(
          [{ path: '/portalEmail', message: 'set portalEmail on the trunk or its provider first' }],
          'No portal e-mail is set',
        );
      const token = `svc_sp_${randomToken(40)}`;
      const now = clock.now();
      await sql`insert into switch_portal_invites ${sql({
        id: newId(),
        trunkId,
        email: to,
        tokenHash: createHash('sha256').update(token).digest('hex'),
        expiresAt: new Date(now.getTime() + PORTAL_INVITE_DAYS * 86_400_000),
        createdAt: now,
      })}`;
      await deps.mailer.send({
        to,
        subject: `Supplier portal invitation: ${t.label}`,
        text:
          `You are invited to the supplier portal for the trunk "${t.label}"${p ? ` of ${p.name}` : ''}.\n\n` +
          `Sign in: ${deps.mailer.link(`/supplier-portal/sign-in?token=${token}`)}\n\n` +
          `The link is valid for ${PORTAL_INVITE_DAYS} days.\n`,
      });
      deps.log.info({ trunkId }, 'supplier portal invitation sent');
      return { sent: true as const, to };
    },

    /**
     * SIP OPTIONS to each enabled endpoint (through the outbound guard): each endpoint keeps its
     * answer, and the trunk is `reachable` when any enabled endpoint answered 2xx.
     */
    async checkReachability(accountId: string, trunkId: string) {
      const enabled = (await deps.endpoints.list(accountId, trunkId)).filter((e) => e.enabled);
      if (enabled.length === 0) throw ruleError('The trunk has no enabled endpoint to probe');
      const results = await Promise.all(
        enabled.map(async (e) => ({
          id: e.id,
          r: await deps.probe(accountId, {
            host: e.host,
            port: e.port,
            transport: e.transport as 'udp' | 'tcp' | 'tls',
          }),
        })),
      );
      const now = clock.now();
      const reachable = results.some((x) => x.r.reachable);
      await sql.begin(async (tx) => {
        for (const { id, r } of results)
          await tx`
            update switch_trunk_endpoints set reachable = ${r.reachable}, last_status = ${r.status},
              last_rtt_ms = ${r.rttMs === null ? null : Math.round(r.rttMs)}, checked_at = ${now}
            where id = ${id}`;
        const rows =
          await tx`update switch_trunks set reachable = ${reachable}, reach_checked_at = ${now} where id = ${trunkId}`;
        if (rows.count === 0) throw notFound('Supplier trunk');
      });
      return {
        reachable,
        reachCheckedAt: now.toISOString(),
        endpoints: results.map(({ id, r }) => ({ id, reachable: r.reachable, status: r.status, rttMs: r.rttMs })),
      };
    },
  };
}

export type TrunkDelivery = ReturnType<typeof createTrunkDelivery>;
