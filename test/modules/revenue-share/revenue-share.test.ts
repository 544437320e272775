/**
 * Revenue share numbers end to end on one daemon: a range opened by the operator for a supplier,
 * numbers loaded and allocated, real INVITEs from a sipp supplier trunk answered by the exchange,
 * timed on the injected clock, credited through the ledger to the sixth decimal, released after the
 * hold, a fraud rule tripped and its flag confirmed (clawback), test numbers, statistics, CDRs,
 * export and the group's 26 operations in the OpenAPI description.
 */
import { once } from 'node:events';
import t from 'tap';
import { createManualClock } from '../../../src/platform/clock.js';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { sipp } from '../../telephony/sip/sipp.js';

const clock = createManualClock(new Date('2026-11-02T10:00:00Z'));

async function account(d: TestDaemon, email: string, role?: 'admin') {
  const a = await d.modules.services.accounts.createAccount({
    email,
    password: 'correct horse battery',
    ...(role ? { role } : {}),
  });
  return { id: a.id, key: (await d.modules.services.keys.create(a.id, { mode: 'live' })).secret };
}

async function api(d: TestDaemon, method: string, url: string, key: string, body?: unknown) {
  const r = await d.app.inject({
    method: method as 'GET',
    url: `/api/v1${url}`,
    headers: { authorization: `Bearer ${key}` },
    ...(body === undefined ? {} : { payload: body as object }),
  });
  let json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  try {
    json = r.json();
  } catch {
    json = null;
  }
  return { status: r.statusCode, json, text: r.body };
}

/** One request of a sipp UAC dialog from `from`; `dialog` adds the To tag our answer gave. */
function request(method: string, cseq: number, from: string, opts: { dialog?: boolean; offer?: boolean } = {}): string {
  const lines = [
    `${method} sip:[service]@[remote_ip]:[remote_port] SIP/2.0`,
    'Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]',
    `From: <sip:${from}@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]`,
    `To: <sip:[service]@[remote_ip]:[remote_port]>${opts.dialog ? '[peer_tag_param]' : ''}`,
    'Call-ID: [call_id]',
    `CSeq: ${cseq} ${method}`,
    ...(method === 'INVITE' ? ['Contact: <sip:sipp@[local_ip]:[local_port];transport=[transport]>'] : []),
    'Max-Forwards: 70',
  ];
  // A G.711 A-law offer (the exchange answers PCMU or PCMA).
  const sdp = [
    'v=0',
    'o=- 1 1 IN IP4 [local_ip]',
    's=caller',
    'c=IN IP4 [media_ip]',
    't=0 0',
    'm=audio [media_port] RTP/AVP 8',
    'a=rtpmap:8 PCMA/8000',
  ];
  const tail = opts.offer
    ? ['Content-Type: application/sdp', 'Content-Length: [len]', '', ...sdp]
    : ['Content-Length: 0', '', ''];
  return `  <send${method === 'ACK' ? '' : ' retrans="500"'}>\n    <![CDATA[\n${[...lines, ...tail].map((l) => `      ${l}`).join('\n')}\n    ]]>\n  </send>`;
}

/** A supplier trunk's UAC: INVITE with an SDP offer from `from`, ACK, hold, BYE. */
const uac = (from: string, holdMs: number) => `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="revenue share caller">
${request('INVITE', 1, from, { offer: true })}
  <recv response="100" optional="true"/>
  <recv response="180" optional="true"/>
  <recv response="200" rtd="true"/>
${request('ACK', 1, from, { dialog: true })}
  <pause milliseconds="${holdMs}"/>
${request('BYE', 2, from, { dialog: true })}
  <recv response="200" crlf="true"/>
</scenario>`;

/** A UAC whose INVITE is refused: expects `code`, ACKs it. */
const refused = (code: number) => `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="refused ${code}">
${request('INVITE', 1, '447700900001', { offer: true })}
  <recv response="100" optional="true"/>
  <recv response="${code}"/>
${request('ACK', 1, '447700900001', { dialog: true })}
</scenario>`;

