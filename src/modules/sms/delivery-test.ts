import { Type } from 'typebox';
import { checkBind } from '../../messaging/index.js';

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
export async function testSmsDelivery(d: Record<string, unknown>, opts: { timeoutMs?: number } = {}): Promise<SmsDeliveryTestResult> {
  if (d['kind'] === 'smpp') {
    const r = await checkBind({
      host: String(d['host']), port: Number(d['port']), tls: d['tls'] === true,
      systemId: String(d['systemId'] ?? ''), password: String(d['password'] ?? ''), bindType: 'transceiver',
      ...(typeof d['systemType'] === 'string' && d['systemType'] ? { systemType: d['systemType'] } : {}),
      timeoutMs: opts.timeoutMs ?? 10_000,
    });
    return { pass: r.pass, via: 'smpp', checks: r.checks, message: r.message };
  }
  const secret = typeof d['signingSecret'] === 'string' && d['signingSecret'] !== '';
  const checks = [httpsUrlCheck(d['url']), { label: 'signingSecret', value: secret ? 'set' : 'missing', ok: secret }];
  const pass = checks.every((c) => c.ok);
  return {
    pass, via: 'http', checks,
    message: pass ? 'Well-formed https URL and a signing secret (nothing was sent)' : 'The HTTPS delivery details are incomplete',
  };
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
