import { Type, type Static } from 'typebox';
import type { App } from '../../http/app.js';
import { Ok, ok } from '../../http/envelope.js';
import { validationError, type ErrorDetail } from '../../http/errors.js';
import { bindFieldProblems } from '../../messaging/index.js';
import type { TargetGuard } from '../../platform/outbound-guard.js';
import {
  guardedCheckBind,
  httpsUrlCheck,
  refuseUrlTarget,
  SmsDeliveryTest,
  type SmsDeliveryTestResult,
} from '../sms/delivery-test.js';
import type { SwitchSubscriptions } from './subscriptions.js';

// The spec's limit: a bind check opens a connection to a third party, so it is kept rare.
const TEST_SMS_PER_MINUTE = 20;
const BIND_CHECK_TIMEOUT_MS = 10_000;
const EMAIL = /^[^\s@]+@[^\s@]+$/;

const UnsavedDelivery = Type.Object(
  {
    smsDeliveryMethod: Type.Union([Type.Literal('http'), Type.Literal('smpp')]),
    smsDeliveryUrl: Type.Optional(
      Type.String({ maxLength: 500, description: 'http: the https URL messages would be posted to' }),
    ),
    smppHost: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    smppPort: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: 'default 2775' })),
    smppSystemId: Type.Optional(
      Type.String({ minLength: 1, maxLength: 16, description: 'an e-mail address is refused' }),
    ),
    smppPassword: Type.Optional(
      Type.String({ maxLength: 64, description: 'used for this one handshake; never stored or logged' }),
    ),
    smppBindType: Type.Optional(
      Type.Union([Type.Literal('transceiver'), Type.Literal('transmitter')], { description: 'default transceiver' }),
    ),
    smppSystemType: Type.Optional(Type.String({ maxLength: 13 })),
    smppTps: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1000, description: 'checked for range only: a bind check sends nothing' }),
    ),
  },
  { additionalProperties: false },
);
type UnsavedDelivery = Static<typeof UnsavedDelivery>;

/** The fields a method needs, each missing one a VALIDATION_ERROR detail. */
function missingFields(b: UnsavedDelivery): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  const need = (field: 'smsDeliveryUrl' | 'smppHost' | 'smppSystemId' | 'smppPassword') => {
    if (b[field] === undefined)
      details.push({ path: field, message: `required when smsDeliveryMethod is ${b.smsDeliveryMethod}` });
  };
  if (b.smsDeliveryMethod === 'http') need('smsDeliveryUrl');
  else {
    need('smppHost');
    need('smppSystemId');
    need('smppPassword');
    if (b.smppSystemId !== undefined && EMAIL.test(b.smppSystemId)) {
      details.push({ path: 'smppSystemId', message: 'must be the SMSC system id, not an e-mail address' });
    }
    const fields = { systemId: 'smppSystemId', password: 'smppPassword', systemType: 'smppSystemType' } as const;
    for (const f of bindFieldProblems({
      systemId: b.smppSystemId ?? '',
      password: b.smppPassword ?? '',
      systemType: b.smppSystemType,
    })) {
      details.push({ path: fields[f], message: 'must not hold control characters' });
    }
  }
  return details;
}

async function testUnsaved(b: UnsavedDelivery, guard: TargetGuard): Promise<SmsDeliveryTestResult> {
  if (b.smsDeliveryMethod === 'http') {
    await refuseUrlTarget(guard, b.smsDeliveryUrl, 'smsDeliveryUrl');
    const check = httpsUrlCheck(b.smsDeliveryUrl);
    return {
      pass: check.ok,
      via: 'http',
      checks: [check],
      message: check.ok
        ? 'Well-formed https URL (nothing was sent)'
        : 'The delivery URL is not a well-formed https URL',
    };
  }
  const r = await guardedCheckBind(
    guard,
    {
      host: b.smppHost!,
      port: b.smppPort ?? 2775,
      tls: false,
      systemId: b.smppSystemId!,
      password: b.smppPassword!,
      bindType: b.smppBindType ?? 'transceiver',
      ...(b.smppSystemType ? { systemType: b.smppSystemType } : {}),
      timeoutMs: BIND_CHECK_TIMEOUT_MS,
    },
    'smppHost',
  );
  return { pass: r.pass, via: 'smpp', checks: r.checks, message: r.message };
}

export function switchRoutes(subscriptions: SwitchSubscriptions, guard: TargetGuard) {
  return (app: App) => {
    app.post(
      '/switch/suppliers/test-sms',
      {
        config: {
          access: { auth: 'required', scope: 'switch:manage', testKeys: 'allow' },
          rateLimit: { points: TEST_SMS_PER_MINUTE, seconds: 60 },
        },
        schema: {
          tags: ['Switch'],
          summary: 'Check SMS delivery details before saving them',
          description:
            'Needs an active Switch plan or trial (else 402 `SWITCH_SUBSCRIPTION_REQUIRED`). Nothing is stored and no message ' +
            'is sent. `smpp` opens one real bind (`smppBindType`, default transceiver; plain TCP, port default 2775) with the ' +
            'given system id and password, then unbinds: the checks are `connect`, `bind` and `unbind`, each with what the ' +
            'SMSC answered, within 10 s in all. `http` is checked only for a well-formed https URL (a request would be a ' +
            `message): one check, \`url\`, showing the URL's origin. ` +
            'A host that is or resolves to a loopback, private, link-local or metadata address, or the exchange itself, is ' +
            'refused with 400 `VALIDATION_ERROR` before any connection (networks the operator allows excepted). ' +
            `Test keys may use it: it changes nothing. ${TEST_SMS_PER_MINUTE} per minute per credential.`,
          body: UnsavedDelivery,
          response: { 200: Ok(SmsDeliveryTest) },
        },
      },
      async (req) => {
        const missing = missingFields(req.body);
        if (missing.length) throw validationError(missing);
        await subscriptions.require(req.principal!);
        return ok(await testUnsaved(req.body, guard));
      },
    );
  };
}
