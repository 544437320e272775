import { Decimal } from 'decimal.js';
import t, { type Test } from 'tap';
import { checkInvariants } from '../../ledger/helpers.js';
import { available } from '../api-calls/peers.js';
import { numbers } from '../numbers/world.js';
import * as trunk from '../sip-trunks/world.js';
import { switchCustomer } from './customer.js';

/**
 * Calls to a Switch customer's rented numbers (the seller's trunk bringing them in, sipp at both
 * ends) are billed by the customer's inbound sell rate (docs/switch.md "Inbound sell rates"), never
 * by an outbound voice row, and the operator earns sell − cost through the markup posting.
 *
 * Money (numbers' platform fee 10 %, the number's minutes 60/60): the number's inbound rate
 * 0.012000/min, seller 0.010800, platform 0.001200 a minute. The customer's markup is 25 %.
 * - Number A, inbound sell rate 0.030000/min (60/60), a voice row 0.050000 on the same prefix:
 *   a 1.2 s call costs 0.030000, the operator earns 0.018000.
 * - Number B, no inbound row: base plus markup, 0.015000, the operator earns 0.003000.
 * - Number B again after an inbound row of 0.005000 (below the number's price): the call is
 *   delivered, the customer pays the cost 0.012000, the operator earns 0.000000 and pays nothing.
 */

interface CallRow {
  id: string;
  status: string;
  cost: string;
  billableSeconds: number;
}

