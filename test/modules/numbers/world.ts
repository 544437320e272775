import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { receiverTls, startReceiver } from '../../webhooks/receiver.js';

/** A daemon whose webhook deliveries trust a local HTTPS receiver (deliveries run when the test says). */
export async function daemonWithReceiver(t: Parameters<typeof startTestDaemon>[0]) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-numbers-hooks-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, (await receiverTls()).cert);
  const receiver = await startReceiver(t, { now: () => Date.now() });
  const d = await startTestDaemon(t, { webhooks: { ca_file: caFile, poll_interval_ms: 60_000 } });
  return { d, receiver };
}

/** An account with a live full-access key; `operator` makes the platform operator (admin). */
export async function account(d: TestDaemon, email: string, opts: { operator?: boolean } = {}) {
  const a = await d.modules.services.accounts.createAccount({
    email,
    password: 'correct horse battery',
    ...(opts.operator ? { role: 'admin' as const } : {}),
  });
  return { id: a.id, key: (await d.modules.services.keys.create(a.id, { mode: 'live' })).secret };
}

/** A real HTTPS request with a key; the JSON answer and status. */
export async function api(
  d: TestDaemon,
  method: string,
  path: string,
  key: string | null,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const res = await d.https(method, path, {
    ...(key ? { token: key } : {}),
    ...(body === undefined ? {} : { body }),
    headers,
  });
  return { status: res.status, json: res.json, headers: res.headers };
}

/** Inventory rows as the API takes them: `count` numbers after `prefix` in one group. */
export function numbers(
  count: number,
  o: {
    countryCode?: string;
    country?: string;
    countryPrefix?: string;
    areaPrefix?: string | null;
    city?: string | null;
    typeId?: string;
    first?: number;
    channels?: number;
    setupPrice?: string;
    monthlyPrice?: string;
  } = {},
) {
  const cp = o.countryPrefix ?? '44';
  const area = o.areaPrefix === undefined ? '20' : o.areaPrefix;
  return Array.from({ length: count }, (_, i) => ({
    number: `${cp}${area ?? ''}${String((o.first ?? 2837461) + i).padStart(7, '0')}`,
    countryCode: o.countryCode ?? 'GB',
    country: o.country ?? 'United Kingdom',
    countryPrefix: cp,
    typeId: o.typeId ?? 'local',
    city: o.city === undefined ? 'London' : o.city,
    areaPrefix: area,
    channels: o.channels ?? 2,
    setupPrice: o.setupPrice ?? '1.500000',
    monthlyPrice: o.monthlyPrice ?? '2.250000',
  }));
}

type Checks = { equal(a: unknown, b: unknown, message: string): unknown };

/** A seller's SMS route delivering over HTTPS: its signing secret is the one its inbound callbacks carry. */
export async function httpsSmsRoute(t: Checks, d: TestDaemon, key: string, secret: string): Promise<string> {
  const r = await api(d, 'POST', '/routes', key, {
    type: 'sms',
    name: 'HTTPS callbacks',
    smsDelivery: { kind: 'http', url: 'https://127.0.0.1:9/sms', signingSecret: secret },
  });
  t.equal(r.status, 201, JSON.stringify(r.json));
  return r.json.data.id as string;
}

/** `ownerId` subscribes the test's receiver to `number.sms.received`; the receiver checks with its secret. */
export async function smsWebhook(
  t: Checks,
  d: TestDaemon,
  receiver: { url(): string; secret: string },
  ownerId: string,
): Promise<void> {
  const hooks = (await d.modules.services.keys.create(ownerId, { mode: 'live', scopes: ['webhooks:write'] })).secret;
  const hook = await api(d, 'POST', '/account/webhooks', hooks, {
    url: receiver.url(),
    events: ['number.sms.received'],
  });
  t.equal(hook.status, 201, JSON.stringify(hook.json));
  receiver.secret = hook.json.data.secret;
}
