import { Decimal } from 'decimal.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import { loadConfig, type DeepPartial } from '../../../src/config/load.js';
import type { Config } from '../../../src/config/schema.js';
import { startDaemon } from '../../../src/daemon.js';
import { httpsCall, TEST_NETWORKS, TEST_SCRYPT_COST } from '../../helpers/daemon.js';
import { checkInvariants } from '../../ledger/helpers.js';
import { sippMediaPort, sipp } from '../../telephony/sip/sipp.js';
import { available, callee, MANY } from '../api-calls/peers.js';
import { spawnChildDaemon } from '../sip-trunks/child-daemon.js';
import { createWorld, eventually } from '../sip-trunks/world.js';

/**
 * A daemon SIGKILLed while its campaign has calls answered: started again, it follows those calls
 * to their end (the call plane bills them to the last heartbeat), records them once, and dials the
 * rest. No number is called twice with maxAttempts 1, and no counter is lost.
 */
t.test(
  'a campaign survives SIGKILL of its daemon',
  { skip: available ? false : 'sipp or espeak-ng not installed' },
  async (t) => {
    const w = await createWorld(t);
    const { sql } = w.d;
    const services = w.d.modules.services;
    // This in-process daemon only prepares the world; the child runs the campaign.
    await services.dialer.runner.stop();
    // sipp's -timeout ends the peer after that long whatever it is doing: under load 16-22 this test
    // ran 140-300 s, and a 90 s peer was gone before the restarted daemon's calls (they failed, or
    // waited out their INVITE timeouts). It outlives any tap timeout the test runs under; teardown kills it.
    const peer = await sipp(t, callee('[0-9]+', '', false), ['-mp', String(await sippMediaPort())], {
      timeout: '330s',
      calls: MANY,
    });
    const { routeId } = await w.route({ port: peer.port, prefix: '4476', rate: '0.010000', increment: '1/1' });
    const { secret } = await services.keys.create(w.operator.accountId, { mode: 'live', scopes: [] });
    const api = (method: string, url: string, body?: unknown) => w.api(method, url, secret, body);
    const cli = (await api('POST', '/dialer/cli-sets', { name: 'c', clis: ['+15550004444'] })).body.data;
    const c = (
      await api('POST', '/dialer/campaigns', {
        name: 'Crash',
        routeId,
        concurrency: 3,
        maxAttempts: 1,
        maxCallDuration: 60,
        cliSetId: cli.id,
        actions: [{ pause: 6 }, { hangup: true }],
      })
    ).body.data;
    const numbers = Array.from({ length: 6 }, (_, i) => `+44760000000${i}`);
    await api('POST', `/dialer/campaigns/${c.id}/numbers`, { numbers });
    const before = await services.ledger.balanceOf(w.operator.accountId);

    const state = mkdtempSync(join(tmpdir(), 'svc-dialercrash-state-'));
    t.teardown(() => rmSync(state, { recursive: true, force: true }));
    const rtp = 47000 + (process.pid % 200) * 20;
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
      security: { private_supplier_networks: TEST_NETWORKS, private_trunk_networks: TEST_NETWORKS },
      auth: { scrypt_cost: TEST_SCRYPT_COST },
      voice: { max_api_calls_per_account: 0 },
      dialer: { tick_ms: 50, call_poll_ms: 200 },
    };
    const child = await spawnChildDaemon(t, overrides);
    const start = await httpsCall(
      `https://127.0.0.1:${child.ports['http']}/api/v1/dialer/campaigns/${c.id}/control`,
      'POST',
      undefined,
      {
        insecure: true,
        token: secret,
        body: { action: 'start' },
      },
    );
    t.equal(start.status, 200, start.text);
    await eventually(async () => {
      const rows = await sql`
      select 1 from dialer_numbers n join calls k on k.id = n.last_call_id
      where n.campaign_id = ${c.id} and n.state = 'dialing' and k.status = 'answered'`;
      return rows.length === 3;
    }, 90_000);
    await child.kill();
    const mid = (await api('GET', `/dialer/campaigns/${c.id}`)).body.data;
    t.match(mid, { status: 'running', numbersDialed: 3, numbersAnswered: 0 }, 'killed with three calls answered');

    const again = await startDaemon(loadConfig({ overrides }), { log: pino({ level: 'silent' }) });
    t.teardown(() => again.stop());
    const done = await eventually(async () => {
      const r = (await api('GET', `/dialer/campaigns/${c.id}`)).body.data;
      return r.status === 'completed' ? r : null;
    }, 120_000);
    const outcomes = await sql<{ number: string; status: string; cause: string | null }[]>`
    select number, status, cause from dialer_attempts where campaign_id = ${c.id} order by number`;
    t.match(done, { numbersDialed: 6, numbersAnswered: 6, numbersFailed: 0 }, 'every counter kept', { outcomes });

    const perNumber = await sql<{ toNumber: string; n: number }[]>`
    select to_number, count(*)::int as n from calls where source = 'api' group by 1 order by 1`;
    t.equal(perNumber.length, 6);
    t.ok(
      perNumber.every((x) => x.n === 1),
      'each number was called once',
    );
    const attempts = await sql<{ cost: string; callId: string }[]>`
    select cost::numeric(20,6)::text as cost, call_id from dialer_attempts where campaign_id = ${c.id}`;
    t.equal(attempts.length, 6, 'one attempt recorded per number');
    const [callCost] = await sql<{ s: string }[]>`
    select sum(cost)::numeric(20,6)::text as s from calls where source = 'api'`;
    const total = attempts.reduce((s, a) => s.plus(a.cost), new Decimal(0)).toFixed(6);
    t.equal(total, callCost!.s, 'the campaign recorded what every call was billed, the crashed ones included');
    t.equal(done.spent, total);
    const after = await services.ledger.balanceOf(w.operator.accountId);
    t.equal(new Decimal(before.balance).minus(after.balance).toFixed(6), total, 'the balance moved by exactly that');
    t.equal(after.held, before.held, 'no hold left');
    await checkInvariants(t as never, sql);
  },
);
