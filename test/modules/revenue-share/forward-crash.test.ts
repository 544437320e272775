/**
 * A revenue share number forwarded over the holder's route, live when its daemon is SIGKILLed: the
 * next start records the A leg once (earning, `crash`) and settles the B leg once (the holder's
 * outbound call, `crash`): one record per leg, each to its own last heartbeat; later reconciles on
 * either daemon find nothing.
 *
 * Money (both legs last seen 7 s after the answer): the A leg at the range's 0.120000/min per second,
 * 0.014000 charged, the holder's payout 0.060000/min = 0.007000 held; the B leg over the holder's
 * route 0.013700 + fee 0.002000 = 0.015700/min at 6/6: 7 s billed as 12 s = 0.003140 (seller 0.002740).
 */
import { Decimal } from 'decimal.js';
import pino from 'pino';
import t from 'tap';
import { loadConfig } from '../../../src/config/load.js';
import { startDaemon } from '../../../src/daemon.js';
import { checkInvariants } from '../../ledger/helpers.js';
import { sipp } from '../../telephony/sip/sipp.js';
import { childDaemonConfig, spawnChildDaemon } from '../sip-trunks/child-daemon.js';
import { createWorld, eventually } from '../sip-trunks/world.js';
import { caller, mediaSink } from './caller.js';
import { forwardedRevshareNumber } from './forward-world.js';

t.test('a forwarded revenue share call killed mid-call: one record per leg, each once', async (t) => {
  const w = await createWorld(t);
  const { sql } = w.d;
  const { ledger } = w.d.modules.services;
  const { routeId, number } = await forwardedRevshareNumber(w, t, {
    tag: 'fwd-crash',
    prefix: '3715',
    numbers: ['37150000001'],
    target: '+447700900125',
    // The answering sipp starts now; the child daemon it answers for starts after it, which takes
    // over sipp's default 15 s on a loaded machine.
    uasTimeout: '120s',
  });
  const holder0 = await ledger.balanceOf(w.operator.accountId);

  const overrides = childDaemonConfig(t, w.d.config.database.url);
  const child = await spawnChildDaemon(t, overrides);
  const sink = await mediaSink(t);
  const run = await sipp(t, caller(sink.port, 60_000), ['-s', number.number, `127.0.0.1:${child.ports['sip']!}`], {
    timeout: '120s',
  });
  const up = async () => ({
    aLeg: (await sql`select 1 from revshare_live_calls`).length,
    bLeg: (await sql`select status from calls where account_id = ${w.operator.accountId}`).map((r) => r['status']),
    why: await sql`select hangup_reason, error, attempts from calls where account_id = ${w.operator.accountId}`,
  });
  const seen = await eventually(async () => {
    const u = await up();
    return u.aLeg > 0 && u.bLeg.includes('answered') ? u : null;
  }, 60_000).catch(up);
  if (seen.aLeg === 0) t.comment(JSON.stringify(seen.why));
  t.match(seen, { aLeg: 1, bLeg: ['answered'] }, 'both legs up on the daemon about to die', {
    output: run.output().slice(-1500),
  });
  await child.kill();
  t.equal((await sql`select 1 from revshare_calls`).length, 0, 'the dead daemon recorded no A leg');
  await sql`update revshare_live_calls set last_seen_at = answered_at + interval '7 seconds'`;
  await sql`update calls set last_seen_at = answered_at + interval '7 seconds' where account_id = ${w.operator.accountId}`;

  const again = await startDaemon(loadConfig({ overrides }), { log: pino({ level: 'silent' }) });
  t.teardown(() => again.stop());

  const a = await sql<{ billedSeconds: number; charge: string; payout: string; hangupCause: string }[]>`
    select billed_seconds, charge::text, payout::text, hangup_cause from revshare_calls`;
  t.same(a, [{ billedSeconds: 7, charge: '0.014000', payout: '0.007000', hangupCause: 'crash' }], 'the A leg once');
  const cdrs = () =>
    sql<
      {
        accountId: string;
        direction: string;
        source: string;
        routeId: string | null;
        hangupCause: string;
        billedSeconds: number | null;
        buyerCost: string;
        sellerCredit: string;
      }[]
    >`select account_id, direction, source, route_id, hangup_cause, billed_seconds, buyer_cost::text,
             seller_credit::text
      from cdrs order by source, direction`;
  t.match(await cdrs(), [
    {
      accountId: w.operator.accountId,
      direction: 'inbound',
      source: 'revenue_share',
      hangupCause: 'crash',
      buyerCost: '0.000000',
    },
    {
      accountId: w.operator.accountId,
      direction: 'outbound',
      source: 'trunk',
      routeId,
      hangupCause: 'crash',
      billedSeconds: 12,
      buyerCost: '0.003140',
      sellerCredit: '0.002740',
    },
  ]);
  t.equal((await cdrs()).length, 2, 'one CDR per leg');
  const holder = await ledger.balanceOf(w.operator.accountId);
  t.equal(holder.balance, new Decimal(holder0.balance).minus('0.003140').toFixed(6), 'the B leg paid once');
  t.equal(holder.held, '0.000000', 'no hold left');
  const [held] = await sql<{ b: string }[]>`
    select balance::text as b from ledger_accounts where owner_id = ${w.operator.accountId} and kind = 'revshare_held'`;
  t.equal(held?.b, '0.007000', 'the A leg earned once, held');

  t.equal(await again.modules.services.revenueShare.crash.reconcile({ atStart: true }), 0);
  t.equal(await w.d.modules.services.revenueShare.crash.reconcile({ atStart: true }), 0);
  t.equal(await again.modules.services.calls.reconcileOrphans({ atStart: true }), 0);
  t.equal(await w.d.modules.services.calls.reconcileOrphans({ atStart: true }), 0);
  t.equal((await cdrs()).length, 2, 'still one CDR per leg');
  await checkInvariants(t as never, sql);
});
