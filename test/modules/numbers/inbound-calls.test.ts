import t from 'tap';
import { Decimal } from 'decimal.js';
import { checkInvariants } from '../../ledger/helpers.js';
import type { SippRun } from '../../telephony/sip/sipp.js';
import * as trunk from '../sip-trunks/world.js';
import { numbers } from './world.js';

// Money in this file (numbers' platform fee 10 %, inbound minutes billed 60/60):
//   inbound rate 0.012000/min: a call of 1–60 s costs the renter 0.012000; the seller earns
//   0.010800, the platform 0.001200.
//   Forwarded: the renter's route at seller rate 0.013700 + fee 0.002000 = 0.015700/min, 6/6:
//   a 1–6 s call costs 0.001570 (seller 0.001370), plus the number's inbound minute 0.012000.

interface CallRow {
  id: string;
  status: string;
  cost: string;
  billableSeconds: number;
  holdId: string | null;
  toNumber: string;
  sipResponseCode: number | null;
}
interface CdrRow {
  direction: string;
  routeId: string | null;
  sellerId: string | null;
  buyerCost: string;
  sellerCredit: string;
  billedSeconds: number | null;
  status: string;
  toNumber: string;
}

const endedCall = (w: trunk.World, accountId: string, seen: readonly string[]) =>
  trunk.eventually(async () => {
    const [c] = await w.d.sql<CallRow[]>`
      select id, status, cost::text, billable_seconds, hold_id, to_number, sip_response_code from calls
      where account_id = ${accountId} and ended_at is not null and id <> all(${seen as string[]}::uuid[])
      order by id desc limit 1`;
    return c;
  });
const cdrsOf = (w: trunk.World, callId: string) =>
  w.d.sql<CdrRow[]>`
    select direction, route_id, seller_id, buyer_cost::text, seller_credit::text, billed_seconds, status, to_number
    from cdrs where call_group_id = ${callId} order by created_at, id`;
const payable = async (w: trunk.World, id: string) =>
  new Decimal((await w.d.modules.services.ledger.balanceOf(id)).payable);
const balance = async (w: trunk.World, id: string) =>
  new Decimal((await w.d.modules.services.ledger.balanceOf(id)).balance);

