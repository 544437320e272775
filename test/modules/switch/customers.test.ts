import t from 'tap';
import { createManualClock } from '../../../src/platform/clock.js';
import { bearer, buildTestApp } from '../../helpers/app.js';
import { startSmtpPeer } from '../../helpers/smtp.js';

const DAY = 86_400_000;

/**
 * Switch customers and sell rates with notice over HTTP: the plan gate, the notice rule under a
 * controlled clock (an increase waits `noticeDays`, a decrease and a new prefix apply at once),
 * bad rows named, the changes list and CSV, and the notice e-mail through a real SMTP server.
 */
t.test('sell rates with notice', async (t) => {
  const smtp = await startSmtpPeer(t);
  const clock = createManualClock(new Date());
  const h = await buildTestApp(t, {
    clock,
    overrides: {
      billing: { require_route_for_sub_accounts: false },
      mail: { smtp_host: '127.0.0.1', smtp_port: smtp.port },
    },
  });
  const op = await h.signUp();
  const other = await h.signUp();
  const sub = await h.services.application.create(op.accountId, { label: 'Acme Telecom' });
  const base = `/api/v1/switch/customers/${sub.id}`;
  const call = async (method: 'GET' | 'POST' | 'PUT', url: string, payload?: object, token?: string) => {
    const r = await h.app.inject({
      method,
      url,
      headers: bearer(token ?? op.session),
      ...(payload ? { payload } : {}),
    });
    let body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
    try {
      body = r.json();
    } catch {
      body = null;
    }
    return { status: r.statusCode, body, text: r.body };
  };

  t.equal((await call('GET', '/api/v1/switch/customers')).status, 402, 'no Switch plan: 402');
  await h.services.switchSubscriptions.grant(op.accountId, 'plan', null);
  await h.services.switchSubscriptions.grant(other.accountId, 'plan', null);
  t.equal((await call('GET', base, undefined, other.session)).status, 404, "another operator's customer is unknown");

  const notice = await call('PUT', `${base}/sell-rates/notice`, {
    noticeDays: 7,
    recipients: ['rates@acme.test'],
  });
  t.equal(notice.status, 200, notice.text);
  t.match(notice.body.data, { noticeDays: 7, recipients: ['rates@acme.test'], autoSend: false });
  const badNotice = await call('PUT', `${base}/sell-rates/notice`, { recipients: ['not-an-address'] });
  t.equal(badNotice.status, 400);
  t.same(badNotice.body.error.details, [{ path: '/recipients/0', message: 'must be an e-mail address' }]);

  const bad = await call('POST', `${base}/sell-rates/csv`, {
    kind: 'voice',
    csv: 'prefix,destination,rate\n4420,London,0.010000\nx44,Bad,0.1\n4421,Leeds,-1\n',
  });
  t.equal(bad.status, 400);
  t.equal(bad.body.error.code, 'VALIDATION_ERROR');
  t.same(
    bad.body.error.details.map((d: { message: string }) => d.message.split(':')[0]),
    ['line 3', 'line 4'],
    'every bad row is named by its file line',
  );

  const first = await call('POST', `${base}/sell-rates/csv`, {
    kind: 'voice',
    csv: 'prefix,destination,rate\n4420,London,0.010000\n4421,Leeds,0.020000\n',
  });
  t.equal(first.status, 200, first.text);
  t.match(first.body.data, { written: 2, new: 2 });

  const t0 = clock.now();
  clock.advance(60_000);
  const change = await call('POST', `${base}/sell-rates`, {
    kind: 'voice',
    rows: [
      { prefix: '4420', destination: 'London', rate: '0.015' },
      { prefix: '4421', destination: 'Leeds', rate: '0.018' },
      { prefix: '4422', destination: 'Bristol', rate: '0.03' },
    ],
  });
  t.equal(change.status, 200, change.text);
  t.match(change.body.data, { written: 3, new: 1, increases: 1, decreases: 1 });
  t.equal(change.body.data.scheduled.length, 1);
  t.equal(
    change.body.data.scheduled[0].effectiveFrom,
    new Date(t0.getTime() + 60_000 + 7 * DAY).toISOString(),
    'the increase waits the 7 notice days',
  );

  const rateOf = async (prefix: string) => {
    const r = await call('GET', `${base}/sell-rates?search=${prefix}`, undefined, op.session);
    return r.body.data.rows.find((x: { prefix: string }) => x.prefix === prefix)?.rate;
  };
  t.equal(await rateOf('4420'), '0.010000', 'the increase is not in force yet');
  t.equal(await rateOf('4421'), '0.018000', 'the decrease applies at once');
  t.equal(await rateOf('4422'), '0.030000', 'the new prefix applies at once');
  const scheduled = await call('GET', `${base}/sell-rates/scheduled`);
  t.same(
    scheduled.body.data.rows.map((r: { prefix: string; rate: string }) => [r.prefix, r.rate]),
    [['4420', '0.015000']],
  );

  const changes = await call('GET', `${base}/sell-rates/notice/changes`);
  t.equal(changes.status, 200, changes.text);
  const byPrefix = Object.fromEntries(
    changes.body.data.rows
      .filter((r: { createdAt: string }) => r.createdAt !== t0.toISOString())
      .map((r: { prefix: string }) => [r.prefix, r]),
  );
  t.match(byPrefix['4420'], { change: 'increase', previousRate: '0.010000', rate: '0.015000', status: 'pending' });
  t.match(byPrefix['4421'], { change: 'decrease', previousRate: '0.020000', rate: '0.018000', status: 'effective' });
  t.match(byPrefix['4422'], { change: 'new', previousRate: null, status: 'effective' });

  const csv = await call('GET', `${base}/sell-rates/notice/changes.csv`);
  t.equal(csv.status, 200);
  t.match(csv.text, /^kind,prefix,destination,change,previous_rate,rate,/);
  t.match(csv.text, /voice,4420,London,increase,0\.010000,0\.015000,60\/60,/);

  const sent = await call('POST', `${base}/sell-rates/notice/send`);
  t.equal(sent.status, 200, sent.text);
  t.match(sent.body.data, { sent: true, to: ['rates@acme.test'], changes: 5 });
  const mail = await smtp.next('rates@acme.test', /Sell-rate changes/);
  t.match(mail.text, /VOICE 4420 London: increase 0\.010000\/min -> 0\.015000\/min/);
  t.match(mail.text, /VOICE 4421 Leeds: decrease 0\.020000\/min -> 0\.018000\/min/);
  const again = await call('POST', `${base}/sell-rates/notice/send`);
  t.equal(again.status, 400, 'nothing unsent is left');
  const after = await call('GET', `${base}/sell-rates/notice/changes`);
  t.ok(
    after.body.data.rows.every((r: { notifiedAt: string | null }) => r.notifiedAt !== null),
    'every listed change shows when it was notified',
  );

  clock.advance(7 * DAY);
  // The session expired with the week: a fresh login.
  op.session = (await h.services.accounts.login(op.email, op.password, {})).accessToken;
  t.equal(await rateOf('4420'), '0.015000', 'after the notice period the increase is in force');

  const list = await call('GET', '/api/v1/switch/customers');
  t.equal(list.status, 200, list.text);
  t.match(list.body.data.rows[0], {
    id: sub.id,
    label: 'Acme Telecom',
    balance: '0.000000',
    sellRates: { voicePrefixes: 3, smsPrefixes: 0, scheduledChanges: 0, noticeDays: 7 },
  });
});
