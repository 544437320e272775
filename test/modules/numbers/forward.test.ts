import t from 'tap';
import { Decimal } from 'decimal.js';
import { checkInvariants } from '../../ledger/helpers.js';
import * as trunk from '../sip-trunks/world.js';
import { rentedNumber } from './rented.js';

// Money in this file (numbers' platform fee 10 %, inbound minutes billed 60/60):
//   the number's inbound rate 0.012000/min: a call of 1–60 s costs the renter 0.012000; the number's
//   seller earns 0.010800, the platform 0.001200.
//   The forward routes belong to another seller, 6/6: the answering one at seller rate 0.013700 +
//   fee 0.002000 = 0.015700/min, so 1–6 s cost 0.001570 (seller 0.001370, platform 0.000200); the
//   refusing one is cheaper (tried first) at 0.010000 + 0.002000.
//   A forwarded 1–6 s call: renter 0.013570 = route seller 0.001370 + number seller 0.010800 +
//   platform 0.001400.
//   The backup (`pointsToBackup`) on its own route at seller rate 0.020000 + fee 0.002000 =
//   0.022000/min, so 1–6 s cost 0.002200 (seller 0.002000, platform 0.000200): a call the forward
//   number refuses (486) and the backup answers costs the renter 0.012000 + 0.002200 = 0.014200,
//   the platform keeping 0.001200 + 0.000200 = 0.001400.