t.test('inbound calls on rented numbers over the seller trunk', async (t) => {
  const w = await trunk.createWorld(t);
  const { numbers: svc } = w.d.modules.services;
  const seen: string[] = [];
  const next = async () => {
    const c = await endedCall(w, w.operator.accountId, seen);
    seen.push(c.id);
    return c;
  };

  // The seller lists two groups (one with an inbound rate, one free), the operator rents a number of each.
  const paid = await svc.inventory.importItems(
    w.seller.accountId,
    true,
    numbers(2, { first: 5550001 }),
    (i) => `items[${i}]`,
  );
  const free = await svc.inventory.importItems(
    w.seller.accountId,
    true,
    numbers(1, { areaPrefix: '161', city: 'Manchester', first: 5550101 }),
    (i) => `items[${i}]`,
  );
  await svc.inventory.updateGroup(w.seller.accountId, paid.groups[0]!.groupId, { inboundRate: '0.012000' });
  const rent = async (groupId: string) => {
    const cat = await w.api('GET', `/dids/catalog`, w.operator.token);
    const g = cat.body.data.groups.find((x: { groupId: string }) => x.groupId === groupId);
    const bought = await w.api('POST', '/dids/buy', w.operator.token, { groupId, skuId: g.skus[0].skuId });
    t.equal(bought.status, 201, bought.text);
    await svc.orders.settled();
    const did = await w.api('GET', `/dids/${bought.body.data.id as string}`, w.operator.token);
    return did.body.data as { id: string; number: string };
  };
  const did = await rent(paid.groups[0]!.groupId);
  const freeDid = await rent(free.groups[0]!.groupId);
  const digits = did.number.replace(/^\+/, '');
  const point = async (id: string, body: unknown) => {
    const r = await w.api('PUT', `/dids/${id}/routing`, w.operator.token, body);
    t.equal(r.status, 200, r.text);
  };
  // The seller's trunk address is whitelisted: its INVITEs are attributed to the seller.
  const ip = await w.api('POST', '/sip/trunk-ips', w.seller.token, { ip: '127.0.0.1', label: 'numbers trunk' });
  t.equal(ip.status, 201, ip.text);
  const call = (number: string, tail: string, vars: Record<string, string>) =>
    trunk.uac(t, w.sipPort, trunk.uacScenario(tail, vars, false), number);
  /** The seller trunk's call to `number`, answered by `answering` (and refused first by `refusing`): the ended call. */
  const answered = async (tt: trunk.Tt, number: string, answering: SippRun, refusing?: SippRun, holdMs = '300') => {
    const run = await call(number, 'uac-tail-answer.xml', { HOLD_MS: holdMs });
    await trunk.expectExit(tt, run, 'the seller trunk completed the call');
    if (refusing) await trunk.expectExit(tt, refusing, 'the target refused');
    await trunk.expectExit(tt, answering, 'the far end answered and got the BYE');
    return next();
  };

  await t.test('unrouted: 480, nothing held', async (t) => {
    const run = await call(digits, 'uac-tail-final.xml', { FINAL: '480', FINAL_CHECK: 'Number not routed' });
    await trunk.expectExit(t, run, 'the seller trunk got 480');
    t.equal((await w.d.modules.services.ledger.balanceOf(w.operator.accountId)).held, '0.000000');
  });

  await t.test('sip: delivered to the renter endpoint, billed at the inbound rate, inbound CDR', async (t) => {
    const uas = await trunk.uasAnswer(t, digits);
    await point(did.id, { pointMode: 'sip', pointsTo: `127.0.0.1:${uas.port}` });
    const [owner0, seller0] = [await balance(w, w.operator.accountId), await payable(w, w.seller.accountId)];
    const c = await answered(t, digits, uas, undefined, '1200');
    t.match(c, { status: 'completed', billableSeconds: 60, cost: '0.012000' });
    t.ok(c.holdId, 'billed through a hold');
    t.equal(owner0.minus(await balance(w, w.operator.accountId)).toFixed(6), '0.012000', 'the renter paid a minute');
    t.equal(
      (await payable(w, w.seller.accountId)).minus(seller0).toFixed(6),
      '0.010800',
      'the seller earned it less 10 %',
    );
    t.match(await cdrsOf(w, c.id), [
      {
        direction: 'inbound',
        routeId: did.id,
        sellerId: w.seller.accountId,
        buyerCost: '0.012000',
        sellerCredit: '0.010800',
        billedSeconds: 60,
        status: 'completed',
        toNumber: digits,
      },
    ]);
    t.equal((await w.d.modules.services.ledger.balanceOf(w.operator.accountId)).held, '0.000000', 'no hold left');
  });

  await t.test('sip: the target refuses, the backup answers', async (t) => {
    const sick = await trunk.uasFinal(t, 503, 'Service Unavailable');
    const uas = await trunk.uasAnswer(t, digits);
    await point(did.id, {
      pointMode: 'sip',
      pointsTo: `127.0.0.1:${sick.port}`,
      pointsToBackup: `127.0.0.1:${uas.port}`,
    });
    const c = await answered(t, digits, uas, sick);
    t.match(c, { status: 'completed', cost: '0.012000' });
    const legs = await cdrsOf(w, c.id);
    t.match(legs, [
      { direction: 'inbound', status: 'failed', buyerCost: '0.000000' },
      { direction: 'inbound', status: 'completed', buyerCost: '0.012000' },
    ]);
  });

  await t.test('free inbound minutes: delivered, no hold, a zero-cost inbound CDR', async (t) => {
    const freeDigits = freeDid.number.replace(/^\+/, '');
    const uas = await trunk.uasAnswer(t, freeDigits);
    await point(freeDid.id, { pointMode: 'sip', pointsTo: `127.0.0.1:${uas.port}` });
    const owner0 = await balance(w, w.operator.accountId);
    const c = await answered(t, freeDigits, uas);
    t.match(c, { status: 'completed', cost: '0.000000', holdId: null });
    t.match(await cdrsOf(w, c.id), [{ direction: 'inbound', buyerCost: '0.000000', status: 'completed' }]);
    t.equal((await balance(w, w.operator.accountId)).toFixed(6), owner0.toFixed(6), 'nothing charged');
  });

  await t.test('forward: an outbound call of the renter over its routes, with the inbound minutes', async (t) => {
    const forwardTo = '441100000777';
    const uas = await trunk.uasAnswer(t, forwardTo);
    await w.route({ port: uas.port, prefix: '4411', rate: '0.013700' });
    await point(did.id, { pointMode: 'forward', pointsTo: `+${forwardTo}` });
    const owner0 = await balance(w, w.operator.accountId);
    const c = await answered(t, digits, uas);
    t.match(c, { status: 'completed', cost: '0.013570', toNumber: forwardTo });
    // The two legs share the call's start: listed by direction, outbound first.
    const legs = (await cdrsOf(w, c.id)).sort((a, b) => (a.direction < b.direction ? 1 : -1));
    t.match(legs, [
      { direction: 'outbound', buyerCost: '0.001570', toNumber: forwardTo },
      { direction: 'inbound', buyerCost: '0.012000', toNumber: digits },
    ]);
    t.equal(owner0.minus(await balance(w, w.operator.accountId)).toFixed(6), '0.013570');
  });

  await t.test(
    'a suspended number answers 480; another account calling the digits is routed as any call',
    async (t) => {
      await w.d.sql`update dids set status = 'suspended', suspended_at = now() where id = ${did.id}`;
      const run = await call(digits, 'uac-tail-final.xml', { FINAL: '480', FINAL_CHECK: 'Number suspended' });
      await trunk.expectExit(t, run, 'the seller trunk got 480');
      await w.d.sql`update dids set status = 'active', suspended_at = null where id = ${did.id}`;
      // Not the number's seller: no number delivery, the caller's own (absent) routes decide.
      const other = await w.signUp();
      const removed = await w.api('GET', '/sip/trunk-ips', w.seller.token);
      await w.api('DELETE', `/sip/trunk-ips/${removed.body.data[0].id as string}`, w.seller.token);
      const moved = await w.api('POST', '/sip/trunk-ips', other.token, { ip: '127.0.0.1' });
      t.equal(moved.status, 201, moved.text);
      const run2 = await call(digits, 'uac-tail-final.xml', { FINAL: '404', FINAL_CHECK: 'No purchased route' });
      await trunk.expectExit(t, run2, 'refused as an ordinary call without routes');
    },
  );

  await checkInvariants(t, w.d.sql);
});
