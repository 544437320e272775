/**
 * Inbound calls on numbers beside outbound trunk calls, one daemon, the same run.
 *
 * A real daemon (fresh PostgreSQL database, dropped after) with a seller that lists numbers and a
 * voice route; the operator buys the route and rents one number (inbound rate 0.012000/min, so
 * every inbound call is held, settled and charged as on the outbound side), pointed (`sip`) at a
 * sipp owner endpoint. Two callers on whitelisted loopback addresses, so the only difference is the
 * path: the seller's trunk (127.0.0.2) calls the number (number look-up, owner admission, hold,
 * delivery to `pointsTo`, inbound settlement and CDR); the operator's trunk (127.0.0.3) calls a
 * number its purchased route covers (routing, hold, supplier leg, settlement and CDR). At each offered
 * rate an outbound step then an inbound step, until each falls behind; each step prints CPU ms per
 * answered call (daemon, its PostgreSQL backends), which a shared machine's load skews far less
 * than calls per second (after 30 unmeasured warm-up calls per side). Then the ratio lines (goal: inbound ≥ 0.8 × outbound) and a check that
 * every answered call has its ended call row and charged CDR.
 *
 * Usage: node --import tsx bench/numbers/calls.bench.ts [stepSeconds=5]
 * Env: BENCH_SIP_RATES="25,50,…" (offered calls/s per step), BENCH_SIP_VERBOSE=1.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { numbers } from '../../test/modules/numbers/world.js';
import { createWorld } from '../../test/modules/sip-trunks/world.js';
import { runCleanups } from '../lib/cleanups.js';
import { cpuOf, createSipBench, nodeCpu, pct, ramp, uasScenario, uptime, type Step } from '../lib/sip-ramp.js';

const [stepSeconds = 5] = process.argv.slice(2).map(Number);
const RATES = (process.env['BENCH_SIP_RATES'] ?? '25,50,100,150,200,300,400,500,650,800,1000').split(',').map(Number);
const OUTBOUND_NUMBER = '441100000001';
const SELLER_IP = '127.0.0.2';
const BUYER_IP = '127.0.0.3';

const cleanups: Array<() => unknown> = [];
const t = {
  teardown: (fn: () => unknown) => void cleanups.push(fn),
  equal: (a: unknown, b: unknown) => a === b,
};
const work = mkdtempSync(join(tmpdir(), 'bench-numbers-calls-'));
cleanups.push(() => rmSync(work, { recursive: true, force: true }));
const { sipp, step } = createSipBench({ work, cleanups, holdMs: 100 });

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
/** CPU ms per answered call over the steps that completed (node + PostgreSQL backends). */
const cpuPerCall = (perCall: Record<string, number>[]) =>
  mean(perCall.map((c) => (c['node cpu ms'] ?? 0) + (c['pg cpu ms'] ?? 0)));

