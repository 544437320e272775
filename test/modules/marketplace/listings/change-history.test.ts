import { randomUUID } from 'node:crypto';
import t from 'tap';
import { createWorld, eventually, expectExit, uac, uacScenario, uasAnswer } from '../../sip-trunks/world.js';

t.test('listing change history and live capacity', async (t) => {
  const w = await createWorld(t);
  const number = '442600000001';
  const supplier = await uasAnswer(t, number);
  const { routeId } = await w.route({ port: supplier.port, prefix: '4426', rate: '0.010000', capacity: 3 });
  const seller = (method: string, url: string, body?: unknown) => w.api(method, url, w.seller.token, body);
  const buyer = (method: string, url: string) => w.api(method, url, w.operator.token);
  const accounts = w.d.modules.services.accounts;
  const email = `${randomUUID()}@operator.test`;
  await accounts.createAccount({ email, password: 'correct horse battery staple 42', role: 'admin' });
  const admin = (await accounts.login(email, 'correct horse battery staple 42', {})).accessToken;

  await t.test('every change of a listing field, with who and when; buyers see terms without who', async (t) => {
    t.equal((await seller('PATCH', `/routes/${routeId}`, { maxCps: 5, cliType: 'cli' })).status, 200);
    t.equal((await seller('POST', '/routes/my/bulk-status', { routeIds: [routeId], action: 'pause' })).status, 200);
    t.equal((await seller('POST', '/routes/my/bulk-status', { routeIds: [routeId], action: 'resume' })).status, 200);
    const suspended = await w.api('POST', `/routes/${routeId}/suspend`, admin, { reason: 'false answer supervision' });
    t.equal(suspended.status, 200, suspended.text);
    t.equal((await w.api('POST', `/routes/${routeId}/reinstate`, admin)).status, 200);

    const mine = await seller('GET', `/routes/${routeId}/changes?limit=100`);
    t.equal(mine.status, 200, mine.text);
    const seen = mine.body.data.rows.map((r: { field: string; from: unknown; to: unknown; by: string }) => [
      r.field,
      r.from,
      r.to,
      r.by,
    ]);
    // Newest first: the reinstatement, the suspension, the resume, the pause, the terms.
    t.same(
      seen.filter((r: unknown[]) => r[0] === 'status'),
      [
        ['status', 'suspended', 'active', 'operator'],
        ['status', 'active', 'suspended', 'operator'],
        ['status', 'paused', 'active', 'seller'],
        ['status', 'active', 'paused', 'seller'],
      ],
    );
    t.same(
      seen.filter((r: unknown[]) => r[0] === 'maxCps'),
      [['maxCps', null, 5, 'seller']],
    );
    t.same(
      seen.filter((r: unknown[]) => r[0] === 'cliType'),
      [['cliType', null, 'cli', 'seller']],
    );
    t.ok(
      seen.some((r: unknown[]) => r[0] === 'suspendedReason' && r[2] === 'false answer supervision'),
      'the seller sees the operator’s reason',
    );
    t.ok(mine.body.data.rows.every((r: { changedAt: string }) => !Number.isNaN(Date.parse(r.changedAt))));
    const page = await seller('GET', `/routes/${routeId}/changes?limit=2&offset=1`);
    t.same(
      page.body.data.rows.map((r: { id: string }) => r.id),
      mine.body.data.rows.slice(1, 3).map((r: { id: string }) => r.id),
      'offset pages',
    );
    t.equal(page.body.data.total, mine.body.data.total);
    const one = await seller('GET', `/routes/${routeId}/changes?field=maxCps`);
    t.match(one.body.data, { total: 1, rows: [{ field: 'maxCps', to: 5 }] });

    const theirs = await buyer('GET', `/routes/${routeId}/changes?limit=100`);
    t.equal(theirs.status, 200, theirs.text);
    const fields = new Set(theirs.body.data.rows.map((r: { field: string }) => r.field));
    t.ok(fields.has('status') && fields.has('maxCps'), 'buyers see terms and status');
    t.notOk(fields.has('suspendedReason') || fields.has('suspendedAt'), 'not the operator’s notes');
    t.ok(
      theirs.body.data.rows.every((r: object) => !('by' in r) && !('actorId' in r)),
      'nor who changed the listing',
    );
    const stranger = await w.signUp();
    await seller('PUT', `/routes/${routeId}/visibility`, { visibility: 'private' });
    t.equal((await w.api('GET', `/routes/${routeId}/changes`, stranger.token)).status, 404, 'a private listing');
  });

  await t.test('live capacity: a call in progress counts against the capacity, then leaves it', async (t) => {
    const idle = await seller('GET', `/routes/${routeId}/capacity`);
    t.equal(idle.status, 200, idle.text);
    t.match(idle.body.data, { routeId, capacity: 3, maxCps: 5, concurrentCalls: 0, capacityUsedPercent: 0 });
    t.equal((await buyer('GET', `/routes/${routeId}/capacity`)).status, 404, 'the seller’s alone');
    const sub = await w.sub({ markupPct: '0', fund: '5.000000' });
    const caller = await uac(
      t,
      w.sipPort,
      uacScenario('uac-tail-answer.xml', { HOLD_MS: '4000' }),
      number,
      sub.sipUsername,
      sub.sipPassword,
    );
    const during = await eventually(async () => {
      const r = await seller('GET', `/routes/${routeId}/capacity`);
      return r.body.data.concurrentCalls === 1 ? r.body.data : null;
    }, 8000);
    t.match(during, { concurrentCalls: 1, capacityUsedPercent: 33.33 });
    t.ok(during.callsThisSecond >= 0 && during.callsThisSecond <= 5, 'CPS in use is within the stated CPS');
    await expectExit(t, caller, 'caller completed the call');
    await expectExit(t, supplier, 'supplier answered and got the BYE');
    const after = await eventually(async () => {
      const r = await seller('GET', `/routes/${routeId}/capacity`);
      return r.body.data.concurrentCalls === 0 ? r.body.data : null;
    });
    t.equal(after.concurrentCalls, 0, 'the slot is given back when the call ends');
  });
});
