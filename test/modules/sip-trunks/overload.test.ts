import t from 'tap';
import { fill, fixture, sipp } from '../../telephony/sip/sipp.js';
import { createWorld, eventually, expectExit, uac, uacScenario, uasAnswer, type Tt, type World } from './world.js';

// Overload control (docs/sip.md, "Overload"): new INVITEs refused with 503 and Retry-After while the
// daemon is overloaded, never an admitted call's in-dialog requests, and admitted again once it is not.

/** One line of the daemon's Prometheus text, as a number (0 when absent). */
async function metric(w: World, line: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${w.d.ports['metrics']}/metrics`);
  const text = await res.text();
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found ? Number(found.slice(line.length + 1)) : 0;
}
const overloadRefusals = (w: World) => metric(w, 'svc_sip_calls_refused_total{cause="overload"}');

/** A caller whose one INVITE must be answered 503 with `Retry-After: 2` (no challenge: refused first). */
const refusedCaller = (w: World, t: Tt, number: string) =>
  uac(t, w.sipPort, uacScenario('uac-tail-final.xml', { FINAL: '503', FINAL_CHECK: 'Retry-After: 2' }, false), number);

/** Blocks this process's event loop (the daemon's) `ms` at a time, in a row, until stopped. */
function busyLoop(ms: number): () => void {
  let on = true;
  const spin = (): void => {
    if (!on) return;
    const end = Date.now() + ms;
    while (Date.now() < end);
    setTimeout(spin, 1);
  };
  setTimeout(spin, 1);
  return () => {
    on = false;
  };
}

/** A whole call to a fresh supplier on its own prefix: admitted, answered, hung up. */
async function admittedCall(
  t: Tt,
  w: World,
  sub: { sipUsername: string; sipPassword: string },
  number: string,
  prefix: string,
): Promise<void> {
  const supplier = await uasAnswer(t, number);
  await w.route({ port: supplier.port, prefix, rate: '0.010000' });
  const call = await uac(
    t,
    w.sipPort,
    uacScenario('uac-tail-answer.xml', { HOLD_MS: '100' }),
    number,
    sub.sipUsername,
    sub.sipPassword,
  );
  await expectExit(t, call, 'a new call is admitted');
  await expectExit(t, supplier, 'and answered');
}

const liveCalls = async (w: World, subId: string) =>
  (
    await w.d.sql<
      { n: number }[]
    >`select count(*)::int as n from calls where account_id = ${subId} and ended_at is null`
  )[0]?.n ?? 0;

t.test('event-loop delay: new INVITEs refused, the admitted call goes on, admitted again after', async (t) => {
  const w = await createWorld(t, {
    // Far above what a loaded machine's scheduling delays a test process by, far below the busy loop's.
    sip: { overload_loop_delay_ms: 100, overload_resume_delay_ms: 20, overload_retry_after_seconds: 2 },
  });
  const number = '441100000001';
  const sub = await w.sub({ fund: '10.000000' });
  const share = () => metric(w, 'svc_sip_overload_refused_share');
  // The daemon's own start (migrations, module construction) can hold the loop long enough to count.
  await eventually(async () => (await share()) === 0);

  // Call A: answered at once; the supplier re-INVITEs 4 s later and the caller hangs up 2 s after
  // that, both while the loop is held busy.
  const reinviteLater = fill(fixture('uas-reinvite.xml'), { EXPECT_USER: number });
  const uasScenario = reinviteLater.replace('<pause milliseconds="50"/>', '<pause milliseconds="4000"/>');
  t.not(uasScenario, reinviteLater, 'uas-reinvite.xml still pauses 50 ms before its re-INVITE');
  const supplier = await sipp(t, uasScenario, []);
  await w.route({ port: supplier.port, prefix: '4411', rate: '0.010000' });
  const callA = await uac(
    t,
    w.sipPort,
    uacScenario('uac-tail-reinvite.xml', { HOLD_MS: '2000' }),
    number,
    sub.sipUsername,
    sub.sipPassword,
  );
  await eventually(async () => (await liveCalls(w, sub.id)) === 1);
  const answered = async () =>
    (await w.d.sql`select 1 from calls where account_id = ${sub.id} and answered_at is not null`).length === 1;
  await eventually(answered);
  t.equal(await overloadRefusals(w), 0, 'nothing refused before');

  const stop = busyLoop(250);
  try {
    await eventually(async () => (await share()) === 1);
    const refusedBefore = await overloadRefusals(w);
    await expectExit(t, await refusedCaller(w, t, number), 'a new INVITE got 503 with Retry-After: 2');
    t.equal((await overloadRefusals(w)) - refusedBefore, 1, 'counted once (its retransmissions are absorbed)');
    t.equal(await liveCalls(w, sub.id), 1, 'no call row for the refused INVITE');
    await expectExit(t, supplier, "the supplier's re-INVITE and the caller's BYE went through");
    await expectExit(t, callA, 'the admitted call ended normally under overload');
    t.equal(await share(), 1, 'still refusing all new INVITEs while the loop is held');
  } finally {
    stop();
  }

  await eventually(async () => (await share()) === 0);
  const [a] = await w.d.sql<{ status: string; cost: string }[]>`
    select status, cost::text from calls where account_id = ${sub.id}`;
  t.match(a, { status: 'completed' }, 'call A billed');

  await admittedCall(t, w, sub, '441300000001', '4413');
});

t.test('setup cap: an INVITE beyond the cap is refused while the first rings; then admitted', async (t) => {
  const w = await createWorld(t, { sip: { overload_max_invites_in_setup: 1, overload_retry_after_seconds: 2 } });
  const number = '441200000001';
  const sub = await w.sub({ fund: '10.000000' });
  // The supplier sends 100 and waits 3 s before ringing: call A stays in setup.
  const supplier = await uasAnswer(t, number, 'u1', 3000);
  await w.route({ port: supplier.port, prefix: '4412', rate: '0.010000' });
  const callA = await uac(
    t,
    w.sipPort,
    uacScenario('uac-tail-answer.xml', { HOLD_MS: '100' }),
    number,
    sub.sipUsername,
    sub.sipPassword,
  );
  await eventually(async () => (await liveCalls(w, sub.id)) === 1);
  const before = await overloadRefusals(w);
  await expectExit(t, await refusedCaller(w, t, number), 'a second INVITE got 503 with Retry-After: 2');
  t.equal((await overloadRefusals(w)) - before, 1);
  await expectExit(t, callA, 'the call in setup was answered and ended');
  await expectExit(t, supplier, 'by the supplier');

  await admittedCall(t, w, sub, '441400000001', '4414');
});
