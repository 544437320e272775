import t from 'tap';
import { startTestDaemon } from '../../helpers/daemon.js';
import { signIn } from '../../helpers/sessions.js';
import { startSmtpPeer } from '../../helpers/smtp.js';

t.test('status page: live components, incidents and maintenance, uptime, subscriptions', async (t) => {
  const smtp = await startSmtpPeer(t);
  const d = await startTestDaemon(t, { mail: { smtp_host: '127.0.0.1', smtp_port: smtp.port } });
  const op = await signIn(d, 'ops@example.test', 'admin');
  const user = await signIn(d, 'user@example.test');

  const comps = await d.https('GET', '/status/components');
  t.equal(comps.status, 200);
  t.equal(comps.json.data.indicator, 'none');
  t.same(
    comps.json.data.components.map((c: { id: string; status: string }) => [c.id, c.status]),
    [
      ['api', 'operational'],
      ['sip', 'operational'],
      ['smpp', 'operational'],
      ['media', 'operational'],
      ['database', 'operational'],
    ],
    'every plane reports live health',
  );

  // Subscribe before the incident: double opt-in.
  t.equal((await d.https('POST', '/status/subscriptions', { body: { email: 'watcher@example.test' } })).status, 202);
  const confirmMail = await smtp.next('watcher@example.test', /Confirm/);
  const token = /token=(\w+)/.exec(confirmMail.text)![1]!;
  t.equal(
    (await d.https('POST', '/status/subscriptions/manage', { body: { token: 'x'.repeat(40), action: 'confirm' } }))
      .status,
    404,
  );
  const confirmed = await d.https('POST', '/status/subscriptions/manage', { body: { token, action: 'confirm' } });
  t.match(confirmed.json.data, { subscribed: true, confirmedAt: String });
  await d.https('POST', '/status/subscriptions', { body: { email: 'lurker@example.test' } });
  await smtp.next('lurker@example.test', /Confirm/);

  const body = {
    kind: 'incident',
    title: 'SMS delivery delays',
    message: 'Investigating slow receipts',
    impact: 'major',
    components: ['smpp'],
  };
  t.equal((await d.https('POST', '/status/incidents', { token: user.token, body })).status, 403, 'operators only');
  const bad = await d.https('POST', '/status/incidents', { token: op.token, body: { ...body, kind: 'maintenance' } });
  t.equal(bad.json.error.code, 'VALIDATION_ERROR');
  t.ok(bad.json.error.details.some((x: { path: string }) => x.path === 'endsAt'));
  const created = await d.https('POST', '/status/incidents', { token: op.token, body });
  t.equal(created.status, 201);
  t.match(created.json.data, {
    kind: 'incident',
    status: 'investigating',
    impact: 'major',
    components: ['smpp'],
    resolvedAt: null,
  });
  t.equal(created.json.data.updates.length, 1);
  const incidentMail = await smtp.next('watcher@example.test', /SMS delivery delays/);
  t.match(incidentMail.subject, /\[Incident\] SMS delivery delays: investigating/);
  t.match(incidentMail.text, /unsubscribe\?token=/);

  const during = (await d.https('GET', '/status/components')).json.data;
  t.equal(during.indicator, 'major');
  t.match(
    during.components.find((c: { id: string }) => c.id === 'smpp'),
    { status: 'partial_outage', live: { ok: true }, incidentIds: [created.json.data.id] },
  );

  const now = Date.now();
  const maint = await d.https('POST', '/status/incidents', {
    token: op.token,
    body: {
      kind: 'maintenance',
      title: 'Database upgrade',
      message: 'PostgreSQL minor upgrade',
      components: ['database'],
      startsAt: new Date(now + 3600_000).toISOString(),
      endsAt: new Date(now + 7200_000).toISOString(),
    },
  });
  t.match(maint.json.data, { status: 'scheduled', impact: 'maintenance' });
  t.equal((await d.https('GET', '/status/incidents?state=upcoming')).json.data.length, 1);
  t.equal((await d.https('GET', '/status/incidents?state=active')).json.data[0].id, created.json.data.id);
  t.equal(
    (await d.https('GET', '/status/components')).json.data.components.find((c: { id: string }) => c.id === 'database')
      .status,
    'operational',
    'not yet',
  );

  const wrongStatus = await d.https('POST', `/status/incidents/${created.json.data.id}/updates`, {
    token: op.token,
    body: { status: 'completed', message: 'x' },
  });
  t.equal(wrongStatus.json.error.code, 'VALIDATION_ERROR');
  const resolved = await d.https('POST', `/status/incidents/${created.json.data.id}/updates`, {
    token: op.token,
    body: { status: 'resolved', message: 'Receipts flow again' },
  });
  t.match(resolved.json.data, { status: 'resolved', resolvedAt: String });
  t.equal(resolved.json.data.updates[0].message, 'Receipts flow again', 'newest update first');
  t.equal(
    (
      await d.https('POST', `/status/incidents/${created.json.data.id}/updates`, {
        token: op.token,
        body: { status: 'monitoring', message: 'y' },
      })
    ).json.error.code,
    'CONFLICT',
  );
  await smtp.next('watcher@example.test', /Receipts flow again/);
  t.notOk(
    smtp.messages.some((m) => m.to.includes('lurker@example.test') && /SMS delivery/.test(m.subject)),
    'unconfirmed addresses get no updates',
  );
  t.equal((await d.https('GET', '/status/components')).json.data.indicator, 'none');

  const started = await d.https('POST', `/status/incidents/${maint.json.data.id}/updates`, {
    token: op.token,
    body: { status: 'in_progress', message: 'Started early' },
  });
  t.equal(started.json.data.status, 'in_progress');
  t.equal(
    (await d.https('GET', '/status/components')).json.data.components.find((c: { id: string }) => c.id === 'database')
      .status,
    'under_maintenance',
  );

  const list = await d.https('GET', '/status/incidents?limit=1');
  t.equal(list.json.hasMore, true);
  t.equal(
    (await d.https('GET', `/status/incidents?limit=1&cursor=${list.json.nextCursor}`)).json.data[0].id,
    created.json.data.id,
  );
  t.equal((await d.https('GET', '/status/incidents?kind=maintenance')).json.data.length, 1);

  // The daemon sampled health at start; a second sample lands on the same day.
  await d.modules.services.status.sample();
  const uptime = await d.https('GET', '/status/uptime?days=7');
  t.equal(uptime.status, 200);
  const db = uptime.json.data.components.find((c: { id: string }) => c.id === 'database');
  t.equal(db.points.length, 7);
  t.equal(db.uptimePct, 100);
  t.ok(db.points[6].samples >= 2);
  t.equal(db.points[0].uptimePct, null, 'no samples that day');
  t.equal((await d.https('GET', '/status/uptime?days=1000')).status, 400);

  const unsub = await d.https('POST', '/status/subscriptions/manage', { body: { token, action: 'unsubscribe' } });
  t.same(unsub.json.data, { subscribed: false, confirmedAt: null });
  t.equal(
    (await d.https('POST', '/status/subscriptions/manage', { body: { token, action: 'unsubscribe' } })).status,
    404,
  );
});
