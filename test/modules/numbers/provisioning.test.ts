import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import t from 'tap';
import { createTelnyxProvider } from '../../../src/modules/numbers/telnyx-provisioning.js';
import { createTargetGuard } from '../../../src/platform/outbound-guard.js';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { receiverTls } from '../../webhooks/receiver.js';
import { account, api } from './world.js';

const KEY = 'KEY0123456789TELNYX';

interface Seen {
  method: string;
  path: string;
  body: Record<string, unknown> | null;
}

/**
 * A provider speaking Telnyx API v2 (the paths, bodies and answers of its phone number voice
 * settings, addresses and enable_emergency action); `script` lets a test make it refuse or fail.
 */
async function fakeTelnyx(t: Parameters<typeof startTestDaemon>[0]) {
  const tls = await receiverTls();
  const seen: Seen[] = [];
  const numbers = new Map<string, string>([['+12025550143', '1293384261075731499']]);
  const voice = new Map<string, { cnam: Record<string, unknown>; emergency: Record<string, unknown> }>();
  const script: { next: { status: number; body: unknown }[]; emergencyStatus: string[] } = {
    next: [],
    emergencyStatus: [],
  };
  let addresses = 0;
  const read = (req: IncomingMessage) =>
    new Promise<Record<string, unknown> | null>((resolve) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve(chunks.length ? (JSON.parse(Buffer.concat(chunks).toString()) as never) : null));
    });
  const server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    void read(req).then((body) => {
      const url = new URL(req.url!, 'https://x');
      seen.push({ method: req.method!, path: url.pathname + url.search, body });
      const send = (status: number, b: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(b));
      };
      if (req.headers.authorization !== `Bearer ${KEY}`)
        return send(401, { errors: [{ code: '10009', title: 'Authentication failed' }] });
      const scripted = script.next.shift();
      if (scripted) return send(scripted.status, scripted.body);
      const settingsOf = (id: string) => {
        if (!voice.has(id))
          voice.set(id, {
            cnam: { cnam_listing_enabled: false },
            emergency: { emergency_enabled: false, emergency_status: 'disabled' },
          });
        return voice.get(id)!;
      };
      const answer = (id: string) => {
        const v = settingsOf(id);
        return { data: { id, record_type: 'voice_settings', cnam_listing: v.cnam, emergency: v.emergency } };
      };
      let m: RegExpExecArray | null;
      if (req.method === 'GET' && url.pathname === '/v2/phone_numbers') {
        const id = numbers.get(url.searchParams.get('filter[phone_number]') ?? '');
        return send(200, {
          data: id ? [{ id, phone_number: url.searchParams.get('filter[phone_number]') }] : [],
          meta: {},
        });
      }
      if ((m = /^\/v2\/phone_numbers\/(\d+)\/voice$/.exec(url.pathname))) {
        if (req.method === 'GET') {
          const v = settingsOf(m[1]!);
          const st = script.emergencyStatus.shift();
          if (st) v.emergency = { ...v.emergency, emergency_status: st };
          return send(200, answer(m[1]!));
        }
        if (req.method === 'PATCH') {
          settingsOf(m[1]!).cnam = body!['cnam_listing'] as Record<string, unknown>;
          return send(200, answer(m[1]!));
        }
      }
      if (req.method === 'POST' && url.pathname === '/v2/addresses') {
        if (!body?.['street_address'] || !body['locality'] || !body['country_code'])
          return send(422, {
            errors: [{ code: '10015', title: 'Invalid address', detail: 'street_address is required' }],
          });
        addresses++;
        return send(200, { data: { id: `addr-${addresses}`, record_type: 'address', ...body } });
      }
      if (req.method === 'POST' && (m = /^\/v2\/phone_numbers\/(\d+)\/actions\/enable_emergency$/.exec(url.pathname))) {
        const v = settingsOf(m[1]!);
        const on = body!['emergency_enabled'] === true;
        v.emergency = {
          emergency_enabled: on,
          emergency_address_id: on ? body!['emergency_address_id'] : null,
          emergency_status: script.emergencyStatus.shift() ?? (on ? 'active' : 'disabled'),
        };
        return send(200, answer(m[1]!));
      }
      return send(404, { errors: [{ code: '10005', title: 'Resource not found' }] });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as AddressInfo).port;
  return { port, url: `https://127.0.0.1:${port}/v2`, cert: tls.cert, seen, script, voice, addresses: () => addresses };
}

/** A ported US number of a fresh account, as the port-in flow makes it (catalogue country US). */
async function portedUsNumber(d: TestDaemon, email: string, number: string) {
  await d.sql`insert into did_countries (id, name, country_code, prefix) values ('1-us', 'United States', 'US', '1')
              on conflict do nothing`;
  const owner = await account(d, email);
  const op = await account(d, `op-${email}`, { operator: true });
  const o = await api(d, 'POST', '/dids/port-ins', owner.key, {
    numbers: [number],
    losingCarrier: 'Old Telco',
    carrierAccountNumber: 'A-1',
    authorizedName: 'Ada Lovelace',
    desiredDate: '2026-12-20',
  });
  const id = o.json.data.id as string;
  await api(d, 'POST', `/dids/port-ins/${id}/approve`, op.key, {});
  const done = await api(d, 'POST', `/dids/port-ins/${id}/complete`, op.key, {});
  if (done.status !== 200) throw new Error(JSON.stringify(done.json));
  const mine = await api(d, 'GET', '/dids/mine', owner.key);
  return { owner, didId: mine.json.data[0].id as string };
}

