import { loadServerSecret } from '../../db/server-secret.js';
import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import type { ApiCallsService } from '../api-calls/service.js';
import type { SmsService } from '../sms/service.js';
import { verifyRoutes } from './routes.js';
import { createVerifyService } from './service.js';

const PRUNE_MS = 10 * 60_000;

/** Verify: one-time codes over the SMS module's send path or the API calls module's voice one-time code. */
export async function buildVerifyModule(core: CoreDeps, deps: { sms: SmsService; calls: ApiCallsService }) {
  const c = core.config.verify;
  // The codes' HMAC key: the setting, else one generated once and shared by every daemon of the database.
  const codeSecret = c.code_secret || (await loadServerSecret(core.sql, 'verify-code'));
  const service = createVerifyService({
    sql: core.sql,
    clock: core.clock,
    log: core.log.child({ module: 'verify' }),
    sms: deps.sms,
    calls: deps.calls,
    smsSender: c.sms_sender,
    codeSecret,
    limits: { perNumberPerHour: c.codes_per_number_per_hour, spacingSeconds: c.code_spacing_seconds },
  });
  const log = core.log.child({ module: 'verify' });
  let timer: NodeJS.Timeout | undefined;
  const module: Module = {
    name: 'verify',
    routes: verifyRoutes(service),
    start() {
      timer = setInterval(
        () => void service.pruneSends().catch((err: unknown) => log.warn({ err }, 'verify send slots not pruned')),
        PRUNE_MS,
      );
      timer.unref();
    },
    stop() {
      clearInterval(timer);
    },
  };
  return { module, service };
}