t.test(
  "inbound calls to a Switch customer's numbers: its inbound sell rate",
  { skip: available ? false : 'sipp not installed' },
  async (t) => {
    const w = await trunk.createWorld(t);
    const { d, operator, seller } = w;
    const services = d.modules.services;
    const { ledger } = services;
    const customer = await switchCustomer(w, { label: 'inbound customer', credit: '10.000000' });

    // The seller lists two numbers at 0.012000 per inbound minute; the customer rents both.
    const stock = await services.numbers.inventory.importItems(
      seller.accountId,
      true,
      numbers(2, { first: 6610001 }),
      (i) => `items[${i}]`,
    );
    const groupId = stock.groups[0]!.groupId;
    await services.numbers.inventory.updateGroup(seller.accountId, groupId, { inboundRate: '0.012000' });
    const [sku] = await d.sql<{ id: string }[]>`select id from did_skus where group_id = ${groupId}`;
    const rent = async () => {
      const did = await services.numbers.orders.buy(operator.accountId, {
        groupId,
        skuId: sku!.id,
        subAccountId: customer.id,
      });
      await services.numbers.orders.settled();
      const number = (await services.numbers.manage.get(operator.accountId, did.id)).number!.replace(/^\+/, '');
      return { id: did.id, number };
    };
    const a = await rent();
    const b = await rent();
    // The seller's trunk address is whitelisted: its INVITEs are attributed to the seller.
    const ip = await w.api('POST', '/sip/trunk-ips', seller.token, { ip: '127.0.0.1', label: 'numbers trunk' });
    t.equal(ip.status, 201, ip.text);

    const sellRates = (kind: string, rows: unknown[]) =>
      w.api('POST', `/switch/customers/${customer.id}/sell-rates`, operator.token, { kind, rows });
    const inbound = await sellRates('inbound', [{ prefix: a.number, destination: 'UK number A', rate: '0.03' }]);
    t.equal(inbound.status, 200, inbound.text);
    // An outbound row on the same digits: never what an inbound call pays.
    const voice = await sellRates('voice', [{ prefix: a.number, destination: 'UK', rate: '0.05' }]);
    t.equal(voice.status, 200, voice.text);

    await t.test('the API lists the inbound kind', async (t) => {
      const listed = await w.api('GET', `/switch/customers/${customer.id}/sell-rates?kind=inbound`, operator.token);
      t.equal(listed.status, 200, listed.text);
      t.match(listed.body.data.rows, [
        { kind: 'inbound', prefix: a.number, rate: '0.030000', billingIncrement: '60/60' },
      ]);
      t.equal(listed.body.data.rows.length, 1, 'only the inbound row');
      const one = await w.api('GET', `/switch/customers/${customer.id}`, operator.token);
      t.match(one.body.data.sellRates, { voicePrefixes: 1, smsPrefixes: 0, inboundPrefixes: 1 });
      const bad = await w.api('POST', `/switch/customers/${customer.id}/sell-rates`, operator.token, {
        kind: 'inbound',
        rows: [{ prefix: b.number, destination: 'x', rate: '0.01', mccMnc: '234-10' }],
      });
      t.equal(bad.status, 400, bad.text);
      t.equal(bad.body.error.code, 'VALIDATION_ERROR');
    });

    const seen: string[] = [];
    /** The seller trunk's call to `number`, delivered to a sipp answering for the customer, 1.2 s long. */
    const answeredCall = async (tt: Test, number: string) => {
      const uas = await trunk.uasAnswer(tt, number);
      const point = await w.api('PUT', `/dids/${number === a.number ? a.id : b.id}/routing`, customer.apiKey, {
        pointMode: 'sip',
        pointsTo: `127.0.0.1:${uas.port}`,
      });
      tt.equal(point.status, 200, point.text);
      const run = await trunk.uac(
        tt,
        w.sipPort,
        trunk.uacScenario('uac-tail-answer.xml', { HOLD_MS: '1200' }, false),
        number,
      );
      await trunk.expectExit(tt, run, 'the seller trunk completed the call');
      await trunk.expectExit(tt, uas, 'the customer endpoint answered and got the BYE');
      const c = await trunk.eventually(async () => {
        const [row] = await d.sql<CallRow[]>`
        select id, status, cost::text, billable_seconds from calls
        where account_id = ${customer.id} and ended_at is not null and id <> all(${seen}::uuid[])
        order by id desc limit 1`;
        return row;
      });
      seen.push(c.id);
      return c;
    };
    const money = async () => {
      const [c, o, s] = await Promise.all(
        [customer.id, operator.accountId, seller.accountId].map((id) => ledger.balanceOf(id)),
      );
      return { customer: c!.balance, held: c!.held, operator: o!.balance, earned: o!.payable, seller: s!.payable };
    };
    const diff = (x: string, y: string) => new Decimal(x).minus(y).toFixed(6);

    /** One call's money: what the customer paid, what the operator and seller earned. */
    const charged = async (tt: Test, number: string) => {
      const before = await money();
      const call = await answeredCall(tt, number);
      const after = await money();
      tt.equal(after.held, '0.000000', 'no hold left');
      tt.equal(after.operator, before.operator, 'the operator paid nothing');
      return {
        call,
        paid: diff(before.customer, after.customer),
        operatorEarned: diff(after.earned, before.earned),
        sellerEarned: diff(after.seller, before.seller),
      };
    };

    await t.test('number A: the inbound sell rate, the operator earns sell − cost', async (t) => {
      const r = await charged(t, a.number);
      t.match(r.call, { status: 'completed', cost: '0.030000', billableSeconds: 60 });
      t.equal(r.paid, '0.030000', 'one 60 s block at the inbound sell rate, not the voice row nor price plus 25 %');
      t.equal(r.sellerEarned, '0.010800', "the number's seller its own rate less the fee");
      t.equal(r.operatorEarned, '0.018000', '0.030000 − 0.012000, to the 6th decimal');
    });

    await t.test('number B, no inbound row: base plus markup', async (t) => {
      const r = await charged(t, b.number);
      t.match(r.call, { status: 'completed', cost: '0.015000' });
      t.equal(r.paid, '0.015000', '0.012000 + 25 %');
      t.equal(r.sellerEarned, '0.010800');
      t.equal(r.operatorEarned, '0.003000', 'the markup');
    });

    await t.test('number B under an inbound row below cost: delivered, the customer pays the cost', async (t) => {
      const low = await sellRates('inbound', [{ prefix: b.number, destination: 'UK number B', rate: '0.005' }]);
      t.equal(low.status, 200, low.text);
      const r = await charged(t, b.number);
      t.match(r.call, { status: 'completed', cost: '0.012000' });
      t.equal(r.paid, '0.012000', "the number's price, not 0.005000");
      t.equal(r.sellerEarned, '0.010800');
      t.equal(r.operatorEarned, '0.000000', 'margin 0, never a loss');
      await checkInvariants(t, d.sql);
    });
  },
);
