/**
 * A revenue share call live when its daemon is SIGKILLed: the next start of that daemon records it
 * once, ended at its last heartbeat (cause `crash`), and credits it through the ledger to the sixth
 * decimal; a later reconcile on another daemon finds nothing left to do.
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import t from 'tap';
import { loadConfig } from '../../../src/config/load.js';
import { startDaemon } from '../../../src/daemon.js';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { checkInvariants } from '../../ledger/helpers.js';
import { sipp } from '../../telephony/sip/sipp.js';
import { eventually } from '../sip-trunks/world.js';
import { childDaemonConfig, spawnChildDaemon } from '../sip-trunks/child-daemon.js';

async function account(d: TestDaemon, role?: 'admin') {
  const a = await d.modules.services.accounts.createAccount({
    email: `${randomUUID()}@revshare.test`,
    password: 'correct horse battery',
    ...(role ? { role } : {}),
  });
  return { id: a.id, key: (await d.modules.services.keys.create(a.id, { mode: 'live' })).secret };
}

async function api(d: TestDaemon, method: 'GET' | 'POST', url: string, key: string, body?: object) {
  const r = await d.app.inject({
    method,
    url: `/api/v1${url}`,
    headers: { authorization: `Bearer ${key}` },
    ...(body === undefined ? {} : { payload: body }),
  });
  return { status: r.statusCode, json: r.json() as { data: Record<string, unknown> & { id: string } }, text: r.body };
}

/** A supplier trunk's caller from a UK number (origin 44) that answers, ACKs and stays up. */
const caller = `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="revenue share caller, stays up">
  <send retrans="500">
    <![CDATA[
      INVITE sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:447700900001@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>
      Call-ID: [call_id]
      CSeq: 1 INVITE
      Contact: <sip:sipp@[local_ip]:[local_port];transport=[transport]>
      Max-Forwards: 70
      Content-Type: application/sdp
      Content-Length: [len]

      v=0
      o=- 1 1 IN IP4 [local_ip]
      s=caller
      c=IN IP4 [media_ip]
      t=0 0
      m=audio [media_port] RTP/AVP 8
      a=rtpmap:8 PCMA/8000
    ]]>
  </send>
  <recv response="100" optional="true"/>
  <recv response="180" optional="true"/>
  <recv response="200"/>
  <send>
    <![CDATA[
      ACK sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:447700900001@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 1 ACK
      Max-Forwards: 70
      Content-Length: 0
    ]]>
  </send>
  <pause milliseconds="120000"/>
</scenario>`;

t.test('a revenue share call live when the daemon dies is recorded once by the next start', async (t) => {
  const d = await startTestDaemon(t);
  const sql = d.sql;
  const operator = await account(d, 'admin');
  const supplier = await account(d);
  const holder = await account(d);
  const made = await api(d, 'POST', '/revenue-share/ranges', operator.key, {
    supplierId: supplier.id,
    name: 'Latvia IPRN 3713',
    countryCode: 'LV',
    country: 'Latvia',
    prefix: '3713',
    numberType: 'iprn',
    ratePerMinute: '0.120000',
    payouts: [{ origin: '44', payoutPerMinute: '0.080000' }],
    sourceIps: ['127.0.0.1'],
  });
  t.equal(made.status, 201, made.text);
  const loaded = await api(d, 'POST', `/revenue-share/ranges/${made.json.data.id}/numbers`, supplier.key, {
    numbers: ['37130000001'],
  });
  t.equal(loaded.status, 201, loaded.text);
  const got = await api(d, 'POST', '/revenue-share/numbers', holder.key, {
    rangeId: made.json.data.id,
    quantity: 1,
  });
  t.equal(got.status, 201, got.text);

  const overrides = childDaemonConfig(t, d.config.database.url);
  const child = await spawnChildDaemon(t, overrides);
  await sipp(t, caller, ['-s', '37130000001', `127.0.0.1:${child.ports['sip']!}`], { timeout: '150s' });
  const [live] = await eventually(async () => {
    const rows = await sql<{ answeredAt: Date }[]>`select answered_at from revshare_live_calls`;
    return rows.length > 0 ? rows : null;
  }, 30_000);
  await child.kill();
  t.equal((await sql`select 1 from revshare_calls`).length, 0, 'the dead daemon recorded nothing');
  // Its last heartbeat, as if seen 125 s after the answer: the call is billed to there.
  await sql`update revshare_live_calls set last_seen_at = answered_at + interval '125 seconds'`;

  const again = await startDaemon(loadConfig({ overrides }), { log: pino({ level: 'silent' }) });
  t.teardown(() => again.stop());
  const calls = await sql<
    {
      durationSeconds: number;
      billedSeconds: number;
      charge: string;
      payout: string;
      status: string;
      hangupCause: string;
      answeredAt: Date;
    }[]
  >`select duration_seconds, billed_seconds, charge::text, payout::text, status, hangup_cause, answered_at from revshare_calls`;
  t.equal(calls.length, 1, 'recorded at start');
  t.match(calls[0], {
    durationSeconds: 125,
    billedSeconds: 125,
    charge: '0.250000',
    payout: '0.166667',
    status: 'held',
    hangupCause: 'crash',
  });
  t.equal(calls[0]!.answeredAt.getTime(), live!.answeredAt.getTime());
  t.equal((await sql`select 1 from revshare_live_calls`).length, 0, 'no live row left');
  // The call in the shared CDR table too, for the holder, with no money on it (the ledger has it).
  const cdrs = await sql<
    {
      accountId: string;
      direction: string;
      source: string;
      status: string;
      durationSeconds: number;
      buyerCost: string;
      sellerCredit: string;
      hangupCause: string;
    }[]
  >`select account_id, direction, source, status, duration_seconds, buyer_cost::text, seller_credit::text, hangup_cause
    from cdrs where call_uuid = (select id from revshare_calls)`;
  t.same(cdrs, [
    {
      accountId: holder.id,
      direction: 'inbound',
      source: 'revenue_share',
      status: 'completed',
      durationSeconds: 125,
      buyerCost: '0.000000',
      sellerCredit: '0.000000',
      hangupCause: 'crash',
    },
  ]);
  const listed = await api(d, 'GET', '/billing/cdrs', holder.key);
  t.equal(listed.status, 200, listed.text);
  t.equal((listed.json.data as unknown as unknown[]).length, 1, "the holder's CDR list shows the call");
  const [held] = await sql<{ b: string }[]>`
    select balance::text as b from ledger_accounts where owner_id = ${holder.id} and kind = 'revshare_held'`;
  t.equal(held!.b, '0.166667', 'the holder earned the payout, held');

  // Another daemon's reconcile (and this one's again) find nothing: recorded exactly once.
  t.equal(await d.modules.services.revenueShare.crash.reconcile({ atStart: true }), 0);
  t.equal(await again.modules.services.revenueShare.crash.reconcile({ atStart: true }), 0);
  t.equal((await sql`select 1 from revshare_calls`).length, 1);
  t.equal((await sql`select 1 from cdrs`).length, 1, 'and one CDR');
  await checkInvariants(t as never, sql);
});
