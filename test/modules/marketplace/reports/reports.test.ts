import { randomUUID } from 'node:crypto';
import t from 'tap';
import { createWorld, eventually, expectExit, uac, uacScenario, uasAnswer } from '../../sip-trunks/world.js';

t.test('route reports: evidence, answer, escalate, decide, health, suspension', async (t) => {
  const w = await createWorld(t);
  const number = '442300000001';
  const uas = await uasAnswer(t, number);
  const r = await w.route({ port: uas.port, prefix: '4423', rate: '0.013700' });
  const sub = await w.sub({ markupPct: '0', fund: '5.000000' });
  const run = await uac(
    t,
    w.sipPort,
    uacScenario('uac-tail-answer.xml', { HOLD_MS: '300' }),
    number,
    sub.sipUsername,
    sub.sipPassword,
  );
  await expectExit(t, run, 'a call on the route');
  await expectExit(t, uas, 'answered');
  const [cdr] = await eventually(async () => {
    const rows = await w.d.sql<{ id: string }[]>`select id from cdrs where account_id = ${sub.id}`;
    return rows.length > 0 ? rows : null;
  });
  const accounts = w.d.modules.services.accounts;
  const email = `${randomUUID()}@operator.test`;
  await accounts.createAccount({ email, password: 'correct horse battery staple 42', role: 'admin' });
  const admin = (await accounts.login(email, 'correct horse battery staple 42', {})).accessToken;
  const events = async (accountId: string, event: string) =>
    w.d.sql<
      { data: Record<string, unknown> }[]
    >`select data from events where account_id = ${accountId} and event = ${event} order by id`;
  const health = async () =>
    (await w.api('GET', '/routes/my/listing-health', w.seller.token)).body.data.listings.find(
      (l: { routeId: string }) => l.routeId === r.routeId,
    );

  const noEvidence = await w.api('POST', `/routes/${r.routeId}/reports`, w.operator.token, {
    category: 'false_answer_supervision',
    description: 'answered before ringing',
  });
  t.equal(noEvidence.status, 400);
  t.match(noEvidence.body.error.details, [{ path: '/cdrIds' }]);
  const notMine = await w.api('POST', `/routes/${r.routeId}/reports`, w.seller.token, {
    category: 'fraud',
    description: 'x',
  });
  t.equal(notMine.status, 409, 'a seller does not report its own route');
  const stranger = await w.signUp();
  const foreign = await w.api('POST', `/routes/${r.routeId}/reports`, stranger.token, {
    category: 'poor_quality',
    description: 'x',
    cdrIds: [cdr!.id],
  });
  t.equal(foreign.status, 400, "another buyer's record is no evidence");
  t.match(foreign.body.error.details, [{ path: '/cdrIds/0' }]);

  const filed = await w.api('POST', `/routes/${r.routeId}/reports`, w.operator.token, {
    category: 'false_answer_supervision',
    description: 'answered before ringing',
    cdrIds: [cdr!.id],
  });
  t.equal(filed.status, 201, filed.text);
  const id = filed.body.data.id as string;
  t.match(filed.body.data, {
    role: 'reporter',
    status: 'open',
    evidence: [{ cdrId: cdr!.id, kind: 'voice', toPrefix: '442300', sipCode: 200 }],
  });
  t.notOk(JSON.stringify(filed.body).includes(number), 'the full number is not kept');
  t.equal(
    (
      await w.api('POST', `/routes/${r.routeId}/reports`, w.operator.token, {
        category: 'false_answer_supervision',
        description: 'again',
        cdrIds: [cdr!.id],
      })
    ).status,
    409,
  );
  t.match(await events(w.seller.accountId, 'route.report_received'), [{ data: { reportId: id, evidence: 1 } }]);
  t.match((await health()).issues, ['open_reports']);

  const sellerView = await w.api('GET', `/routes/reports/${id}`, w.seller.token);
  t.match(sellerView.body.data, { role: 'seller', reporterId: null });
  t.notOk(JSON.stringify(sellerView.body).includes(w.operator.accountId), 'the seller never learns the reporter');
  t.equal((await w.api('GET', `/routes/reports/${id}`, stranger.token)).status, 404);
  t.equal(
    (await w.api('POST', `/routes/reports/${id}/resolve`, w.operator.token)).status,
    409,
    'nothing to accept yet',
  );

  const answered = await w.api('POST', `/routes/reports/${id}/answer`, w.seller.token, {
    answer: 'we fixed the early answer',
  });
  t.match(answered.body.data, { status: 'answered', answer: 'we fixed the early answer' });
  t.equal((await events(w.operator.accountId, 'route.report_answered')).length, 1);
  t.equal((await w.api('POST', `/routes/reports/${id}/answer`, w.operator.token, { answer: 'x' })).status, 403);
  const escalated = await w.api('POST', `/routes/reports/${id}/escalate`, w.operator.token, { note: 'still happens' });
  t.equal(escalated.body.data.status, 'escalated');
  t.equal((await w.api('POST', `/routes/reports/${id}/decide`, w.operator.token, { outcome: 'upheld' })).status, 403);
  const decided = await w.api('POST', `/routes/reports/${id}/decide`, admin, {
    outcome: 'upheld',
    note: 'confirmed on CDRs',
  });
  t.equal(decided.status, 200, decided.text);
  t.match(decided.body.data, { status: 'upheld', outcomeNote: 'confirmed on CDRs', role: 'operator' });
  t.match(await events(w.seller.accountId, 'route.report_resolved'), [{ data: { reportId: id, outcome: 'upheld' } }]);
  t.match(await health(), { upheldReports: 1, openReports: 0, issues: ['upheld_reports'] });

  const fraud = await w.api('POST', `/routes/${r.routeId}/reports`, w.operator.token, {
    category: 'fraud',
    description: 'calls we never made',
  });
  t.equal(fraud.status, 201, 'fraud needs no evidence');
  t.equal(
    (await w.api('POST', `/routes/reports/${fraud.body.data.id}/withdraw`, w.operator.token)).body.data.status,
    'withdrawn',
  );
  t.equal((await w.api('POST', `/routes/reports/${fraud.body.data.id}/withdraw`, w.operator.token)).status, 409);
  const quality = await w.api('POST', `/routes/${r.routeId}/reports`, w.operator.token, {
    category: 'poor_quality',
    description: 'one-way audio',
    cdrIds: [cdr!.id],
  });
  await w.api('POST', `/routes/reports/${quality.body.data.id}/answer`, w.seller.token, { answer: 'codec fixed' });
  t.equal(
    (await w.api('POST', `/routes/reports/${quality.body.data.id}/resolve`, w.operator.token)).body.data.status,
    'resolved',
  );

  const page = await w.api('GET', '/routes/reports?role=seller&limit=2', w.seller.token);
  t.equal(page.body.data.length, 2);
  t.equal(page.body.hasMore, true);
  const next = await w.api('GET', `/routes/reports?role=seller&limit=2&cursor=${page.body.nextCursor}`, w.seller.token);
  t.equal(next.body.data.length, 1);
  t.equal((await w.api('GET', '/routes/reports?role=operator', w.seller.token)).status, 403);
  t.equal((await w.api('GET', '/routes/reports?role=operator&status=upheld', admin)).body.data.length, 1);

  t.equal((await w.api('POST', `/routes/${r.routeId}/suspend`, w.seller.token, { reason: 'x' })).status, 403);
  const suspended = await w.api('POST', `/routes/${r.routeId}/suspend`, admin, {
    reason: 'false answer supervision upheld',
  });
  t.equal(suspended.status, 200, suspended.text);
  t.equal(suspended.body.data.status, 'suspended');
  t.equal(
    (await w.api('GET', `/purchases/route-for?number=${number}`, w.operator.token)).status,
    404,
    'no new traffic',
  );
  t.match(await events(w.operator.accountId, 'route.suspended'), [{ data: { routeId: r.routeId, suspended: true } }]);
  t.equal((await events(w.seller.accountId, 'route.suspended')).length, 1);
  t.ok((await health()).issues.includes('suspended'));
  t.equal(
    (await w.api('GET', `/routes/price-number?number=${number}`, w.operator.token)).body.data.total,
    0,
    'left the marketplace',
  );
  t.equal((await w.api('POST', `/routes/${r.routeId}/suspend`, admin, { reason: 'again' })).status, 409);
  const back = await w.api('POST', `/routes/${r.routeId}/reinstate`, admin);
  t.equal(back.body.data.status, 'active');
  t.match((await w.api('GET', `/purchases/route-for?number=${number}`, w.operator.token)).body.data.route, {
    routeId: r.routeId,
  });
});
