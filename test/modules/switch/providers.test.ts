import t from 'tap';
import { bearer, buildTestApp } from '../../helpers/app.js';

/**
 * Switch providers and supplier trunks over app.inject on a real database: the plan gate and test
 * keys, providers (409, PATCH with STALE_WRITE, status moves, audit), trunks (sealed passwords
 * redacted everywhere but /credentials, guard on hosts, config history), endpoints (adoption, last
 * one kept), readiness and TRUNK_NOT_READY, disputes and the cost deck.
 */
t.test('Switch providers and supplier trunks', async (t) => {
  const h = await buildTestApp(t);
  const op = await h.signUp();
  const other = await h.signUp();
  const call = async (method: string, url: string, payload?: unknown, token = op.session) => {
    const r = await h.app.inject({
      method: method as 'GET',
      url: `/api/v1${url}`,
      headers: bearer(token),
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: r.statusCode, body: r.json(), text: r.body };
  };

  await t.test('without a Switch plan every operation answers 402', async (t) => {
    const list = await call('GET', '/switch/providers');
    t.equal(list.status, 402);
    t.equal(list.body.error.code, 'SWITCH_SUBSCRIPTION_REQUIRED');
    t.equal((await call('POST', '/switch/providers', { name: 'Acme' })).status, 402);
    const [n] = await h.sql<{ n: number }[]>`select count(*)::int as n from switch_providers`;
    t.equal(n!.n, 0, 'nothing created');
  });

  await h.services.switchSubscriptions.grant(op.accountId, 'plan', null);
  await h.services.switchSubscriptions.grant(other.accountId, 'plan', null);

  let providerId = '';
  let trunkId = '';

  await t.test('providers: create, duplicates, bad input, PATCH with versions, status moves', async (t) => {
    const created = await call('POST', '/switch/providers', {
      name: 'Acme Telecom',
      accountCode: 'ACM-1',
      providerType: 'carrier',
      services: ['termination', 'sms'],
      portalEmail: 'noc@acme.example',
      creditLimit: 1500.5,
      contractStart: '2026-01-01',
      contractEnd: '2027-01-01',
      disputeDays: 10,
      tags: ['tier1'],
    });
    t.equal(created.status, 201, created.text);
    t.match(created.body.data, {
      name: 'Acme Telecom',
      accountCode: 'ACM-1',
      status: 'draft',
      routable: false,
      creditLimit: '1500.50',
      balance: '0.000000',
      contractStart: '2026-01-01',
      services: ['termination', 'sms'],
      version: 1,
    });
    providerId = created.body.data.id;

    const dupName = await call('POST', '/switch/providers', { name: 'acme telecom' });
    t.equal(dupName.status, 409);
    t.match(dupName.body.error, { code: 'CONFLICT', message: /name/ });
    const dupCode = await call('POST', '/switch/providers', { name: 'Other', accountCode: 'acm-1' });
    t.match(dupCode.body.error, { code: 'CONFLICT', message: /accountCode/ });
    t.equal(
      (await call('POST', '/switch/providers', { name: 'Acme Telecom' }, other.session)).status,
      201,
      'names are per account',
    );

    const bad = await call('POST', '/switch/providers', { name: 'X', creditLimit: '1.1234567', country: 'GBR' });
    t.equal(bad.status, 400);
    t.equal(bad.body.error.code, 'VALIDATION_ERROR');
    t.ok(
      bad.body.error.details.some((d: { path: string }) => d.path.includes('country')),
      bad.text,
    );
    const badMoney = await call('POST', '/switch/providers', { name: 'Y', creditLimit: '1.1234567' });
    t.match(badMoney.body.error, { code: 'VALIDATION_ERROR', details: [{ path: '/creditLimit' }] });

    const patched = await call('PATCH', `/switch/providers/${providerId}`, {
      version: 1,
      legalName: 'Acme Ltd',
      creditLimit: '20',
    });
    t.equal(patched.status, 200, patched.text);
    t.match(patched.body.data, { legalName: 'Acme Ltd', creditLimit: '20.00', version: 2 });
    const stale = await call('PATCH', `/switch/providers/${providerId}`, { version: 1, legalName: 'Lost' });
    t.equal(stale.status, 409);
    t.equal(stale.body.error.code, 'STALE_WRITE');
    t.equal(
      (await call('PATCH', `/switch/providers/${providerId}`, { version: 2, status: 'active' })).status,
      400,
      'status is not patched',
    );

    const wrongMove = await call('POST', `/switch/providers/${providerId}/status`, { status: 'suspended' });
    t.equal(wrongMove.status, 400);
    t.match(wrongMove.body.error.message, /draft to suspended/);
    const testing = await call('POST', `/switch/providers/${providerId}/status`, {
      status: 'testing',
      note: 'trial calls',
    });
    t.match(testing.body.data, { status: 'testing', statusNote: 'trial calls', routable: false, version: 3 });
    const active = await call('POST', `/switch/providers/${providerId}/status`, { status: 'active' });
    t.match(active.body.data, { status: 'active', routable: true });

    const contact = await call('POST', `/switch/providers/${providerId}/contacts`, {
      role: 'noc',
      name: 'NOC desk',
      email: 'noc@acme.example',
    });
    t.equal(contact.status, 201, contact.text);
    t.equal(
      (await call('GET', `/switch/providers/${providerId}`, undefined, other.session)).status,
      404,
      "another account's provider is not found",
    );
  });

  await t.test('test keys may read; their writes get 403', async (t) => {
    const key = await h.services.keys.create(op.accountId, { mode: 'test', scopes: ['switch:manage'] });
    t.equal((await call('GET', '/switch/providers', undefined, key.secret)).status, 200);
    const w = await call('POST', '/switch/providers', { name: 'From a test key' }, key.secret);
    t.equal(w.status, 403);
    t.equal(w.body.error.code, 'TEST_KEY_NOT_ALLOWED');
    const scoped = await h.services.keys.create(op.accountId, { mode: 'live', scopes: ['routes:read'] });
    const noScope = await call('GET', '/switch/providers', undefined, scoped.secret);
    t.equal(noScope.status, 403);
    t.match(noScope.body.error.message, /switch:manage/);
  });

  await t.test('trunks: sealed passwords, guarded hosts, versions', async (t) => {
    const refused = await call('POST', '/switch/suppliers', { label: 'Private', sipHost: '10.1.2.3' });
    t.equal(refused.status, 400);
    t.match(refused.body.error, { code: 'VALIDATION_ERROR', details: [{ path: '/sipHost' }] });
    const plainUrl = await call('POST', '/switch/suppliers', {
      label: 'Plain',
      smsDeliveryUrl: 'http://sms.example/x',
    });
    t.match(plainUrl.body.error, { details: [{ path: '/smsDeliveryUrl' }] });

    const created = await call('POST', '/switch/suppliers', {
      supplierId: providerId,
      label: 'Acme UK',
      sipHost: '192.0.2.10',
      sipPort: 5070,
      sipAuthUsername: 'acme-user',
      sipAuthPassword: 'sip-secret-1',
      smsDeliveryMethod: 'smpp',
      smppHost: '192.0.2.11',
      smppSystemId: 'acme',
      smppPassword: 'smpp-pw-1',
      defaultRatePerUnit: 0.0125,
      capacity: 0,
    });
    t.equal(created.status, 201, created.text);
    trunkId = created.body.data.id;
    t.match(created.body.data, {
      supplierId: providerId,
      status: 'draft',
      sipHost: '192.0.2.10',
      sipAuthPasswordSet: true,
      smppPasswordSet: true,
      defaultRatePerUnit: '0.012500',
      version: 1,
      reachable: null,
    });
    t.equal((await call('POST', '/switch/suppliers', { label: 'acme uk' })).status, 409, 'labels are unique');

    const [stored] = await h.sql<{ sip: string; smpp: string }[]>`
      select sip_auth_password_sealed as sip, smpp_password_sealed as smpp from switch_trunks where id = ${trunkId}`;
    t.match(stored!.sip, /^v1\./, 'sealed at rest');
    t.notOk(stored!.sip.includes('sip-secret-1'));

    const reads = [
      await call('GET', `/switch/suppliers/${trunkId}`),
      await call('GET', '/switch/providers'),
      await call('GET', `/switch/providers/${providerId}`),
      await call('GET', `/switch/providers/${providerId}/audit`),
      await call('GET', `/switch/suppliers/${trunkId}/config-history`),
    ];
    for (const r of reads) {
      t.equal(r.status, 200, r.text);
      t.notOk(r.text.includes('sip-secret-1') || r.text.includes('smpp-pw-1'), 'no password in a read');
    }
    const list = reads[1]!.body.data;
    const acme = list.accounts.find((a: { id: string }) => a.id === providerId);
    t.match(acme, { trunkCount: 1, activeTrunks: 0, totalCapacity: 0 });
    t.equal(acme.trunks[0].id, trunkId);

    const creds = await call('GET', `/switch/suppliers/${trunkId}/credentials`);
    t.same(creds.body.data, {
      sipAuthUsername: 'acme-user',
      sipAuthPassword: 'sip-secret-1',
      smppSystemId: 'acme',
      smppPassword: 'smpp-pw-1',
    });
    const key = await h.services.keys.create(op.accountId, { mode: 'test', scopes: [] });
    t.equal(
      (await call('GET', `/switch/suppliers/${trunkId}/credentials`, undefined, key.secret)).status,
      403,
      'not for test keys',
    );

    const patched = await call('PATCH', `/switch/suppliers/${trunkId}`, {
      version: 1,
      capacity: 30,
      sipAuthPassword: 'sip-secret-2',
      note: 'more channels',
    });
    t.equal(patched.status, 200, patched.text);
    t.match(patched.body.data, { capacity: 30, version: 2 });
    t.equal(
      (await call('PATCH', `/switch/suppliers/${trunkId}`, { version: 1, capacity: 40 })).body.error.code,
      'STALE_WRITE',
    );

    const history = await call('GET', `/switch/suppliers/${trunkId}/config-history`);
    t.same(
      history.body.data.map((v: { version: number; source: string }) => [v.version, v.source]),
      [
        [2, 'update'],
        [1, 'create'],
      ],
    );
    t.same(history.body.data[0].changedFields.sort(), ['capacity', 'sipAuthPassword']);
    t.same(history.body.data[0].diff.sipAuthPassword, { from: '[redacted]', to: '[redacted]' });
    t.equal(history.body.data[0].note, 'more channels');
    const one = await call('GET', `/switch/suppliers/${trunkId}/config-history/${history.body.data[0].id}`);
    t.equal(one.status, 200, one.text);
    t.match(one.body.data, {
      version: 2,
      snapshot: { capacity: 30, sipAuthPasswordSet: true },
      previous: { version: 1, snapshot: { capacity: 0 } },
    });
    t.notOk(one.text.includes('sip-secret-2'));
    t.match(one.body.data.checksum, /^[0-9a-f]{64}$/);
  });

  await t.test('endpoints: adoption on first read, guard, last endpoint kept', async (t) => {
    const first = await call('GET', `/switch/suppliers/${trunkId}/endpoints`);
    t.equal(first.status, 200, first.text);
    t.match(first.body.data, [{ host: '192.0.2.10', port: 5070, role: 'primary', enabled: true }]);
    t.equal((await call('GET', `/switch/suppliers/${trunkId}/endpoints`)).body.data.length, 1, 'adopted once');
    const adoptedId = first.body.data[0].id;

    t.equal(
      (await call('POST', `/switch/suppliers/${trunkId}/endpoints`, { host: '10.9.9.9' })).status,
      400,
      'guarded',
    );
    const backup = await call('POST', `/switch/suppliers/${trunkId}/endpoints`, {
      host: '192.0.2.20',
      role: 'backup',
      priority: 2,
    });
    t.equal(backup.status, 201, backup.text);
    t.equal((await call('POST', `/switch/suppliers/${trunkId}/endpoints`, { host: '192.0.2.20' })).status, 409);
    const off = await call('PATCH', `/switch/suppliers/${trunkId}/endpoints/${backup.body.data.id}`, {
      enabled: false,
    });
    t.match(off.body.data, { enabled: false });
    t.match(await call('DELETE', `/switch/suppliers/${trunkId}/endpoints/${backup.body.data.id}`), {
      status: 200,
      body: { data: { deleted: true } },
    });
    const last = await call('DELETE', `/switch/suppliers/${trunkId}/endpoints/${adoptedId}`);
    t.equal(last.status, 409);
    t.match(last.body.error.message, /last endpoint/);

    const history = await call('GET', `/switch/suppliers/${trunkId}/config-history?limit=4`);
    t.same(
      history.body.data.map((v: { source: string }) => v.source),
      ['endpoints', 'endpoints', 'endpoints', 'adoption'],
    );
    const audit = await call('GET', `/switch/providers/${providerId}/audit`);
    const actions = audit.body.data.entries.map((e: { action: string }) => e.action);
    t.same(actions.slice(0, 4), ['endpoint:deleted', 'endpoint:updated', 'endpoint:created', 'endpoint:adopted']);
    const update = audit.body.data.entries[1];
    t.match(update, {
      entity: 'endpoint',
      before: { enabled: true },
      after: { enabled: false },
      actor: { kind: 'session' },
    });
    t.ok(actions.includes('status:active') && actions.includes('created'), 'provider changes are in the same audit');
  });

  await t.test('readiness is a pure read; failing checks refuse activation with TRUNK_NOT_READY', async (t) => {
    const before = await h.sql`select count(*)::int as n from switch_trunk_versions where trunk_id = ${trunkId}`;
    const r = await call('GET', `/switch/suppliers/${trunkId}/readiness`);
    t.equal(r.status, 200, r.text);
    t.match(r.body.data, {
      trunkId,
      exempt: false,
      state: 'ready',
      failing: 0,
      warning: 1,
      blockingEnabled: true,
      grandfathered: false,
    });
    const byId = Object.fromEntries(r.body.data.checks.map((c: { id: string; status: string }) => [c.id, c.status]));
    t.match(byId, {
      supplier: 'pass',
      noc_contact: 'pass',
      endpoints: 'pass',
      sip_auth: 'pass',
      capacity: 'pass',
      cost_deck: 'pass',
      reachability: 'warn',
      sms_delivery: 'pass',
    });
    const after = await h.sql`select count(*)::int as n from switch_trunk_versions where trunk_id = ${trunkId}`;
    t.same(after, before, 'nothing written');

    await call('PATCH', `/switch/suppliers/${trunkId}`, { version: 2, capacity: 0 });
    t.match((await call('GET', `/switch/suppliers/${trunkId}/readiness`)).body.data, {
      state: 'not_ready',
      failing: 1,
    });
    const refused = await call('POST', `/switch/suppliers/${trunkId}/status`, { status: 'active' });
    t.equal(refused.status, 400, refused.text);
    t.equal(refused.body.error.code, 'VALIDATION_ERROR');
    t.match(refused.body.error.details, {
      code: 'TRUNK_NOT_READY',
      blockers: [{ id: 'capacity', fix: 'configuration' }],
    });
    t.equal(refused.body.error.details.blockers.length, 1);

    await call('PATCH', `/switch/suppliers/${trunkId}`, { version: 3, capacity: 10 });
    const activated = await call('POST', `/switch/suppliers/${trunkId}/status`, { status: 'active' });
    t.equal(activated.status, 200, activated.text);
    t.equal(activated.body.data.status, 'active');
    t.equal((await call('PATCH', `/switch/suppliers/${trunkId}`, { version: 5, capacity: 0 })).status, 200);
    t.match((await call('GET', `/switch/suppliers/${trunkId}/readiness`)).body.data, {
      state: 'not_ready',
      grandfathered: true,
    });
    t.equal((await call('PATCH', `/switch/suppliers/${trunkId}`, { version: 6, capacity: 10 })).status, 200);
    t.equal(
      (await call('POST', `/switch/suppliers/${trunkId}/status`, { status: 'draft' })).status,
      400,
      'active cannot go back to draft',
    );
    t.equal(
      (await call('POST', `/switch/suppliers/${trunkId}/status`, { status: 'draining' })).body.data.status,
      'draining',
    );
  });

  await t.test('disputes: money in as number or string, out with 6 places; moves; STALE_WRITE', async (t) => {
    const opened = await call('POST', `/switch/providers/${providerId}/disputes`, {
      periodStart: '2026-10-01',
      periodEnd: '2026-10-31T23:59:59Z',
      ourAmount: 1200.5,
      theirAmount: '1300.123456',
      reason: 'minutes billed twice',
      invoiceRef: 'INV-77',
    });
    t.equal(opened.status, 201, opened.text);
    t.match(opened.body.data, {
      periodStart: '2026-10-01',
      periodEnd: '2026-10-31',
      ourAmount: '1200.500000',
      theirAmount: '1300.123456',
      currency: 'USD',
      status: 'open',
      closedAt: null,
      version: 1,
    });
    const days = (Date.parse(opened.body.data.respondBy) - Date.parse(opened.body.data.openedAt)) / 86_400_000;
    t.equal(days, 10, "respondBy is the provider's disputeDays later");
    const id = opened.body.data.id;

    const badAmount = await call('POST', `/switch/providers/${providerId}/disputes`, {
      periodStart: '2026-10-01',
      periodEnd: '2026-09-01',
      ourAmount: 'abc',
      theirAmount: 1,
    });
    t.match(badAmount.body.error, { code: 'VALIDATION_ERROR', details: [{ path: '/ourAmount' }] });
    const badPeriod = await call('POST', `/switch/providers/${providerId}/disputes`, {
      periodStart: '2026-10-01',
      periodEnd: '2026-09-01',
      ourAmount: 1,
      theirAmount: 1,
    });
    t.match(badPeriod.body.error, { details: [{ path: '/periodEnd' }] });

    const list = await call('GET', `/switch/providers/${providerId}/disputes`);
    t.match(list.body.data, [{ id, daysLeft: 10 }]);
    const submitted = await call('PATCH', `/switch/providers/${providerId}/disputes/${id}`, {
      version: 1,
      status: 'submitted',
      theirAmount: 1250,
    });
    t.match(submitted.body.data, { status: 'submitted', theirAmount: '1250.000000', version: 2 });
    t.equal(
      (await call('PATCH', `/switch/providers/${providerId}/disputes/${id}`, { version: 1, reason: 'x' })).body.error
        .code,
      'STALE_WRITE',
    );
    t.equal(
      (await call('PATCH', `/switch/providers/${providerId}/disputes/${id}`, { version: 2, status: 'settled' })).status,
      400,
      'submitted cannot settle before accepted',
    );
    const accepted = await call('PATCH', `/switch/providers/${providerId}/disputes/${id}`, {
      version: 2,
      status: 'accepted',
      resolution: 'credit note',
    });
    t.match(accepted.body.data, { status: 'accepted', closedAt: null });
    const settled = await call('PATCH', `/switch/providers/${providerId}/disputes/${id}`, {
      version: 3,
      status: 'settled',
    });
    t.match(settled.body.data, { status: 'settled' });
    t.ok(settled.body.data.closedAt);
    const [row] = await h.sql<
      { t: string }[]
    >`select pg_typeof(our_amount)::text as t from switch_disputes where id = ${id}`;
    t.equal(row!.t, 'numeric');
  });

  await t.test('cost deck: JSON and CSV uploads, only rows in force read, search and paging', async (t) => {
    const past = new Date(Date.now() - 86_400_000).toISOString();
    const future = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);
    const json = await call('POST', `/switch/suppliers/${trunkId}/rates`, {
      rows: [
        { prefix: '44', ratePerUnit: 0.01, destinationName: 'UK', effectiveFrom: past },
        { prefix: '447', ratePerUnit: '0.020000', destinationName: 'UK mobile' },
        { prefix: '33', ratePerUnit: 0.03 },
      ],
    });
    t.equal(json.status, 200, json.text);
    t.same(json.body.data, { added: 3, active: 3, scheduled: 0, archived: 0 });
    const csv = await call('POST', `/switch/suppliers/${trunkId}/rates`, {
      csv: `prefix,rate,effective_date,destination\n447,0.025,,UK mobile\n33,0.05,${future},France\n`,
    });
    t.same(csv.body.data, { added: 2, active: 1, scheduled: 1, archived: 1 });
    const bad = await call('POST', `/switch/suppliers/${trunkId}/rates`, { rows: [{ prefix: '4x', ratePerUnit: -1 }] });
    t.equal(bad.status, 400);
    t.same(
      bad.body.error.details.map((d: { path: string }) => d.path),
      ['/rows/0/prefix', '/rows/0/ratePerUnit'],
    );

    const all = await call('GET', `/switch/suppliers/${trunkId}/rates`);
    t.equal(all.status, 200, all.text);
    t.same(
      all.body.data.rows.map((r: { prefix: string; ratePerUnit: string }) => [r.prefix, r.ratePerUnit]),
      [
        ['33', '0.030000'],
        ['44', '0.010000'],
        ['447', '0.025000'],
      ],
    );
    t.match(all.body.data, { total: 3, limit: 100, offset: 0 });
    const search = await call('GET', `/switch/suppliers/${trunkId}/rates?search=44&limit=1&offset=1`);
    t.match(search.body.data, {
      total: 2,
      limit: 1,
      offset: 1,
      rows: [{ prefix: '447', status: 'active', vendorTrunkId: trunkId }],
    });
    t.equal((await call('GET', `/switch/suppliers/${trunkId}/rates?search=abc`)).status, 400);
  });

  await t.test('portal invite without an address: 400; test-sms without a method: 400', async (t) => {
    const bare = await call('POST', '/switch/suppliers', { label: 'Bare' });
    const invite = await call('POST', `/switch/suppliers/${bare.body.data.id}/portal-invite`);
    t.equal(invite.status, 400);
    t.match(invite.body.error, { code: 'VALIDATION_ERROR', details: [{ path: '/portalEmail' }] });
    const sms = await call('POST', `/switch/suppliers/${bare.body.data.id}/test-sms`);
    t.equal(sms.status, 400);
    const ungrouped = await call('GET', '/switch/providers');
    t.ok(
      ungrouped.body.data.ungrouped.some((x: { id: string }) => x.id === bare.body.data.id),
      'listed as ungrouped',
    );
    const noEndpoint = await call('POST', `/switch/suppliers/${bare.body.data.id}/reachability`);
    t.equal(noEndpoint.status, 400, 'nothing to probe');
  });
});
