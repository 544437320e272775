import type { Ledger } from '../../ledger/index.js';
import type { SmppServer } from '../../messaging/index.js';
import type { CoreDeps } from '../../platform/core.js';
import type { ApplicationService } from '../application/service.js';
import type { Module } from '../index.js';
import type { Routing } from '../routes/routing.js';
import { smppCredentialRoutes } from './smpp-routes.js';
import { smsRoutes } from './routes.js';
import { createSmsService, type SmsOptions, type SupplierGateway } from './service.js';
import { createCustomerSmpp, createSmppCredentials } from './smpp-in.js';

const SWEEP_MS = 60_000;

/**
 * SMS (issue 5): POST/GET /comms/sms and bulk, receipts from supplier SMPP binds kept per route,
 * a sweep that expires overdue receipts, and the customer SMPP server on `[smpp]` (plain port;
 * the TLS port needs `smppTls`, key and certificate, from the daemon).
 */
export function buildSmsModule(
  core: CoreDeps,
  deps: {
    ledger: Ledger; routing: Routing; application: ApplicationService; options?: SmsOptions; gateway?: SupplierGateway;
    smppTls?: { key: string | Buffer; cert: string | Buffer } | null;
  },
) {
  const log = core.log.child({ module: 'sms' });
  const { smppTls, ...rest } = deps;
  const service = createSmsService({ sql: core.sql, clock: core.clock, log, ...rest });
  const smppCredentials = createSmppCredentials(core);
  let timer: NodeJS.Timeout | undefined;
  let smpp: SmppServer | null = null;
  const bound: Record<string, number> = {};
  const module: Module = {
    name: 'sms',
    routes: (app) => {
      smsRoutes(service)(app);
      smppCredentialRoutes(smppCredentials, deps.application)(app);
    },
    async start() {
      timer = setInterval(() => void service.sweepExpired().catch((err: unknown) => log.warn({ err }, 'sms expiry sweep failed')), SWEEP_MS);
      timer.unref();
      smpp = createCustomerSmpp({
        sql: core.sql, clock: core.clock, log, sms: service, credentials: smppCredentials,
        host: core.config.smpp.host, port: core.config.smpp.port, tlsPort: core.config.smpp.tls_port, tls: smppTls ?? null,
      });
      const p = await smpp.start();
      if (p.port !== null) bound['smpp'] = p.port;
      if (p.tlsPort !== null) bound['smpp_tls'] = p.tlsPort;
    },
    async stop() {
      clearInterval(timer);
      await smpp?.stop();
      smpp = null;
      service.setReceiptSink(null);
      await service.stop();
    },
    ports: () => ({ ...bound }),
  };
  return { module, service, smppCredentials };
}
