/**
 * Supplier delivery per route: SMPP binds kept open per route, or one signed HTTPS POST per message
 * (src/messaging/README.md "HTTPS delivery to suppliers"). The send path sees one outcome shape.
 */
import type { Logger } from 'pino';
import {
  bindFieldProblems,
  createHttpSupplier,
  createSupplierBind,
  SMPP_STATUS,
  type HttpSupplier,
  type MobileOriginated,
  type SubmitOutcome,
  type SupplierBind,
  type SupplierReceipt,
} from '../../messaging/index.js';
import type { Clock } from '../../platform/clock.js';
import type { TargetGuard } from '../../platform/outbound-guard.js';

/**
 * A submit's result. `ambiguous` marks an error after which the supplier may hold the message (an
 * HTTPS timeout or a reset after the request went out): never resent elsewhere.
 */
export type GatewayOutcome =
  | Extract<SubmitOutcome, { status: 'accepted' }>
  | { status: 'refused'; commandStatus: number; detail?: string }
  | { status: 'error'; reason: string; ambiguous?: boolean };

/** What submits a message to one route's supplier. */
export interface SupplierGateway {
  submit(
    route: { routeId: string; delivery: Record<string, unknown> | null },
    sms: { to: string; from: string; text: string; reference: string },
  ): Promise<GatewayOutcome>;
  /**
   * Opens (or keeps) the SMPP bind of each route delivering over SMPP, so its SMSC can deliver
   * mobile-originated messages before anything is sent over it.
   */
  keepBound?(routes: readonly { routeId: string; delivery: Record<string, unknown> | null }[]): void;
  stop(): Promise<void>;
}

export interface GatewayOptions {
  /** Supplier SMPP bind settings (`[sms]`). */
  bind?: {
    tps?: number;
    windowSize?: number;
    responseTimeoutMs?: number;
    enquireLinkMs?: number;
    reconnectMinMs?: number;
    reconnectMaxMs?: number;
    queueTimeoutMs?: number;
  };
  /** HTTPS delivery: request budget, extra trusted CAs (a private CA, or a test's own certificate), receipt callback base. */
  http?: { timeoutMs?: number; ca?: string | Buffer; callbackBase?: string };
  /** Checks every supplier address at connect time and pins the connection to the checked answer. */
  guard?: TargetGuard;
}

/** A supplier's refusal codes that are the message's fault: another route would refuse them too. */
const HTTP_MESSAGE_FAULT: Record<string, number> = {
  INVALID_DESTINATION: SMPP_STATUS.ESME_RINVDSTADR,
  INVALID_SENDER: SMPP_STATUS.ESME_RINVSRCADR,
  INVALID_TEXT: SMPP_STATUS.ESME_RINVDCS,
};
/** Errors raised after the request may have reached the supplier. */
const HTTP_AMBIGUOUS = new Set([
  'timeout',
  'response_error',
  'response_too_large',
  'no_supplier_message_id',
  'ECONNRESET',
  'EPIPE',
]);

