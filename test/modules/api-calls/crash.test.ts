import { Decimal } from 'decimal.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import { loadConfig, type DeepPartial } from '../../../src/config/load.js';
import type { Config } from '../../../src/config/schema.js';
import { startDaemon } from '../../../src/daemon.js';
import { loadNodeId } from '../../../src/platform/node-id.js';
import { httpsCall, TEST_NETWORKS, TEST_SCRYPT_COST } from '../../helpers/daemon.js';
import { checkInvariants } from '../../ledger/helpers.js';
import { createWorld, eventually } from '../sip-trunks/world.js';
import { answering, available, expectedCost } from './peers.js';
import { spawnChildDaemon } from '../sip-trunks/child-daemon.js';

/**
 * A daemon SIGKILLed while its async API calls are answered. Another daemon leaves such a call
 * alone until it has gone 90 s without a heartbeat (owner `<node>:api`), then bills it to its last
 * sign of life; the same daemon, started again, reconciles its own at once, before it could place
 * a new call.
 */
t.test(
  'API calls of a killed daemon are reconciled',
  { skip: available ? false : 'sipp or espeak-ng not installed' },
  async (t) => {
    const w = await createWorld(t);
    const sql = w.d.sql;
    const services = w.d.modules.services;
    // The peers outlive the child daemon's start and restart, which take minutes on a loaded machine.
    const fresh = await answering(t, '449300000001', '', '300s');
    const stale = await answering(t, '449400000001', '', '300s');
    await w.route({ port: fresh.port, prefix: '4493', rate: '0.010000', increment: '1/1' });
    await w.route({ port: stale.port, prefix: '4494', rate: '0.010000', increment: '1/1' });
    const { secret } = await services.keys.create(w.operator.accountId, { mode: 'live', scopes: ['voice:send'] });
    const before = await services.ledger.balanceOf(w.operator.accountId);

    const state = mkdtempSync(join(tmpdir(), 'svc-apicrash-state-'));
    t.teardown(() => rmSync(state, { recursive: true, force: true }));
    const rtp = 46000 + (process.pid % 200) * 20;
    const overrides: DeepPartial<Config> = {
      paths: { state },
      log: { level: 'silent' },
      // Schemas compile on first use, as in every test daemon (test/helpers/daemon.ts).
      http: { host: '127.0.0.1', port: 0, schema_compile: 'first_use' },
      database: { url: w.d.config.database.url, pool_max: 4 },
      sip: { host: '127.0.0.1', port: 0, tls_port: 0 },
      smpp: { host: '127.0.0.1', port: 0, tls_port: 0 },
      metrics: { host: '127.0.0.1', port: 0 },
      rtp: { port_min: rtp, port_max: rtp + 19, bind_address: '127.0.0.1' },
      billing: { require_route_for_sub_accounts: false },
      // The suppliers are sipp on loopback: the outbound guard lets them through only when allowed.
      security: { private_supplier_networks: TEST_NETWORKS, private_trunk_networks: TEST_NETWORKS },
      auth: { scrypt_cost: TEST_SCRYPT_COST },
    };
    const daemon = await spawnChildDaemon(t, overrides);
    const httpPort = daemon.ports['http']!;
    const place = async (to: string) => {
      const r = await httpsCall(`https://127.0.0.1:${httpPort}/api/v1/comms/calls`, 'POST', undefined, {
        insecure: true,
        token: secret,
        headers: { 'x-idempotency-key': `crash-${to}-${process.pid}` },
        body: { to, from: '+15550001111', async: true, maxDuration: 60, actions: [{ pause: 10 }, { pause: 10 }] },
      });
      if (r.status !== 202) throw new Error(`place: ${r.status} ${r.text}`);
      return r.json.data.callId as string;
    };
    const freshId = await place('+449300000001');
    const staleId = await place('+449400000001');
    await eventually(
      async () =>
        (await sql`select 1 from calls where id in (${freshId}, ${staleId}) and status = 'answered'`).length === 2,
      30_000,
    ).catch(async (e) => {
      t.comment(
        JSON.stringify(await sql`select status, hangup_reason from calls where id in (${freshId}, ${staleId})`),
      );
      throw e;
    });
    await daemon.kill();

    const node = loadNodeId(state);
    const owners = await sql<
      { ownerNode: string }[]
    >`select owner_node from calls where id in (${freshId}, ${staleId})`;
    t.same(
      owners.map((o) => o.ownerNode),
      [`${node}:api`, `${node}:api`],
      'owned by the dead daemon as API calls',
    );
    const [open] = await sql<{ n: string }[]>`select count(*)::text as n from holds where status = 'open'`;
    t.equal(open?.n, '2', 'the dead daemon left both holds open');

    // Seen 7 s after its answer; the other went silent more than 90 s ago, 9 s after its answer.
    await sql`update calls set last_seen_at = answered_at + interval '7 seconds' where id = ${freshId}`;
    await sql`update calls set answered_at = now() - interval '100 seconds', last_seen_at = now() - interval '91 seconds' where id = ${staleId}`;
    t.equal(await services.calls.reconcileOrphans(), 1, 'another daemon reconciles only the call silent for over 90 s');
    const [stillOpen] = await sql<{ endedAt: Date | null }[]>`select ended_at from calls where id = ${freshId}`;
    t.equal(stillOpen?.endedAt, null, 'a call with a recent heartbeat is left to its owner');

    const again = await startDaemon(loadConfig({ overrides }), { log: pino({ level: 'silent' }) });
    t.teardown(() => again.stop());

    const rows = await sql<
      {
        id: string;
        status: string;
        hangupCause: string;
        hangupReason: string;
        durationSeconds: number;
        billableSeconds: number;
        cost: string;
        endedAt: Date | null;
      }[]
    >`
    select id, status, hangup_cause, hangup_reason, duration_seconds, billable_seconds, cost::text, ended_at from calls where id in (${freshId}, ${staleId})`;
    const byId = new Map(rows.map((r) => [r.id, r]));
    t.match(
      byId.get(freshId),
      {
        status: 'completed',
        hangupCause: 'crash',
        durationSeconds: 7,
        billableSeconds: 7,
        cost: expectedCost(7, '0.010000'),
      },
      'the restarted daemon billed its own call at once, to its last heartbeat',
    );
    t.match(byId.get(staleId), {
      status: 'completed',
      hangupCause: 'crash',
      durationSeconds: 9,
      billableSeconds: 9,
      cost: expectedCost(9, '0.010000'),
    });
    t.match(byId.get(freshId)?.hangupReason, /restarted/);
    const cdrs = await sql<{ callUuid: string; hangupCause: string; billedSeconds: number; buyerCost: string }[]>`
    select call_uuid, hangup_cause, billed_seconds, buyer_cost::text from cdrs where call_uuid in (${freshId}, ${staleId}) order by billed_seconds`;
    t.match(
      cdrs,
      [
        { callUuid: freshId, hangupCause: 'crash', billedSeconds: 7 },
        { callUuid: staleId, hangupCause: 'crash', billedSeconds: 9 },
      ],
      'one CDR each',
    );

    const after = await services.ledger.balanceOf(w.operator.accountId);
    t.equal(after.held, before.held, 'both holds settled');
    const cost = new Decimal(expectedCost(7, '0.010000')).plus(expectedCost(9, '0.010000')).toFixed(6);
    t.equal(new Decimal(before.balance).minus(after.balance).toFixed(6), cost, 'the balance moved by the two costs');
    await checkInvariants(t as never, sql);
  },
);
