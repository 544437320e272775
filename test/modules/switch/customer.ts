import type { World } from '../sip-trunks/world.js';

/**
 * The Switch customer the customers-*.test.ts files bill: the world's operator on a Switch plan, one
 * sub-account with a 25 % markup (what it pays where no sell rate matches), funded with `credit`.
 */
export async function switchCustomer(w: World, o: { label: string; credit: string }) {
  const services = w.d.modules.services;
  await services.switchSubscriptions.grant(w.operator.accountId, 'plan', null);
  const customer = await services.application.create(w.operator.accountId, { label: o.label, markupPct: '25' });
  await services.application.credit(w.operator.accountId, customer.id, { amount: o.credit }, `fund-${customer.id}`);
  return customer;
}