export function createSupplierGateway(deps: {
  log: Logger;
  clock: Clock;
  options?: GatewayOptions;
  onReceipt(r: SupplierReceipt): void;
  /** A mobile-originated message a route's SMSC delivered; resolves to the SMPP status to answer. */
  onMobileOriginated?(routeId: string, mo: MobileOriginated): Promise<number>;
}): SupplierGateway {
  // `delivery`: the routing cache's object the bind was made from; while that cache holds it, each
  // submit finds its bind by identity instead of serialising the details into a key again.
  const binds = new Map<string, { key: string; delivery: Record<string, unknown>; bind: SupplierBind }>();
  const https = new Map<string, { key: string; sup: HttpSupplier }>();
  const o = deps.options?.bind ?? {};
  const h = deps.options?.http ?? {};
  const guard = deps.options?.guard;

  function bindFor(routeId: string, d: Record<string, unknown>): SupplierBind | string {
    const have = binds.get(routeId);
    if (have?.delivery === d) return have.bind;
    const key = JSON.stringify([d['host'], d['port'], d['systemId'], d['password'], d['systemType'], d['tls']]);
    if (have && have.key === key) {
      have.delivery = d;
      return have.bind;
    }
    if (have)
      void have.bind.stop().catch((err: unknown) => deps.log.warn({ err, routeId }, 'supplier bind stop failed'));
    const systemType = typeof d['systemType'] === 'string' && d['systemType'] ? d['systemType'] : undefined;
    if (
      bindFieldProblems({ systemId: String(d['systemId'] ?? ''), password: String(d['password'] ?? ''), systemType })
        .length > 0
    )
      return 'invalid_bind_fields';
    const bind = createSupplierBind({
      host: String(d['host']),
      port: Number(d['port']),
      tls: d['tls'] === true,
      systemId: String(d['systemId'] ?? ''),
      password: String(d['password'] ?? ''),
      bindType: 'transceiver',
      ...(typeof d['systemType'] === 'string' && d['systemType'] ? { systemType: d['systemType'] } : {}),
      tps: o.tps ?? 100,
      windowSize: o.windowSize ?? 10,
      responseTimeoutMs: o.responseTimeoutMs ?? 10_000,
      ...(o.enquireLinkMs !== undefined ? { enquireLinkMs: o.enquireLinkMs } : {}),
      ...(o.reconnectMinMs !== undefined ? { reconnectMinMs: o.reconnectMinMs } : {}),
      ...(o.reconnectMaxMs !== undefined ? { reconnectMaxMs: o.reconnectMaxMs } : {}),
      ...(o.queueTimeoutMs !== undefined ? { queueTimeoutMs: o.queueTimeoutMs } : {}),
      log: deps.log.child({ routeId }),
      clock: deps.clock,
      onReceipt: deps.onReceipt,
      ...(deps.onMobileOriginated
        ? { onMobileOriginated: (mo: MobileOriginated) => deps.onMobileOriginated!(routeId, mo) }
        : {}),
      ...(guard ? { guard } : {}),
    });
    bind.start();
    binds.set(routeId, { key, delivery: d, bind });
    return bind;
  }

  function httpFor(routeId: string, d: Record<string, unknown>): HttpSupplier | string {
    const url = typeof d['url'] === 'string' ? d['url'] : '';
    const secret = typeof d['signingSecret'] === 'string' ? d['signingSecret'] : '';
    if (!secret) return 'no_signing_secret';
    const authorization = typeof d['authorization'] === 'string' && d['authorization'] ? d['authorization'] : undefined;
    const key = JSON.stringify([url, secret, authorization]);
    const have = https.get(routeId);
    if (have && have.key === key) return have.sup;
    let sup: HttpSupplier;
    try {
      sup = createHttpSupplier({
        url,
        secret,
        callbackUrl: `${(h.callbackBase ?? '').replace(/\/+$/, '')}/sms/receipts/${routeId}`,
        ...(authorization ? { authorization } : {}),
        ...(h.timeoutMs !== undefined ? { timeoutMs: h.timeoutMs } : {}),
        ...(h.ca ? { tls: { ca: h.ca } } : {}),
        ...(guard ? { guard } : {}),
        log: deps.log.child({ routeId }),
        clock: deps.clock,
      });
    } catch {
      return 'invalid_url';
    }
    https.set(routeId, { key, sup });
    return sup;
  }

  return {
    async submit(route, sms) {
      const d = route.delivery;
      if (d?.['kind'] === 'smpp') {
        const bind = bindFor(route.routeId, d);
        if (typeof bind === 'string') return { status: 'error', reason: bind };
        return bind.submit({
          to: sms.to,
          from: sms.from,
          text: sms.text,
          reference: sms.reference,
          registeredDelivery: true,
        });
      }
      if (d?.['kind'] !== 'http')
        return { status: 'error', reason: d ? `unsupported_delivery_${String(d['kind'])}` : 'no_delivery' };
      const sup = httpFor(route.routeId, d);
      if (typeof sup === 'string') return { status: 'error', reason: sup };
      const r = await sup.submit({
        messageId: sms.reference,
        to: sms.to,
        from: sms.from,
        text: sms.text,
        registeredDelivery: true,
      });
      if (r.status === 'accepted')
        return {
          status: 'accepted',
          supplierMessageId: r.supplierMessageId,
          supplierMessageIds: [r.supplierMessageId],
          parts: 1,
        };
      if (r.status === 'refused') {
        return {
          status: 'refused',
          commandStatus: (r.code !== null ? HTTP_MESSAGE_FAULT[r.code] : undefined) ?? SMPP_STATUS.ESME_RSUBMITFAIL,
          detail: `http ${r.httpStatus}${r.code !== null ? ` ${r.code.slice(0, 64)}` : ''}`,
        };
      }
      return {
        status: 'error',
        reason: `http_${r.reason}`.replace(/^http_http_/, 'http_'),
        ambiguous: HTTP_AMBIGUOUS.has(r.reason),
      };
    },
    keepBound(routes) {
      for (const r of routes) {
        if (r.delivery?.['kind'] !== 'smpp') continue;
        const bind = bindFor(r.routeId, r.delivery);
        if (typeof bind === 'string') deps.log.warn({ routeId: r.routeId, reason: bind }, 'supplier bind not opened');
      }
    },
    async stop() {
      const all = [...binds.values()];
      binds.clear();
      https.clear();
      await Promise.all(all.map((b) => b.bind.stop()));
    },
  };
}
