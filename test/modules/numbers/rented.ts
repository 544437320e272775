import type { World } from '../sip-trunks/world.js';
import { sipp, type SippRun } from '../../telephony/sip/sipp.js';
import { numbers } from './world.js';

/**
 * One number of the world's seller, at `inboundRate` per inbound minute, rented by the operator,
 * with the seller's trunk address (loopback) whitelisted so its INVITEs bring calls in for it.
 */
export async function rentedNumber(
  w: World,
  t: { equal(found: unknown, wanted: unknown, message: string): boolean },
  o: { first: number; inboundRate: string },
): Promise<{ id: string; digits: string }> {
  const svc = w.d.modules.services.numbers;
  const listed = await svc.inventory.importItems(
    w.seller.accountId,
    true,
    numbers(1, { first: o.first }),
    (i) => `items[${i}]`,
  );
  const groupId = listed.groups[0]!.groupId;
  await svc.inventory.updateGroup(w.seller.accountId, groupId, { inboundRate: o.inboundRate });
  const cat = await w.api('GET', '/dids/catalog', w.operator.token);
  const g = cat.body.data.groups.find((x: { groupId: string }) => x.groupId === groupId);
  const bought = await w.api('POST', '/dids/buy', w.operator.token, { groupId, skuId: g.skus[0].skuId });
  t.equal(bought.status, 201, bought.text);
  await svc.orders.settled();
  const did = await w.api('GET', `/dids/${bought.body.data.id as string}`, w.operator.token);
  const ip = await w.api('POST', '/sip/trunk-ips', w.seller.token, { ip: '127.0.0.1', label: 'numbers trunk' });
  t.equal(ip.status, 201, ip.text);
  return { id: did.body.data.id as string, digits: (did.body.data.number as string).replace(/^\+/, '') };
}

/**
 * The seller trunk's call to a number (UDP, whitelisted address), for calls the exchange answers
 * itself: sipp's whole-run limit is wide because the answer waits on speech synthesis and provider
 * round trips, which a loaded machine stretches.
 */
export const sellerCall = (
  t: { teardown(fn: () => unknown): void },
  w: World,
  digits: string,
  scenario: string,
): Promise<SippRun> => sipp(t, scenario, [`127.0.0.1:${w.sipPort}`, '-s', digits, '-t', 'u1'], { timeout: '90s' });