interface CallRow {
  id: string;
  status: string;
  cost: string;
  holdId: string | null;
  toNumber: string;
  hangupCause: string;
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

const WAIT = 60_000;

const endedCall = (w: trunk.World, accountId: string, seen: readonly string[]) =>
  trunk.eventually(async () => {
    const [c] = await w.d.sql<CallRow[]>`
      select id, status, cost::text, hold_id, to_number, hangup_cause from calls
      where account_id = ${accountId} and ended_at is not null and id <> all(${seen as string[]}::uuid[])
      order by id desc limit 1`;
    return c;
  }, WAIT);
const cdrsOf = (w: trunk.World, callId: string) =>
  w.d.sql<CdrRow[]>`
    select direction, route_id, seller_id, buyer_cost::text, seller_credit::text, billed_seconds, status, to_number
    from cdrs where call_group_id = ${callId} order by direction desc, created_at, id`;
const payable = async (w: trunk.World, id: string) =>
  new Decimal((await w.d.modules.services.ledger.balanceOf(id)).payable);
const balance = async (w: trunk.World, id: string) =>
  new Decimal((await w.d.modules.services.ledger.balanceOf(id)).balance);
const platformFee = async (w: trunk.World, callId: string) => {
  const [fee] = await w.d.sql<{ s: string }[]>`
    select coalesce(sum(e.amount), 0)::numeric(20,6)::text as s from entries e join ledger_accounts a on a.id = e.account_id
    where a.kind = 'platform_fee' and e.call_id = ${callId}`;
  return fee!.s;
};

/** A voice route of `seller` reaching `port` for `prefix` (6/6), bought by the world's operator. */
async function sellerRoute(w: trunk.World, seller: trunk.Party, o: { port: number; prefix: string; rate: string }) {
  const created = await w.api('POST', '/routes', seller.token, {
    type: 'voice',
    name: `forward ${o.prefix} ${o.port}`,
    country: 'GB',
    billingIncrement: '6/6',
    endpoints: [{ host: '127.0.0.1', port: o.port, transport: 'udp', priority: 1 }],
  });
  if (created.status !== 201) throw new Error(`route: ${created.text}`);
  const routeId = created.body.data.id as string;
  const sheet = await w.api('POST', `/routes/${routeId}/rates`, seller.token, {
    format: 'csv',
    csv: `prefix,destination,rate,increment\n${o.prefix},UK test,${o.rate},6/6\n`,
  });
  if (sheet.status !== 200) throw new Error(`rates: ${sheet.text}`);
  const bought = await w.api('POST', '/purchases', w.operator.token, { routeId });
  if (bought.status !== 201) throw new Error(`purchase: ${bought.text}`);
  return routeId;
}

t.test('forwarded number calls: the inbound minutes and the forward leg in one hold', async (t) => {
  const w = await trunk.createWorld(t);
  const carrier = await w.signUp();
  const did = await rentedNumber(w, t, { first: 6610001, inboundRate: '0.012000' });
  const seen: string[] = [];
  const next = async () => {
    const c = await endedCall(w, w.operator.accountId, seen);
    seen.push(c.id);
    return c;
  };
  const point = async (body: unknown) => {
    const r = await w.api('PUT', `/dids/${did.id}/routing`, w.operator.token, body);
    t.equal(r.status, 200, r.text);
  };
  const call = (tail: string, vars: Record<string, string>) =>
    trunk.uac(t, w.sipPort, trunk.uacScenario(tail, vars, false), did.digits);

  await t.test('a refusing route, then the answering one: both legs billed to the sixth decimal', async (t) => {
    const forwardTo = '441200000777';
    const refusing = await trunk.uasFinal(t, 503, 'Service Unavailable');
    const answering = await trunk.uasAnswer(t, forwardTo);
    const cheap = await sellerRoute(w, carrier, { port: refusing.port, prefix: '4412', rate: '0.010000' });
    const dear = await sellerRoute(w, carrier, { port: answering.port, prefix: '4412', rate: '0.013700' });
    await point({ pointMode: 'forward', pointsTo: `+${forwardTo}` });
    const [renter0, numberSeller0, routeSeller0] = [
      await balance(w, w.operator.accountId),
      await payable(w, w.seller.accountId),
      await payable(w, carrier.accountId),
    ];

    const run = await call('uac-tail-answer.xml', { HOLD_MS: '300' });
    await trunk.expectExit(t, run, 'the seller trunk completed the call');
    await trunk.expectExit(t, refusing, 'the first forward route refused');
    await trunk.expectExit(t, answering, 'the second forward route answered and got the BYE');
    const c = await next();
    t.match(c, { status: 'completed', cost: '0.013570', toNumber: forwardTo });
    t.ok(c.holdId, 'one hold for both legs');
    t.equal(renter0.minus(await balance(w, w.operator.accountId)).toFixed(6), '0.013570', 'the renter paid both legs');
    t.equal(
      (await payable(w, w.seller.accountId)).minus(numberSeller0).toFixed(6),
      '0.010800',
      "the number's seller earned the inbound minute less 10 %",
    );
    t.equal(
      (await payable(w, carrier.accountId)).minus(routeSeller0).toFixed(6),
      '0.001370',
      "the route's seller earned its rate",
    );
    t.equal(await platformFee(w, c.id), '0.001400', 'the platform kept both fees');
    t.match(await cdrsOf(w, c.id), [
      { direction: 'outbound', routeId: cheap, status: 'failed', buyerCost: '0.000000', toNumber: forwardTo },
      {
        direction: 'outbound',
        routeId: dear,
        sellerId: carrier.accountId,
        status: 'completed',
        buyerCost: '0.001570',
        sellerCredit: '0.001370',
        billedSeconds: 6,
        toNumber: forwardTo,
      },
      {
        direction: 'inbound',
        routeId: did.id,
        sellerId: w.seller.accountId,
        status: 'completed',
        buyerCost: '0.012000',
        sellerCredit: '0.010800',
        billedSeconds: 60,
        toNumber: did.digits,
      },
    ]);
    t.equal((await w.d.modules.services.ledger.balanceOf(w.operator.accountId)).held, '0.000000', 'no hold left');
    const [event] = await w.d.sql<{ data: { handledBy: string; cost: string } }[]>`
      select data from events where account_id = ${w.operator.accountId} and event = 'number.call.received'
        and data->>'callId' = ${c.id}`;
    t.match(event?.data, { handledBy: 'forward', cost: '0.013570' });
  });

  await t.test('the forward number busy on every route: the backup dialled at its own rate', async (t) => {
    const forwardTo = '441400000777';
    const backupTo = '441500000888';
    const busy = await trunk.uasFinal(t, 486, 'Busy Here');
    // sipp checks the request-URI user: the backup's digits, not the forward number's.
    const backup = await trunk.uasAnswer(t, backupTo);
    const primary = await sellerRoute(w, carrier, { port: busy.port, prefix: '4414', rate: '0.010000' });
    const second = await sellerRoute(w, carrier, { port: backup.port, prefix: '4415', rate: '0.020000' });
    await point({ pointMode: 'forward', pointsTo: `+${forwardTo}`, pointsToBackup: `+${backupTo}` });
    const [renter0, numberSeller0, routeSeller0] = [
      await balance(w, w.operator.accountId),
      await payable(w, w.seller.accountId),
      await payable(w, carrier.accountId),
    ];

    const run = await call('uac-tail-answer.xml', { HOLD_MS: '300' });
    await trunk.expectExit(t, run, 'the seller trunk completed the call');
    await trunk.expectExit(t, busy, 'the forward number was busy');
    await trunk.expectExit(t, backup, 'the backup answered and got the BYE');
    const c = await next();
    t.match(c, { status: 'completed', cost: '0.014200', toNumber: backupTo }, 'the call row names the number reached');
    t.equal(renter0.minus(await balance(w, w.operator.accountId)).toFixed(6), '0.014200', 'the renter paid both legs');
    t.equal((await payable(w, w.seller.accountId)).minus(numberSeller0).toFixed(6), '0.010800');
    t.equal(
      (await payable(w, carrier.accountId)).minus(routeSeller0).toFixed(6),
      '0.002000',
      "the backup route's seller earned the backup's rate",
    );
    t.equal(await platformFee(w, c.id), '0.001400');
    t.match(await cdrsOf(w, c.id), [
      { direction: 'outbound', routeId: primary, status: 'failed', buyerCost: '0.000000', toNumber: forwardTo },
      {
        direction: 'outbound',
        routeId: second,
        sellerId: carrier.accountId,
        status: 'completed',
        buyerCost: '0.002200',
        sellerCredit: '0.002000',
        billedSeconds: 6,
        toNumber: backupTo,
      },
      { direction: 'inbound', routeId: did.id, status: 'completed', buyerCost: '0.012000', toNumber: did.digits },
    ]);
    t.equal((await w.d.modules.services.ledger.balanceOf(w.operator.accountId)).held, '0.000000', 'no hold left');
  });

  await checkInvariants(t, w.d.sql);
});
