import t from 'tap';
import pino from 'pino';
import { loadConfig } from '../../../src/config/load.js';
import { startDaemon } from '../../../src/daemon.js';
import { checkInvariants } from '../../ledger/helpers.js';
import { fixture, sipp } from '../../telephony/sip/sipp.js';
import { createWorld, eventually, uac, uacScenario, uasAnswer } from './world.js';
import { childDaemonConfig, spawnChildDaemon } from './child-daemon.js';

t.test('a daemon killed during live calls: the next start bills the answered one and releases the other', async (t) => {
  const w = await createWorld(t);
  const sql = w.d.sql;
  const answeredNumber = '445000000001';
  const ringingNumber = '445100000001';
  // The peers outlive the child daemon's start, which takes minutes on a loaded machine.
  const uasUp = await uasAnswer(t, answeredNumber, 'u1', 0, '300s');
  const uasRing = await sipp(t, fixture('uas-ring-cancel.xml'), [], { timeout: '300s' });
  await w.route({ port: uasUp.port, prefix: '4450', rate: '0.013700' });
  await w.route({ port: uasRing.port, prefix: '4451', rate: '0.013700' });
  const a = await w.sub({ markupPct: '0', fund: '5.000000' });
  const b = await w.sub({ markupPct: '0', fund: '5.000000' });

  const overrides = childDaemonConfig(t, w.d.config.database.url);
  const daemon = await spawnChildDaemon(t, overrides);
  const sipPort = daemon.ports['sip']!;

  // One call answered and held, one ringing, on the daemon about to die.
  await uac(
    t,
    sipPort,
    uacScenario('uac-tail-answer.xml', { HOLD_MS: '60000' }),
    answeredNumber,
    a.sipUsername,
    a.sipPassword,
  );
  await eventually(
    async () => (await sql`select 1 from calls where account_id = ${a.id} and status = 'answered'`).length > 0,
  );
  await uac(
    t,
    sipPort,
    uacScenario('uac-tail-answer.xml', { HOLD_MS: '100' }),
    ringingNumber,
    b.sipUsername,
    b.sipPassword,
  );
  await eventually(async () => (await sql`select 1 from calls where account_id = ${b.id}`).length > 0);
  await daemon.kill();

  const [open] = await sql<{ n: string }[]>`select count(*)::text as n from holds where status = 'open'`;
  t.equal(open?.n, '2', 'the dead daemon left both holds open');
  // Its last heartbeat, as if seen 7 s after the answer: the answered part is billed to there.
  await sql`update calls set last_seen_at = answered_at + interval '7 seconds' where account_id = ${a.id}`;

  const again = await startDaemon(loadConfig({ overrides }), { log: pino({ level: 'silent' }) });
  t.teardown(() => again.stop());

  const [ca] = await sql<
    {
      id: string;
      status: string;
      hangupCause: string;
      billableSeconds: number;
      durationSeconds: number;
      cost: string;
      endedAt: Date | null;
    }[]
  >`
    select id, status, hangup_cause, billable_seconds, duration_seconds, cost::text, ended_at from calls where account_id = ${a.id}`;
  t.match(
    ca,
    { status: 'completed', hangupCause: 'crash', durationSeconds: 7, billableSeconds: 12, cost: '0.003140' },
    '7 s billed as 12 s (6/6) at 0.015700/min',
  );
  t.ok(ca?.endedAt);
  const [cb] = await sql<
    { status: string; cost: string; endedAt: Date | null }[]
  >`select status, cost::text, ended_at from calls where account_id = ${b.id}`;
  t.match(cb, { status: 'failed', cost: '0.000000' });
  t.ok(cb?.endedAt);
  const ba = await w.d.modules.services.ledger.balanceOf(a.id);
  t.same([ba.balance, ba.held], ['4.996860', '0.000000']);
  const bb = await w.d.modules.services.ledger.balanceOf(b.id);
  t.same([bb.balance, bb.held], ['5.000000', '0.000000']);
  const [cdr] =
    await sql`select hangup_cause, billed_seconds, buyer_cost::text, seller_credit::text from cdrs where call_group_id = ${ca!.id}`;
  t.match(cdr, { hangupCause: 'crash', billedSeconds: 12, buyerCost: '0.003140', sellerCredit: '0.002740' });
  const [stillOpen] = await sql<{ n: string }[]>`select count(*)::text as n from holds where status = 'open'`;
  t.equal(stillOpen?.n, '0', 'no hold left open');
  await checkInvariants(t as never, sql);
});
