import { Type } from 'typebox';
import { validationError } from '../../http/errors.js';
import { checkBind, type CheckBindDetails } from '../../messaging/index.js';
import { REFUSED_MESSAGE, TargetRefusedError, type TargetGuard } from '../../platform/outbound-guard.js';

/** The answer of `POST /routes/{id}/test` on an SMS route (spec "Switch", supplier test-sms). */
export const SmsDeliveryTest = Type.Object({
  pass: Type.Boolean(),
  via: Type.Union([Type.Literal('http'), Type.Literal('smpp')]),
  checks: Type.Array(Type.Object({ label: Type.String(), value: Type.String(), ok: Type.Boolean() })),
  message: Type.String(),
});

export interface SmsDeliveryTestResult {
  pass: boolean;
  via: 'http' | 'smpp';
  checks: { label: string; value: string; ok: boolean }[];
  message: string;
}

/**
 * Checks a route's stored SMS delivery without sending anything: SMPP opens one real bind with
 * the stored credentials and unbinds; HTTPS is checked only for a well-formed https URL (a request
 * would be a message).
 */
export async function testSmsDelivery(
  d: Record<string, unknown>,
  opts: { guard: TargetGuard; timeoutMs?: number },
): Promise<SmsDeliveryTestResult> {
  if (d['kind'] === 'smpp') {
    const r = await guardedCheckBind(
      opts.guard,
      {
        host: String(d['host']),
        port: Number(d['port']),
        tls: d['tls'] === true,
        systemId: String(d['systemId'] ?? ''),
        password: String(d['password'] ?? ''),
        bindType: 'transceiver',
        ...(typeof d['systemType'] === 'string' && d['systemType'] ? { systemType: d['systemType'] } : {}),
        timeoutMs: opts.timeoutMs ?? 10_000,
      },
      '/smsDelivery/host',
    );
    return { pass: r.pass, via: 'smpp', checks: r.checks, message: r.message };
  }
  await refuseUrlTarget(opts.guard, d['url'], '/smsDelivery/url');
  const secret = typeof d['signingSecret'] === 'string' && d['signingSecret'] !== '';
  const checks = [httpsUrlCheck(d['url']), { label: 'signingSecret', value: secret ? 'set' : 'missing', ok: secret }];
  const pass = checks.every((c) => c.ok);
  return {
    pass,
    via: 'http',
    checks,
    message: pass
      ? 'Well-formed https URL and a signing secret (nothing was sent)'
      : 'The HTTPS delivery details are incomplete',
  };
}

/** The refusal of a target the guard refuses: before any connection, the same answer whatever is (or is not) listening there. */
const refusedTarget = (path: string) =>
  validationError([{ path, message: REFUSED_MESSAGE }], 'The delivery address is not allowed');

/**
 * A bind check through the outbound guard: the SMSC's host is resolved and checked first, and
 * the check connects to that checked address. A host that does not resolve fails at `connect`.
 */
export async function guardedCheckBind(guard: TargetGuard, details: CheckBindDetails, path: string) {
  let address: string;
  try {
    address = (await guard.resolve(details.host, details.port)).address;
  } catch (err) {
    if (err instanceof TargetRefusedError) throw refusedTarget(path);
    const code = (err as NodeJS.ErrnoException).code ?? 'lookup failed';
    return {
      pass: false,
      checks: [{ label: 'connect' as const, value: code, ok: false }],
      message: 'could not connect',
    };
  }
  return checkBind({ ...details, address });
}

/**
 * An HTTPS delivery URL whose host is (or resolves to) a refused address is refused. Nothing is
 * requested, so a name that does not resolve now is left to the delivery itself.
 */
export async function refuseUrlTarget(guard: TargetGuard, url: unknown, path: string): Promise<void> {
  let u: URL;
  try {
    u = new URL(String(url ?? ''));
  } catch {
    return;
  }
  try {
    await guard.resolve(u.hostname, u.port ? Number(u.port) : 443);
  } catch (err) {
    if (err instanceof TargetRefusedError) throw refusedTarget(path);
  }
}

/** A delivery URL must be a well-formed https URL; the check shows only its origin (a path may hold a token). */
export function httpsUrlCheck(url: unknown): { label: 'url'; value: string; ok: boolean } {
  try {
    const u = new URL(String(url ?? ''));
    const ok = u.protocol === 'https:' && u.hostname !== '';
    return { label: 'url', value: ok ? `https://${u.host}` : `${u.protocol} URL`, ok };
  } catch {
    return { label: 'url', value: 'not a URL', ok: false };
  }
}
