/**
 * A revenue share number forwarded to a phone number over the holder's own purchased route: the B
 * leg is the holder's outbound call, held, settled and recorded at the route's price to the sixth
 * decimal, while the A leg earns the payout; a holder whose balance cannot pay the forward has the
 * call answered with the number's announcement instead (the 402 fallback), nothing charged.
 */
import { once } from 'node:events';
import t from 'tap';
import { checkInvariants } from '../../ledger/helpers.js';
import { sipp } from '../../telephony/sip/sipp.js';
import { createWorld, eventually } from '../sip-trunks/world.js';
import { caller, mediaSink } from './caller.js';
import { forwardedRevshareNumber } from './forward-world.js';

t.test('revenue share forward to a number: billed over the holder’s route, or announced when unpaid', async (t) => {
  const w = await createWorld(t);
  const d = w.d;
  const rs = d.modules.services.revenueShare;
  const accounts = d.modules.services.accounts;
  const poor = await accounts.createAccount({ email: 'fwd-poor@example.com', password: 'correct horse battery' });
  const poorKey = (await d.modules.services.keys.create(poor.id, { mode: 'live' })).secret;
  // The holder is the world's funded buyer; the forward's destination is on its purchased route.
  const { rangeId, routeId, number, uas } = await forwardedRevshareNumber(w, t, {
    tag: 'fwd',
    prefix: '3714',
    numbers: ['37140000001', '37140000002'],
    target: '+447700900123',
  });

  await t.test('the B leg is the holder’s outbound call at the route’s price', async (t) => {
    const sink = await mediaSink(t);
    const recorded = once(rs.answering.events, 'recorded');
    const run = await sipp(t, caller(sink.port, 1200), ['-s', number.number, `127.0.0.1:${w.sipPort}`]);
    t.equal(await run.exited, 0, 'the caller completed the call', { output: run.output() });
    t.equal(await uas.exited, 0, 'the forward target answered and got the BYE', { output: uas.output() });
    const [callId] = (await recorded) as [string];
    const [a] = await d.sql<{ status: string; billedSeconds: number }[]>`
      select status, billed_seconds from revshare_calls where id = ${callId}`;
    t.match(a, { status: 'held' }, 'the A leg answered and earning');
    t.ok(a!.billedSeconds >= 1, 'the A leg billed from the B leg’s answer');
    // 6/6 on 0.013700 plus the 0.002000 platform fee per minute: 6 s cost 0.001570, the seller 0.001370.
    const legs = await eventually(async () => {
      const rows = await d.sql<{ status: string; buyerCost: string; sellerCredit: string; routeId: string }[]>`
        select status, buyer_cost::text, seller_credit::text, route_id from cdrs
         where account_id = ${w.operator.accountId} and source = 'trunk' and direction = 'outbound'`;
      return rows.length ? rows : undefined;
    });
    t.match(legs, [{ status: 'completed', buyerCost: '0.001570', sellerCredit: '0.001370', routeId }]);
    await checkInvariants(t as never, d.sql);
  });

  await t.test('a holder who cannot pay the forward gets the announcement instead', async (t) => {
    const bought = await w.api('POST', '/purchases', poorKey, { routeId });
    t.equal(bought.status, 201, bought.text);
    const theirs = await w.api('POST', '/revenue-share/numbers', poorKey, { rangeId, quantity: 1 });
    t.equal(theirs.status, 201, theirs.text);
    const n = theirs.body.data[0] as { id: string; number: string };
    const patched = await w.api('PATCH', `/revenue-share/numbers/${n.id}`, poorKey, {
      answer: { mode: 'forward', target: '+447700900124', announcement: { text: 'Thank you for calling.' } },
    });
    t.equal(patched.status, 200, patched.text);
    const sink = await mediaSink(t);
    const recorded = once(rs.answering.events, 'recorded');
    const run = await sipp(t, caller(sink.port, 2500), ['-s', n.number, `127.0.0.1:${w.sipPort}`]);
    t.equal(await run.exited, 0, 'the caller was answered', { output: run.output() });
    const [callId] = (await recorded) as [string];
    const [a] = await d.sql<{ status: string }[]>`select status from revshare_calls where id = ${callId}`;
    t.match(a, { status: 'held' }, 'answered by the exchange and earning');
    t.ok(sink.seen.voiced > 10, `the announcement was heard (${sink.seen.voiced} voiced packets)`);
    const charged = await d.sql`
      select 1 from cdrs where account_id = ${poor.id} and source = 'trunk' and buyer_cost > 0`;
    t.equal(charged.length, 0, 'no forward leg charged to the holder who could not pay');
    await checkInvariants(t as never, d.sql);
  });
});