try {
  console.log(`numbers calls bench start · ${uptime()}`);
  const w = await createWorld(t, { sip: { host: '127.0.0.1', port: 0, max_call_seconds: 600 } });
  const { sql } = w.d;
  const svc = w.d.modules.services.numbers;
  await w.d.modules.services.ledger.topup({
    accountId: w.operator.accountId,
    amount: '100000.000000',
    source: 'wire',
    postingKey: `bench-fund-${w.operator.accountId}`,
  });

  // Outbound: the seller's route to a sipp supplier, bought by the operator.
  const supplier = await sipp(uasScenario(OUTBOUND_NUMBER), [], 10_000_000, 3600);
  const { routeId } = await w.route({ port: supplier.port, prefix: '4411', rate: '0.001000' });

  // Inbound: a number of the seller's, rented by the operator and pointed at the owner's sipp endpoint.
  const listed = await svc.inventory.importItems(w.seller.accountId, true, numbers(1), (i) => `items[${i}]`);
  const groupId = listed.groups[0]!.groupId;
  await svc.inventory.updateGroup(w.seller.accountId, groupId, { inboundRate: '0.012000' });
  const cat = await w.api('GET', '/dids/catalog', w.operator.token);
  const group = cat.body.data.groups.find((g: { groupId: string }) => g.groupId === groupId);
  const bought = await w.api('POST', '/dids/buy', w.operator.token, { groupId, skuId: group.skus[0].skuId });
  if (bought.status !== 201) throw new Error(`buy: ${bought.text}`);
  await svc.orders.settled();
  const didId = bought.body.data.id as string;
  const did = await w.api('GET', `/dids/${didId}`, w.operator.token);
  const didDigits = (did.body.data.number as string).replace(/^\+/, '');
  const owner = await sipp(uasScenario(didDigits), [], 10_000_000, 3600);
  const pointed = await w.api('PUT', `/dids/${didId}/routing`, w.operator.token, {
    pointMode: 'sip',
    pointsTo: `127.0.0.1:${owner.port}`,
  });
  if (pointed.status !== 200) throw new Error(`routing: ${pointed.text}`);

  // Both callers by whitelisted source address: the same attribution, no digest round on either side.
  for (const [who, ip] of [
    [w.seller, SELLER_IP],
    [w.operator, BUYER_IP],
  ] as const) {
    const r = await w.api('POST', '/sip/trunk-ips', who.token, { ip, label: 'bench trunk' });
    if (r.status !== 201) throw new Error(`trunk ip: ${r.text}`);
  }

  const calls = w.d.modules.services.calls;
  const drained = async () => {
    // Past the 32 s a call waits for a caller's ACK lost under overload before it hangs up (64·T1).
    const until = Date.now() + 40_000;
    while (calls.liveCallIds().length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  };
  const dbName = new URL(w.d.config.database.url).pathname.slice(1);
  const cost = async () => {
    const [x] = await sql<{ n: number }[]>`
      select xact_commit::float8 as n from pg_stat_database where datname = ${dbName}`;
    return {
      'node cpu ms': nodeCpu(),
      'pg cpu ms': cpuOf((_p, _pp, cmd) => cmd.includes(` ${dbName} `)),
      'pg xacts': x?.n ?? 0,
    };
  };

  const sides = {
    outbound: { caller: { number: OUTBOUND_NUMBER, ip: BUYER_IP }, best: null as Step | null, done: false },
    inbound: { caller: { number: didDigits, ip: SELLER_IP }, best: null as Step | null, done: false },
  };
  const perCall = { outbound: [] as Record<string, number>[], inbound: [] as Record<string, number>[] };
  let answered = { outbound: 0, inbound: 0 };
  // Warm-up, not measured: the first calls of each path pay for compiling it (the first side would carry that alone).
  for (const side of ['outbound', 'inbound'] as const) {
    const warm = await step(w.sipPort, sides[side].caller, 10, 30);
    await drained();
    answered = { ...answered, [side]: answered[side] + warm.answered };
  }
  // Interleaved per offered rate, so both sides meet the machine's load of the same minutes.
  for (const rate of RATES) {
    for (const side of ['outbound', 'inbound'] as const) {
      const s = sides[side];
      if (s.done) continue;
      const r = await ramp(side, [rate], stepSeconds, (rt, n) => step(w.sipPort, s.caller, rt, n), drained, cost);
      answered = { ...answered, [side]: answered[side] + r.steps.reduce((n, st) => n + st.answered, 0) };
      if (r.best) {
        s.best = r.best;
        perCall[side].push(...r.perCall);
      } else s.done = true;
    }
    if (sides.outbound.done && sides.inbound.done) break;
  }

  const outBest = sides.outbound.best?.rate ?? 0;
  const inBest = sides.inbound.best?.rate ?? 0;
  console.log(`outbound trunk calls/s: ${outBest} sustained, zero failures`);
  console.log(`inbound number calls/s (sip delivery): ${inBest} sustained, zero failures`);
  for (const [side, s] of Object.entries(sides))
    if (s.best)
      console.log(
        `${side} setup p50 ${pct(s.best.setup, 50).toFixed(2)} ms, p99 ${pct(s.best.setup, 99).toFixed(2)} ms at ${s.best.rate}/s`,
      );
  const outCpu = cpuPerCall(perCall.outbound);
  const inCpu = cpuPerCall(perCall.inbound);
  console.log(
    `cpu per answered call (daemon + postgres, mean of clean steps): outbound ${outCpu.toFixed(2)} ms, inbound ${inCpu.toFixed(2)} ms`,
  );
  console.log(
    `numbers inbound calls/s ÷ outbound trunk calls/s: ${outBest ? (inBest / outBest).toFixed(2) : 'n/a'} (goal ≥ 0.80); ` +
      `by cpu per call (outbound ÷ inbound): ${inCpu ? (outCpu / inCpu).toFixed(2) : 'n/a'} · ${uptime()}`,
  );

  // Billing really in the loop on both sides.
  const [c] = await sql<{ outCdrs: number; inCdrs: number; inCharged: number; open: number; notEnded: number }[]>`
    select (select count(*)::int from cdrs where route_id = ${routeId} and status = 'completed' and billed_seconds > 0) as "outCdrs",
           (select count(*)::int from cdrs where route_id = ${didId} and direction = 'inbound' and status = 'completed'
              and buyer_cost > 0) as "inCdrs",
           (select count(*)::int from calls where account_id = ${w.operator.accountId} and to_number = ${didDigits}
              and status = 'completed' and cost > 0) as "inCharged",
           (select count(*)::int from holds where owner_id = ${w.operator.accountId} and status = 'open') as open,
           (select count(*)::int from calls where ended_at is null) as "notEnded"`;
  const ok =
    c &&
    c.outCdrs === answered.outbound &&
    c.inCdrs === answered.inbound &&
    c.inCharged === answered.inbound &&
    c.open === 0 &&
    c.notEnded === 0;
  console.log(
    `billing check: outbound ${answered.outbound} answered, ${c?.outCdrs} billed CDRs; inbound ${answered.inbound} answered, ` +
      `${c?.inCdrs} billed inbound CDRs, ${c?.inCharged} charged calls; ${c?.open} open holds, ${c?.notEnded} unended calls${ok ? '' : ' (MISMATCH)'}`,
  );
  if (!ok) process.exitCode = 1;
} finally {
  await runCleanups(cleanups);
}
