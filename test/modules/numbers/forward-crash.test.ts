import t from 'tap';
import { Decimal } from 'decimal.js';
import pino from 'pino';
import { loadConfig } from '../../../src/config/load.js';
import { startDaemon } from '../../../src/daemon.js';
import { checkInvariants } from '../../ledger/helpers.js';
import { childDaemonConfig, spawnChildDaemon } from '../sip-trunks/child-daemon.js';
import * as trunk from '../sip-trunks/world.js';
import { rentedNumber } from './rented.js';

/**
 * A forwarded number call live when its daemon is SIGKILLed: the next start settles both legs of it
 * once, to the last heartbeat (cause `crash`), from the one hold; another reconcile finds nothing.
 *
 * Money (last seen 7 s after the answer; numbers' platform fee 10 %):
 *   forward leg over the renter's route 0.013700 + fee 0.002000 = 0.015700/min at 6/6: 7 s billed as
 *   12 s = 0.003140 (route seller 0.002740, platform 0.000400);
 *   inbound leg at the number's 0.012000/min, 60/60: 0.012000 (number seller 0.010800, platform 0.001200);
 *   the renter pays 0.015140 in all, the platform keeps 0.001600.
 */
t.test('a forwarded number call killed mid-call: both legs settled once by the next start', async (t) => {
  const w = await trunk.createWorld(t);
  const { sql } = w.d;
  const { ledger } = w.d.modules.services;
  const did = await rentedNumber(w, t, { first: 6620001, inboundRate: '0.012000' });
  const forwardTo = '441300000777';
  const answering = await trunk.uasAnswer(t, forwardTo);
  const { routeId } = await w.route({ port: answering.port, prefix: '4413', rate: '0.013700' });
  const pointed = await w.api('PUT', `/dids/${did.id}/routing`, w.operator.token, {
    pointMode: 'forward',
    pointsTo: `+${forwardTo}`,
  });
  t.equal(pointed.status, 200, pointed.text);
  const renter0 = await ledger.balanceOf(w.operator.accountId);
  const seller0 = await ledger.balanceOf(w.seller.accountId);

  const overrides = childDaemonConfig(t, w.d.config.database.url);
  const child = await spawnChildDaemon(t, overrides);
  await trunk.uac(t, child.ports['sip']!, trunk.uacScenario('uac-tail-answer.xml', { HOLD_MS: '60000' }), did.digits);
  const [live] = await trunk.eventually(async () => {
    const rows = await sql<{ id: string }[]>`
      select id from calls where account_id = ${w.operator.accountId} and status = 'answered'`;
    return rows.length > 0 ? rows : null;
  }, 30_000);
  await child.kill();
  const [open] = await sql<{ n: string }[]>`
    select count(*)::text as n from holds where owner_id = ${w.operator.accountId} and status = 'open'`;
  t.equal(open?.n, '1', 'the dead daemon left the one hold of both legs open');
  await sql`update calls set last_seen_at = answered_at + interval '7 seconds' where id = ${live!.id}`;

  const again = await startDaemon(loadConfig({ overrides }), { log: pino({ level: 'silent' }) });
  t.teardown(() => again.stop());

  const [call] = await sql<
    { status: string; hangupCause: string; durationSeconds: number; cost: string; toNumber: string }[]
  >`select status, hangup_cause, duration_seconds, cost::text, to_number from calls where id = ${live!.id}`;
  t.match(call, { status: 'completed', hangupCause: 'crash', durationSeconds: 7, cost: '0.015140' });
  const cdrQuery = () =>
    sql<
      {
        direction: string;
        routeId: string;
        sellerId: string;
        toNumber: string;
        status: string;
        hangupCause: string;
        billedSeconds: number;
        buyerCost: string;
        sellerCredit: string;
      }[]
    >`select direction, route_id, seller_id, to_number, status, hangup_cause, billed_seconds, buyer_cost::text,
             seller_credit::text
      from cdrs where call_group_id = ${live!.id} order by direction desc`;
  t.same(await cdrQuery(), [
    {
      direction: 'outbound',
      routeId,
      sellerId: w.seller.accountId,
      toNumber: forwardTo,
      status: 'completed',
      hangupCause: 'crash',
      billedSeconds: 12,
      buyerCost: '0.003140',
      sellerCredit: '0.002740',
    },
    {
      direction: 'inbound',
      routeId: did.id,
      sellerId: w.seller.accountId,
      toNumber: did.digits,
      status: 'completed',
      hangupCause: 'crash',
      billedSeconds: 60,
      buyerCost: '0.012000',
      sellerCredit: '0.010800',
    },
  ]);

  const renter = await ledger.balanceOf(w.operator.accountId);
  t.equal(renter.balance, new Decimal(renter0.balance).minus('0.015140').toFixed(6), 'the renter paid both legs once');
  t.equal(renter.held, '0.000000', 'no hold left');
  const seller = await ledger.balanceOf(w.seller.accountId);
  t.equal(
    new Decimal(seller.payable).minus(seller0.payable).toFixed(6),
    '0.013540',
    'the seller (of the number and of the route) earned both legs once',
  );
  const [fee] = await sql<{ s: string }[]>`
    select coalesce(sum(e.amount), 0)::numeric(20,6)::text as s from entries e join ledger_accounts a on a.id = e.account_id
    where a.kind = 'platform_fee' and e.call_id = ${live!.id}`;
  t.equal(fee?.s, '0.001600', 'the platform kept both fees');

  // The first reconcile ran at start; this daemon's and the other's find nothing left.
  t.equal(await again.modules.services.calls.reconcileOrphans({ atStart: true }), 0);
  t.equal(await w.d.modules.services.calls.reconcileOrphans({ atStart: true }), 0);
  t.equal((await cdrQuery()).length, 2, 'still one CDR per leg');
  await checkInvariants(t as never, sql);
});