const ADDRESS = {
  name: 'Analytical Engines Inc',
  street: '600 Congress Avenue',
  street2: '14th Floor',
  city: 'Austin',
  region: 'TX',
  postalCode: '78701',
  countryCode: 'US',
};

t.test('no provider configured: not_provisioned with the reason, nothing faked', async (t) => {
  const d = await startTestDaemon(t);
  const { owner, didId } = await portedUsNumber(d, 'noprov@example.com', '12025550143');
  const set = await api(d, 'PUT', `/dids/${didId}/caller-name`, owner.key, { callerName: 'ADA LOVELACE' });
  t.equal(set.status, 200, JSON.stringify(set.json));
  const p = await api(d, 'GET', `/dids/${didId}/provisioning`, owner.key);
  t.match(p.json.data, {
    callerName: { status: 'not_provisioned', error: /No provisioning provider is configured/ },
    emergency: null,
  });
  t.same(await d.modules.services.numbers.provisioning.run(), { provisioned: 0, failed: 0, retried: 0 });
  const [ev] = await d.sql<{ data: { status: string } }[]>`
    select data from events where event = 'number.provisioning.updated' and account_id = ${owner.id}`;
  t.equal(ev?.data.status, 'not_provisioned', 'the state is announced');
  await d.modules.services.notifications.pump();
  const feed = await api(d, 'GET', '/notifications', owner.key);
  t.match(
    (feed.json.data as { kind: string }[]).filter((n) => n.kind === 'number.provisioning.updated'),
    [
      {
        title: 'Number caller name not provisioned',
        body: /^The caller name of \+12025550143 is now not provisioned at the provider: No provisioning provider/,
      },
    ],
    'in the in-app feed (migration 301)',
  );
});

