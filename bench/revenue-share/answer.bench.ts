/**
 * Revenue share answering path on a whole daemon, with the trunk-call path (bench/sip/trunk-calls) as
 * the anchor in the same run: sipp as the range's supplier calls allocated numbers (answered by the
 * exchange in silence, timed, priced and credited through the ledger on BYE) at rising rates; then the
 * same ramp of ordinary trunk calls (digest, routing, hold, settlement, CDR) to a sipp UAS. Each path's
 * best sustained rate is checked against what was written (revenue share calls recorded and credited;
 * trunk calls ended with their charge) and the ratio printed, with the load from `uptime`.
 *
 * Usage: node --import tsx bench/revenue-share/answer.bench.ts [stepSeconds=5]
 * Env: BENCH_SIP_RATES="25,50,…" (offered calls/s per step).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWorld } from '../../test/modules/sip-trunks/world.js';
import { runCleanups } from '../lib/cleanups.js';
import { cpuOf, createSipBench, nodeCpu, ramp, uasScenario, uptime, type StepRunner } from '../lib/sip-ramp.js';

const [stepSeconds = 5] = process.argv.slice(2).map(Number);
const RATES = (process.env['BENCH_SIP_RATES'] ?? '25,50,100,150,200,300,400,500,650,800').split(',').map(Number);
const TRUNK_NUMBER = '441100000001';
const HOLD_MS = 100;

const cleanups: Array<() => unknown> = [];
const t = { teardown: (fn: () => unknown) => void cleanups.push(fn), equal: (a: unknown, b: unknown) => a === b };
const work = mkdtempSync(join(tmpdir(), 'bench-revshare-'));
cleanups.push(() => rmSync(work, { recursive: true, force: true }));
const { sipp, step } = createSipBench({ work, cleanups, holdMs: HOLD_MS });

try {
  console.log(`revenue share answer bench start · ${uptime()}`);
  const w = await createWorld(t, { sip: { host: '127.0.0.1', port: 0, max_call_seconds: 600 } });
  const sql = w.d.sql;
  const rs = w.d.modules.services.revenueShare;
  const admin = { accountId: w.operator.accountId, role: 'admin' as const };
  const range = await rs.ranges.create(admin, {
    supplierId: w.seller.accountId,
    name: 'Bench IPRN',
    countryCode: 'LV',
    country: 'Latvia',
    prefix: '3719',
    numberType: 'iprn',
    ratePerMinute: '0.120000',
    payouts: [{ origin: '', payoutPerMinute: '0.060000' }],
    sourceIps: ['127.0.0.1'],
  });
  // One number per caller slot is not needed: every call is its own Call-ID on the one number.
  await rs.ranges.addNumbers(admin, range.id, { numbers: ['37190000001'] });
  await rs.ranges.allocate(w.operator.accountId, { rangeId: range.id, quantity: 1 });
  await rs.reload();

  const dbName = new URL(w.d.config.database.url).pathname.slice(1);
  const cost = async () => ({
    'node cpu ms': nodeCpu(),
    'pg cpu ms': cpuOf((_p, _pp, cmd) => cmd.includes(` ${dbName} `)),
  });
  const settled = async () => {
    const until = Date.now() + 40_000;
    while ((rs.answering.liveCalls() > 0 || w.d.modules.services.calls.liveCallIds().length > 0) && Date.now() < until)
      await new Promise((r) => setTimeout(r, 100));
    await rs.answering.settled();
  };

  const revshareStep: StepRunner = (rate, calls) => step(w.sipPort, { number: '37190000001' }, rate, calls);
  const ours = await ramp('revenue share', RATES, stepSeconds, revshareStep, settled, cost);
  const answered = ours.steps.reduce((n, s) => n + s.answered, 0);
  const [rec] = await sql<{ n: number; credited: number }[]>`
    select count(*)::int as n, count(posting_id)::int as credited from revshare_calls where answered_at is not null`;
  console.log(
    `revenue share calls/s answered and billed: ${ours.best?.rate ?? 0} sustained · recorded ${rec?.n}/${answered} answered, ${rec?.credited} credited · ${uptime()}`,
  );

  const uas = await sipp(uasScenario(TRUNK_NUMBER), [], 10_000_000, 3600);
  await w.route({ port: uas.port, prefix: '4411', rate: '0.001000' });
  await w.d.modules.services.ledger.topup({
    accountId: w.operator.accountId,
    amount: '100000.000000',
    source: 'wire',
    postingKey: `bench-fund-${w.operator.accountId}`,
  });
  const sub = await w.sub({ markupPct: '10', fund: '50000.000000' });
  const trunkStep: StepRunner = (rate, calls) =>
    step(w.sipPort, { number: TRUNK_NUMBER, user: sub.sipUsername, pass: sub.sipPassword }, rate, calls);
  const anchor = await ramp('trunk anchor', RATES, stepSeconds, trunkStep, settled, cost);
  const a = anchor.best?.rate ?? 0;
  const o = ours.best?.rate ?? 0;
  console.log(
    `revenue share vs trunk calls: ${o}/s vs ${a}/s sustained, ratio ${a > 0 ? (o / a).toFixed(2) : 'n/a'} · ${uptime()}`,
  );
} finally {
  await runCleanups(cleanups);
}