t.test('revenue share numbers: ranges, real calls, earnings, release, fraud, reads', async (t) => {
  const d = await startTestDaemon(t, {}, { clock });
  const sipPort = d.ports['sip']!;
  const rs = d.modules.services.revenueShare;
  const operator = await account(d, 'rs-operator@example.com', 'admin');
  const supplier = await account(d, 'rs-supplier@example.com');
  const holder = await account(d, 'rs-holder@example.com');
  const other = await account(d, 'rs-other@example.com');

  /** Places one call with sipp; advances the clock by `seconds` while it is up; resolves with the recorded call id. */
  async function call(number: string, from: string, seconds: number): Promise<string> {
    const recorded = once(rs.answering.events, 'recorded');
    const answered = once(rs.answering.events, 'answered');
    const peer = await sipp(t, uac(from, 1500), ['-s', number, `127.0.0.1:${sipPort}`]);
    const first = await Promise.race([answered.then(() => 'answered'), peer.exited.then(() => 'exited')]);
    if (first === 'exited') {
      t.fail(`the call to ${number} was not answered`, { output: peer.output() });
      throw new Error('not answered');
    }
    clock.advance(seconds * 1000);
    const [id] = (await recorded) as [string];
    const code = await peer.exited;
    if (code !== 0) t.comment(peer.output());
    t.equal(code, 0, `sipp call to ${number} completed`);
    return id;
  }

  const ledgerBalance = async (owner: string, kind: string) => {
    const [r] = await d.sql<{ b: string | null }[]>`
      select balance::text as b from ledger_accounts where owner_id = ${owner} and kind = ${kind}`;
    return r?.b ?? '0.000000';
  };

  // The operator opens a range for the supplier; only the operator may.
  const body = {
    supplierId: supplier.id,
    name: 'Latvia IPRN 3712',
    countryCode: 'lv',
    country: 'Latvia',
    prefix: '3712',
    numberType: 'iprn',
    ratePerMinute: '0.120000',
    payouts: [
      { origin: '', payoutPerMinute: '0.050000' },
      { origin: '44', payoutPerMinute: '0.080000' },
    ],
    holdDays: 7,
    sourceIps: ['127.0.0.1'],
  };
  t.equal(
    (await api(d, 'POST', '/revenue-share/ranges', supplier.key, body)).status,
    403,
    'a supplier cannot open a range',
  );
  const bad = await api(d, 'POST', '/revenue-share/ranges', operator.key, {
    ...body,
    payouts: [{ origin: '', payoutPerMinute: '0.200000' }],
  });
  t.equal(bad.status, 400, 'a payout above the rate is refused');
  t.equal(bad.json.error.details[0].path, 'payouts/0/payoutPerMinute');
  const made = await api(d, 'POST', '/revenue-share/ranges', operator.key, body);
  t.equal(made.status, 201, 'range opened');
  const range = made.json.data;
  t.equal(range.countryCode, 'LV');
  t.equal(range.bestPayoutPerMinute, '0.080000');
  t.same(
    range.payouts.map((p: { origin: string }) => p.origin),
    ['44', ''],
    'payout rows longest origin first',
  );
  t.equal((await api(d, 'POST', '/revenue-share/ranges', operator.key, body)).status, 409, 'same prefix twice: 409');

  // The supplier loads numbers and a test number.
  const loaded = await api(d, 'POST', `/revenue-share/ranges/${range.id}/numbers`, supplier.key, {
    numbers: ['37120000001', '37120000002', '37120000003'],
  });
  t.same(loaded.json.data, { added: 3, skipped: [] });
  const wrong = await api(d, 'POST', `/revenue-share/ranges/${range.id}/numbers`, supplier.key, {
    numbers: ['37130000001'],
  });
  t.equal(wrong.json.error.details[0].path, 'numbers/0', 'a number outside the prefix is named');
  t.equal(
    (await api(d, 'POST', `/revenue-share/ranges/${range.id}/numbers`, holder.key, { numbers: ['37120000009'] }))
      .status,
    404,
    'only the supplier (or operator) loads numbers',
  );
  await api(d, 'POST', `/revenue-share/ranges/${range.id}/numbers`, supplier.key, {
    numbers: ['37129999999'],
    test: true,
  });

  // Catalogue reads.
  const cat = await api(d, 'GET', '/revenue-share/ranges?countryCode=LV', holder.key);
  t.equal(cat.json.data.length, 1);
  t.equal(cat.json.data[0].available, 3);
  t.same(cat.json.data[0].testNumbers, ['37129999999']);
  t.notOk('ratePerMinute' in cat.json.data[0], "holders do not see the supplier's rate");
  const mine = await api(d, 'GET', '/revenue-share/ranges?as=supplier', supplier.key);
  t.equal(mine.json.data[0].ratePerMinute, '0.120000');
  const countries = await api(d, 'GET', '/revenue-share/countries', holder.key);
  t.same(countries.json.data, [
    { countryCode: 'LV', country: 'Latvia', ranges: 1, available: 3, bestPayoutPerMinute: '0.080000' },
  ]);
  t.equal((await api(d, 'GET', `/revenue-share/ranges/${range.id}`, holder.key)).status, 200);
  const tests = await api(d, 'GET', '/revenue-share/test-numbers?countryCode=lv', holder.key);
  t.equal(tests.json.data[0].number, '37129999999');

  // Allocation: all or nothing.
  t.equal(
    (await api(d, 'POST', '/revenue-share/numbers', holder.key, { rangeId: range.id, quantity: 4 })).status,
    409,
    'more than the free numbers: 409',
  );
  const alloc = await api(d, 'POST', '/revenue-share/numbers', holder.key, { rangeId: range.id, quantity: 2 });
  t.equal(alloc.status, 201);
  const [n1, n2] = (alloc.json.data as { id: string; number: string }[]).sort((a, b) =>
    a.number.localeCompare(b.number),
  );
  t.equal(n1!.number, '37120000001');
  const patched = await api(d, 'PATCH', `/revenue-share/numbers/${n1!.id}`, holder.key, { label: 'main' });
  t.equal(patched.json.data.label, 'main');
  t.equal((await api(d, 'GET', `/revenue-share/numbers/${n1!.id}`, other.key)).status, 404, "another's number: 404");
  t.equal((await api(d, 'GET', '/revenue-share/numbers', holder.key)).json.data.length, 2);

  // A call from a UK origin: 125 answered seconds at 0.08/min payout and 0.12/min charge.
  await rs.reload();
  const c1 = await call(n1!.number, '447700900123', 125);
  const cdrs = await api(d, 'GET', '/revenue-share/cdrs', holder.key);
  t.equal(cdrs.status, 200);
  const cdr = cdrs.json.data.find((c: { id: string }) => c.id === c1);
  t.match(cdr, {
    number: '37120000001',
    fromNumber: '447700900123',
    origin: '44',
    durationSeconds: 125,
    billedSeconds: 125,
    payoutPerMinute: '0.080000',
    payout: '0.166667',
    status: 'held',
    sipCode: 200,
    hangupCause: 'caller-bye',
  });
  t.notOk('charge' in cdr, 'holders do not see the charge');
  const supplierCdrs = await api(d, 'GET', '/revenue-share/cdrs?as=supplier', supplier.key);
  t.equal(supplierCdrs.json.data[0].charge, '0.250000', 'the supplier sees what it owes: 125 s at 0.12');
  t.equal(await ledgerBalance(holder.id, 'revshare_held'), '0.166667', 'held earnings in the ledger');
  const [spread] = await d.sql<{ s: string }[]>`
    select sum(amount)::text as s from entries where related_entity_id = ${c1} and account_kind = 'platform_revenue'`;
  t.equal(spread!.s, '0.083333', 'the platform keeps the spread');
  const [zero] = await d.sql<{ s: string }[]>`
    select sum(amount)::text as s from entries where posting_id = (select posting_id from revshare_calls where id = ${c1})`;
  t.equal(zero!.s, '0.000000', "the call's posting sums to zero");

  // A test number answers anyone's test call and earns nothing.
  await call('37129999999', '33612345678', 10);
  const testCalls = await api(d, 'GET', '/revenue-share/test-calls', other.key);
  t.match(testCalls.json.data[0], {
    testNumber: '37129999999',
    fromNumber: '336*****678',
    answered: true,
    durationSeconds: 10,
  });

  // A call from an address that is not the range's supplier: 403, nothing recorded.
  const [addr] = await d.sql<{ n: string }[]>`select count(*)::text as n from revshare_calls`;
  await d.sql`update revshare_ranges set source_ips = '{192.0.2.1}' where id = ${range.id}`;
  await rs.reload();
  const refusedPeer = await sipp(t, refused(403), ['-s', n2!.number, `127.0.0.1:${sipPort}`]);
  t.equal(await refusedPeer.exited, 0, 'INVITE from another address: 403');
  await d.sql`update revshare_ranges set source_ips = '{127.0.0.1}' where id = ${range.id}`;
  await rs.reload();
  const [after] = await d.sql<{ n: string }[]>`select count(*)::text as n from revshare_calls`;
  t.equal(after!.n, addr!.n, 'the refused call is not recorded');

  // Statistics.
  const summary = await api(d, 'GET', '/revenue-share/stats/summary', holder.key);
  t.match(summary.json.data, { calls: 1, answered: 1, earned: '0.166667', flagged: '0.000000' });
  const byOrigin = await api(d, 'GET', '/revenue-share/stats?groupBy=origin', holder.key);
  t.match(byOrigin.json.data.rows, [{ key: '44', calls: 1, minutes: 2.08 }]);
  const byCountry = await api(d, 'GET', '/revenue-share/stats?groupBy=country&as=supplier', supplier.key);
  t.match(byCountry.json.data.rows, [{ key: 'LV', label: 'Latvia', charged: '0.250000' }]);
  const csv = await api(d, 'GET', '/revenue-share/cdrs/export', holder.key);
  t.match(csv.text.split('\n')[0], /^id,numberId,number,/, 'CSV header');
  t.match(csv.text, /0\.166667/);

  // Release after the hold: held → payable.
  t.equal(await rs.earnings.runReleases(), 0, 'nothing due before the hold ends');
  clock.advance(8 * 86_400_000);
  t.equal(await rs.earnings.runReleases(), 1, 'one holder released');
  t.equal(await ledgerBalance(holder.id, 'revshare_held'), '0.000000');
  t.equal(await ledgerBalance(holder.id, 'seller_payable'), '0.166667', 'released to the payable balance');
  const earned = await api(d, 'GET', '/revenue-share/earnings', holder.key);
  t.match(earned.json.data, {
    held: '0.000000',
    released: '0.166667',
    recentReleases: [{ amount: '0.166667', calls: 1 }],
  });

  // Fraud: the supplier allows one call per source; a second from the same caller trips velocity_source.
  const rules = await api(d, 'PUT', `/revenue-share/ranges/${range.id}/fraud-rules`, supplier.key, {
    maxCallsPerSource: 1,
  });
  t.equal(rules.json.data.maxCallsPerSource, 1);
  t.equal(
    (await api(d, 'GET', `/revenue-share/fraud-rules?rangeId=${range.id}`, holder.key)).json.data.maxCallsPerSource,
    1,
  );
  await call(n2!.number, '15550001111', 60); // payout 0.05 (any origin)
  await call(n2!.number, '15550001111', 30);
  const flags = await api(d, 'GET', '/revenue-share/fraud-flags', holder.key);
  t.equal(flags.json.data.length, 1, 'one flag');
  const flag = flags.json.data[0];
  t.match(flag, { rule: 'velocity_source', status: 'open', calls: 2, payout: '0.075000' });
  t.equal((await api(d, 'GET', `/revenue-share/numbers/${n2!.id}`, holder.key)).json.data.openFlag, flag.id);
  const [event] = await d.sql<{ n: string }[]>`
    select count(*)::text as n from events where account_id = ${holder.id} and event = 'revenue_share.fraud_flagged'`;
  t.equal(event!.n, '1', 'the holder is notified through the outbox');
  t.equal(await ledgerBalance(holder.id, 'revshare_held'), '0.075000');
  t.equal(
    (await api(d, 'POST', `/revenue-share/fraud-flags/${flag.id}/resolve`, holder.key, { action: 'clear' })).status,
    403,
    'the holder cannot clear its own flag',
  );
  const confirmed = await api(d, 'POST', `/revenue-share/fraud-flags/${flag.id}/resolve`, supplier.key, {
    action: 'confirm',
    note: 'one caller looping',
  });
  t.match(confirmed.json.data, { status: 'confirmed', calls: 2, payout: '0.075000' });
  t.equal(await ledgerBalance(holder.id, 'revshare_held'), '0.000000', 'clawed back');
  t.equal(
    (await api(d, 'POST', `/revenue-share/fraud-flags/${flag.id}/resolve`, supplier.key, { action: 'clear' })).status,
    409,
    'a resolved flag: 409',
  );
  const [sum] = await d.sql<{ s: string }[]>`select coalesce(sum(amount), 0)::text as s from entries`;
  t.equal(Number(sum!.s), 0, 'every entry of the ledger sums to zero');

  // Supplier payment (operator only).
  t.equal(
    (
      await api(d, 'POST', '/revenue-share/supplier-payments', supplier.key, {
        rangeId: range.id,
        periodEnd: '2026-11-30',
        amount: '0.250000',
      })
    ).status,
    403,
  );
  const paid = await api(d, 'POST', '/revenue-share/supplier-payments', operator.key, {
    rangeId: range.id,
    periodEnd: '2026-11-30',
    amount: '0.250000',
    reference: 'wire 2026-11',
  });
  t.match(paid.json.data, { charged: '0.250000', paid: '0.250000', outstanding: '0.000000' });

  // Settings and release of a number.
  const s = await api(d, 'PUT', '/revenue-share/settings', holder.key, {
    ringSeconds: 2,
    defaultMaxCallSeconds: 600,
    notifyFraud: false,
  });
  t.same(s.json.data, { ringSeconds: 2, defaultMaxCallSeconds: 600, notifyFraud: false });
  t.same((await api(d, 'GET', '/revenue-share/settings', holder.key)).json.data, s.json.data);
  t.same((await api(d, 'POST', `/revenue-share/numbers/${n2!.id}/release`, holder.key)).json.data, {
    id: n2!.id,
    released: true,
  });
  const inv = await api(d, 'GET', `/revenue-share/ranges/${range.id}/numbers?state=allocated`, supplier.key);
  t.equal(inv.json.data.length, 1, 'one number still allocated');
  const paused = await api(d, 'PATCH', `/revenue-share/ranges/${range.id}`, supplier.key, { status: 'paused' });
  t.equal(paused.json.data.status, 'paused');
  t.equal(
    (await api(d, 'GET', '/revenue-share/ranges', holder.key)).json.data.length,
    0,
    'a paused range leaves the catalogue',
  );

  // The group in the OpenAPI description: 26 operations, each tagged exactly with the group name.
  const doc = (await d.https('GET', '/docs/json')).json as {
    paths: Record<string, Record<string, { tags?: string[] }>>;
  };
  const ops = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods)
      .filter(([, op]) => op.tags?.includes('Revenue share numbers'))
      .map(([m, op]) => ({ op: `${m.toUpperCase()} ${path}`, tags: op.tags })),
  );
  t.equal(ops.length, 26, '26 operations');
  t.ok(
    ops.every((o) => o.tags!.length === 1),
    'tagged only with the group',
  );
});
