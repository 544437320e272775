import t from 'tap';
import { bearer, buildTestApp } from '../../helpers/app.js';
import { startPerlSmsc } from '../../messaging/perl-smsc.js';

/**
 * POST /switch/suppliers/test-sms: unsaved SMS delivery details checked against a real SMSC
 * (Net::SMPP), behind the Switch plan gate; nothing stored, nothing sent.
 */
t.test('Switch test-sms: the plan gate, real bind checks, and refused input', async (t) => {
  const smsc = await startPerlSmsc('sup1', 'pw1');
  t.teardown(() => smsc.stop());
  const h = await buildTestApp(t);
  const op = await h.signUp();
  const post = async (token: string, payload: unknown) => {
    const r = await h.app.inject({
      method: 'POST',
      url: '/api/v1/switch/suppliers/test-sms',
      headers: bearer(token),
      payload: payload as object,
    });
    return { status: r.statusCode, body: r.json() };
  };
  const smpp = {
    smsDeliveryMethod: 'smpp',
    smppHost: '127.0.0.1',
    smppPort: smsc.port,
    smppSystemId: 'sup1',
    smppPassword: 'pw1',
  };

  t.test('no Switch plan: 402, and no bind is tried', async (t) => {
    const binds = smsc.lines.length;
    const r = await post(op.session, smpp);
    t.equal(r.status, 402);
    t.equal(r.body.error.code, 'SWITCH_SUBSCRIPTION_REQUIRED');
    t.equal(smsc.lines.length, binds, 'the SMSC saw nothing');
  });

  t.test('an ended trial is no plan', async (t) => {
    await h.services.switchSubscriptions.grant(op.accountId, 'trial', new Date(Date.now() + 1000));
    await h.sql`update switch_subscriptions set started_at = now() - interval '15 days', ends_at = now() - interval '1 day' where account_id = ${op.accountId}`;
    t.equal((await post(op.session, smpp)).status, 402);
  });

  t.test('with a trial: a real bind and unbind, nothing sent', async (t) => {
    await h.services.switchSubscriptions.grant(op.accountId, 'trial', new Date(Date.now() + 14 * 86_400_000));
    const submits = smsc.lines.filter((l) => l.startsWith('SUBMIT')).length;
    const r = await post(op.session, { ...smpp, smppBindType: 'transmitter', smppSystemType: 'SMPP', smppTps: 50 });
    t.equal(r.status, 200, JSON.stringify(r.body));
    t.match(r.body.data, { pass: true, via: 'smpp', message: 'bind and unbind succeeded' });
    t.same(
      r.body.data.checks.map((c: { label: string; ok: boolean }) => [c.label, c.ok]),
      [
        ['connect', true],
        ['bind', true],
        ['unbind', true],
      ],
    );
    t.equal(smsc.lines.filter((l) => l.startsWith('SUBMIT')).length, submits, 'no submit_sm');
    t.notOk(JSON.stringify(r.body).includes('pw1'), 'the password is not echoed');
    const [stored] = await h.sql<{ n: string }[]>`select count(*)::text as n from routes`;
    t.equal(stored!.n, '0', 'nothing stored');
  });

  t.test('a wrong password fails at bind; a closed port at connect', async (t) => {
    const bad = await post(op.session, { ...smpp, smppPassword: 'wrong' });
    t.equal(bad.status, 200);
    t.match(bad.body.data, {
      pass: false,
      via: 'smpp',
      checks: [
        { label: 'connect', ok: true },
        { label: 'bind', value: 'ESME_RBINDFAIL', ok: false },
      ],
    });
    const closed = await post(op.session, { ...smpp, smppPort: 1 });
    t.match(closed.body.data, { pass: false, checks: [{ label: 'connect', value: 'ECONNREFUSED', ok: false }] });
  });

  t.test('http: only a well-formed https URL passes; nothing is requested', async (t) => {
    const good = await post(op.session, {
      smsDeliveryMethod: 'http',
      smsDeliveryUrl: 'https://sms.example.test/submit?token=secret',
    });
    t.same(good.body.data, {
      pass: true,
      via: 'http',
      checks: [{ label: 'url', value: 'https://sms.example.test', ok: true }],
      message: 'Well-formed https URL (nothing was sent)',
    });
    const plain = await post(op.session, {
      smsDeliveryMethod: 'http',
      smsDeliveryUrl: 'http://sms.example.test/submit',
    });
    t.match(plain.body.data, { pass: false, checks: [{ label: 'url', value: 'http: URL', ok: false }] });
  });

  t.test('bad input: VALIDATION_ERROR naming each field', async (t) => {
    const missing = await post(op.session, { smsDeliveryMethod: 'smpp', smppHost: '127.0.0.1' });
    t.equal(missing.status, 400);
    t.equal(missing.body.error.code, 'VALIDATION_ERROR');
    t.same(missing.body.error.details.map((d: { path: string }) => d.path).sort(), ['smppPassword', 'smppSystemId']);
    const email = await post(op.session, { ...smpp, smppSystemId: 'ops@sup.test' });
    t.match(email.body.error, { code: 'VALIDATION_ERROR', details: [{ path: 'smppSystemId', message: /e-mail/ }] });
    for (const [field, value] of [
      ['smppSystemId', 'x'.repeat(17)],
      ['smppPort', 70000],
      ['smppTps', 0],
      ['smppBindType', 'receiver'],
      ['smppSystemType', 'x'.repeat(14)],
    ] as const) {
      const r = await post(op.session, { ...smpp, [field]: value });
      t.equal(r.status, 400, field);
      t.ok(
        r.body.error.details.some((d: { path: string }) => d.path === field),
        `${field} named`,
      );
    }
    const url = await post(op.session, { smsDeliveryMethod: 'http' });
    t.match(url.body.error.details, [{ path: 'smsDeliveryUrl' }]);
  });

  t.test('scoped keys need switch:manage; test keys may check', async (t) => {
    const { secret: scoped } = await h.services.keys.create(op.accountId, { mode: 'live', scopes: ['sms:send'] });
    t.equal((await post(scoped, smpp)).status, 403);
    const { secret: test } = await h.services.keys.create(op.accountId, { mode: 'test', scopes: ['switch:manage'] });
    t.equal((await post(test, { smsDeliveryMethod: 'http', smsDeliveryUrl: 'https://sms.example.test/' })).status, 200);
  });

  t.test('ending the plan closes the gate again', async (t) => {
    t.equal(await h.services.switchSubscriptions.end(op.accountId), true);
    t.equal((await post(op.session, smpp)).status, 402);
  });
});