t.test('a Telnyx v2 provider over HTTPS: CNAM, emergency address, retries, refusals, events', async (t) => {
  const fake = await fakeTelnyx(t);
  const dir = mkdtempSync(join(tmpdir(), 'svc-provisioning-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'ca.pem'), fake.cert);
  const d = await startTestDaemon(t, {
    numbers: {
      provisioning_url: fake.url,
      provisioning_api_key: KEY,
      provisioning_ca_file: join(dir, 'ca.pem'),
      provisioning_interval_seconds: 3600,
    },
  });
  const prov = d.modules.services.numbers.provisioning;
  const { owner, didId } = await portedUsNumber(d, 'prov@example.com', '12025550143');
  const state = async () => (await api(d, 'GET', `/dids/${didId}/provisioning`, owner.key)).json.data;
  const due = async () =>
    d.sql`update did_provisioning set next_attempt_at = now() - interval '1 second' where status = 'pending'`;

  await t.test('caller name: pending, then listed in the number voice settings', async (t) => {
    t.equal((await api(d, 'PUT', `/dids/${didId}/caller-name`, owner.key, { callerName: 'ADA LOVELACE' })).status, 200);
    t.match((await state()).callerName, { status: 'pending', error: null });
    t.same(await prov.run(), { provisioned: 1, failed: 0, retried: 0 });
    t.match((await state()).callerName, { status: 'provisioned', attempts: 1 });
    t.same(fake.voice.get('1293384261075731499')?.cnam, {
      cnam_listing_enabled: true,
      cnam_listing_details: 'ADA LOVELACE',
    });
    const patch = fake.seen.find((s) => s.method === 'PATCH');
    t.equal(patch?.path, '/v2/phone_numbers/1293384261075731499/voice');
    t.equal(fake.seen[0]?.path, '/v2/phone_numbers?filter[phone_number]=%2B12025550143&page[size]=1');
    const features = await api(d, 'GET', `/dids/${didId}/features`, owner.key);
    t.match(features.json.data.callerName, {
      supported: true,
      value: 'ADA LOVELACE',
      provisioning: { status: 'provisioned' },
    });
    // The change is in the owner's in-app feed (migration 301), read as the feed's users read it.
    await d.modules.services.notifications.pump();
    const feed = await api(d, 'GET', '/notifications', owner.key);
    const listed = (feed.json.data as { kind: string; title: string; body: string; data: { status: string } }[]).find(
      (n) => n.kind === 'number.provisioning.updated' && n.data.status === 'provisioned',
    );
    t.match(listed, {
      title: 'Number caller name provisioned',
      body: 'The caller name of +12025550143 is now provisioned at the provider.',
    });
  });

  await t.test('a 503 is retried by the job; the provider error is kept meanwhile', async (t) => {
    fake.script.next.push({ status: 503, body: { errors: [{ code: '90001', title: 'Service unavailable' }] } });
    await api(d, 'PUT', `/dids/${didId}/caller-name`, owner.key, { callerName: 'ENGINES' });
    t.same(await prov.run(), { provisioned: 0, failed: 0, retried: 1 });
    const s = (await state()).callerName;
    t.match(s, { status: 'pending', error: 'HTTP 503 90001: Service unavailable', attempts: 1 });
    t.ok(new Date(s.nextAttemptAt as string).getTime() > Date.now(), 'backed off');
    t.same(await prov.run(), { provisioned: 0, failed: 0, retried: 0 }, 'not due yet');
    await due();
    t.same(await prov.run(), { provisioned: 1, failed: 0, retried: 0 });
    t.same(fake.voice.get('1293384261075731499')?.cnam, {
      cnam_listing_enabled: true,
      cnam_listing_details: 'ENGINES',
    });
  });

  await t.test('emergency address: registered, enabled, provisioning polled until active', async (t) => {
    fake.script.emergencyStatus.push('provisioning', 'active');
    t.equal((await api(d, 'PUT', `/dids/${didId}/emergency-address`, owner.key, ADDRESS)).status, 200);
    t.same(await prov.run(), { provisioned: 0, failed: 0, retried: 1 }, 'the provider is still provisioning');
    t.match((await state()).emergency, { status: 'pending', error: null });
    const made = fake.seen.find((s) => s.path === '/v2/addresses');
    t.match(made?.body, {
      business_name: 'Analytical Engines Inc',
      street_address: '600 Congress Avenue',
      extended_address: '14th Floor',
      locality: 'Austin',
      administrative_area: 'TX',
      postal_code: '78701',
      country_code: 'US',
    });
    const enable = fake.seen.find((s) => s.path.endsWith('/actions/enable_emergency'));
    t.same(enable?.body, { emergency_enabled: true, emergency_address_id: 'addr-1' });
    await due();
    t.same(await prov.run(), { provisioned: 1, failed: 0, retried: 0 });
    t.equal(fake.seen.at(-1)?.method, 'GET', 'the second attempt read the status instead of enabling again');
    t.match((await state()).emergency, { status: 'provisioned' });
    t.equal(fake.addresses(), 1);
  });

  await t.test("a refusal is failed with the provider's error; a new setting is sent again", async (t) => {
    fake.script.next.push({
      status: 422,
      body: { errors: [{ code: '10015', title: 'Invalid address', detail: 'The address could not be validated' }] },
    });
    await api(d, 'PUT', `/dids/${didId}/emergency-address`, owner.key, { ...ADDRESS, street: '1 Nowhere Road' });
    t.same(await prov.run(), { provisioned: 0, failed: 1, retried: 0 });
    t.match((await state()).emergency, {
      status: 'failed',
      error: 'HTTP 422 10015: Invalid address: The address could not be validated',
    });
    const events = await d.sql<{ data: { kind: string; status: string } }[]>`
      select data from events where event = 'number.provisioning.updated' and account_id = ${owner.id} order by created_at, id`;
    t.ok(
      events.some((e) => e.data.kind === 'emergency' && e.data.status === 'failed'),
      'the failure is announced',
    );
    await api(d, 'PUT', `/dids/${didId}/emergency-address`, owner.key, ADDRESS);
    t.same(await prov.run(), { provisioned: 1, failed: 0, retried: 0 });
    t.equal(fake.addresses(), 1, 'the address registered before is reused, not made again');
  });

  await t.test('release takes the listing and the emergency address off at the provider', async (t) => {
    t.equal((await api(d, 'POST', `/dids/${didId}/release`, owner.key, {})).status, 200);
    t.same(await prov.run(), { provisioned: 2, failed: 0, retried: 0 });
    t.same(fake.voice.get('1293384261075731499')?.cnam, { cnam_listing_enabled: false });
    t.match(fake.voice.get('1293384261075731499')?.emergency, {
      emergency_enabled: false,
      emergency_status: 'disabled',
    });
  });
});

t.test(
  'the provider URL passes the outbound guard: a loopback provider is refused before any connection',
  async (t) => {
    const fake = await fakeTelnyx(t);
    const provider = createTelnyxProvider({
      url: fake.url,
      apiKey: KEY,
      guard: createTargetGuard(),
      ca: Buffer.from(fake.cert),
      timeoutMs: 5000,
      log: pino({ level: 'silent' }),
    });
    const r = await provider.callerName('12025550143', 'ADA', {});
    t.same(r, { status: 'retry', ref: {}, error: 'provider address refused by the outbound guard' });
    t.equal(fake.seen.length, 0, 'nothing reached the provider');
    const named = createTelnyxProvider({
      url: `https://localhost:${fake.port}/v2`,
      apiKey: KEY,
      guard: createTargetGuard(),
      ca: Buffer.from(fake.cert),
      timeoutMs: 5000,
      log: pino({ level: 'silent' }),
    });
    t.match(await named.callerName('12025550143', 'ADA', {}), { status: 'retry' }, 'a name resolving to loopback too');
    t.equal(fake.seen.length, 0);
  },
);
