import t from 'tap';
import { createWorld, eventually, expectExit, uac, uacScenario, uasAnswer } from './world.js';

// Min-SE lowered to 2 s so a session can expire within a test; RFC 4028 default is 90.
const SIP = { host: '127.0.0.1', port: 0, options_interval_seconds: 3600, session_min_se_seconds: 2 };
const timerHeaders = (se: number) => 'Supported: timer\n      Session-Expires: ' + se + ';refresher=uac';

t.test('RFC 4028 session timers on a trunk call', async (t) => {
  const w = await createWorld(t, { sip: SIP });
  const sql = w.d.sql;

  await t.test('refreshes are answered here; when they stop, the call ends and is billed to then', async (t) => {
    const number = '448000000001';
    // This supplier takes no re-INVITE or UPDATE: a relayed refresh would fail its scenario.
    const uas = await uasAnswer(t, number);
    await w.route({ port: uas.port, prefix: '4480', rate: '0.013700' });
    const sub = await w.sub({ markupPct: '0', fund: '1.000000' });
    const scenario = uacScenario('uac-tail-refresh.xml', {
      EXTRA_HEADERS: timerHeaders(4),
      SE: '4',
      REFRESH_MS: '1200',
    });
    const run = await uac(t, w.sipPort, scenario, number, sub.sipUsername, sub.sipPassword);
    await expectExit(t, run, 'caller got Session-Expires, two refreshes answered, then a BYE from the exchange');
    await expectExit(t, uas, 'the supplier saw no refresh and got the BYE');
    const call = await eventually(async () => {
      const [c] = await sql<
        { id: string; hangupCause: string; durationSeconds: number; cost: string; status: string }[]
      >`
        select id, hangup_cause, duration_seconds, cost::text, status from calls where account_id = ${sub.id} and ended_at is not null`;
      return c;
    });
    t.match(call, { status: 'completed', hangupCause: 'session-expired' });
    // Two refreshes 1.2 s apart, then 4 − 4/3 s without one: about 5 s, one 6 s block.
    t.ok(call.durationSeconds >= 4 && call.durationSeconds <= 6, `duration ${call.durationSeconds} s`);
    t.equal(call.cost, '0.001570');
    const b = await w.d.modules.services.ledger.balanceOf(sub.id);
    t.same([b.balance, b.held], ['0.998430', '0.000000']);
  });

  await t.test('refresher=uas: the exchange refreshes the caller by re-INVITE with the same SDP', async (t) => {
    const number = '448100000003';
    const uas = await uasAnswer(t, number);
    await w.route({ port: uas.port, prefix: '4481', rate: '0.013700' });
    const sub = await w.sub({ markupPct: '0', fund: '1.000000' });
    const headers = 'Supported: timer\n      Session-Expires: 4;refresher=uas';
    const run = await uac(
      t,
      w.sipPort,
      uacScenario('uac-tail-refreshed.xml', { EXTRA_HEADERS: headers, SE: '4' }),
      number,
      sub.sipUsername,
      sub.sipPassword,
    );
    await expectExit(t, run, 'caller was refreshed at half the interval, answered, then hung up');
    await expectExit(t, uas, 'the supplier saw no refresh');
    const call = await eventually(async () => {
      const [c] = await sql<
        { hangupCause: string }[]
      >`select hangup_cause from calls where account_id = ${sub.id} and ended_at is not null`;
      return c;
    });
    t.equal(call.hangupCause, 'caller-bye');
  });

  await t.test('a Session-Expires below our Min-SE gets 422 with Min-SE, nothing planned', async (t) => {
    const sub = await w.sub({ fund: '1.000000' });
    const scenario = uacScenario('uac-tail-final.xml', {
      EXTRA_HEADERS: timerHeaders(1),
      FINAL: '422',
      FINAL_CHECK: 'Min-SE: 2',
    });
    const run = await uac(t, w.sipPort, scenario, '448000000002', sub.sipUsername, sub.sipPassword);
    await expectExit(t, run, 'caller got 422 with Min-SE: 2');
    const [n] = await sql<{ n: string }[]>`select count(*)::text as n from calls where account_id = ${sub.id}`;
    t.equal(n?.n, '0');
  });
});
