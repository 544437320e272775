import t from 'tap';
import { createWorld, eventually } from '../sip-trunks/world.js';
import { available, callee, MANY } from '../api-calls/peers.js';
import { sippMediaPort, sipp } from '../../telephony/sip/sipp.js';

/**
 * A campaign's test call against a real callee (sipp): the campaign's route, caller ID and prompt,
 * billed as an ordinary API call, and no attempt, counter or spend of the campaign.
 */
t.test(
  'a campaign test call reaches sipp and leaves the campaign untouched',
  { skip: available ? false : 'sipp or espeak-ng not installed' },
  async (t) => {
    const base = 44000 + (process.pid % 300) * 20;
    const w = await createWorld(t, {
      rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' },
      voice: { max_api_calls_per_account: 0 },
    });
    const { d, operator } = w;
    const { secret } = await d.modules.services.keys.create(operator.accountId, { mode: 'live', scopes: [] });
    const api = (method: string, url: string, body?: unknown) => w.api(method, url, secret, body);
    const peer = await sipp(t, callee('[0-9]+', '', false), ['-mp', String(await sippMediaPort())], {
      timeout: '60s',
      calls: MANY,
    });
    const { routeId } = await w.route({ port: peer.port, prefix: '4473', rate: '0.012000', increment: '1/1' });
    const set = (await api('POST', '/dialer/cli-sets', { name: 'main', clis: ['+15550001111', '+15550002222'] })).body
      .data;
    const c = (
      await api('POST', '/dialer/campaigns', {
        name: 'Try me',
        routeId,
        maxCallDuration: 30,
        cliSetId: set.id,
        actions: [{ say: 'This is a test.' }, { hangup: true }],
      })
    ).body.data;

    const placed = await api('POST', `/dialer/campaigns/${c.id}/test-call`, {
      number: '+447300000999',
      cli: '+15550002222',
    });
    t.equal(placed.status, 202, placed.text);
    t.match(placed.body.data, { kind: 'voice', to: '+447300000999', from: '+15550002222', messageId: null });
    const call = await eventually(async () => {
      const r = await api('GET', `/comms/calls/${placed.body.data.callId}`);
      return r.body.data?.endedAt ? r.body.data : null;
    }, 60_000);
    t.match(call, { status: 'completed', from: '+15550002222', to: '+447300000999' });
    t.ok(Number(call.cost) > 0, `billed as an API call (${call.cost})`);

    const after = (await api('GET', `/dialer/campaigns/${c.id}`)).body.data;
    t.match(after, { status: 'draft', numbersDialed: 0, spent: '0.000000', totalNumbers: 0 });
    const [attempts] = await d.sql<
      { n: number }[]
    >`select count(*)::int as n from dialer_attempts where campaign_id = ${c.id}`;
    t.equal(attempts!.n, 0, 'no attempt of the campaign');

    const foreign = await api('POST', `/dialer/campaigns/${c.id}/test-call`, {
      number: '+447300000998',
      cli: '+15559999999',
    });
    t.equal(foreign.status, 400);
    t.equal(foreign.body.error.details[0].path, 'cli');
    await api('POST', '/dnc', { numbers: ['+447300000997'] });
    const listed = await api('POST', `/dialer/campaigns/${c.id}/test-call`, { number: '+447300000997' });
    t.equal(listed.status, 400, 'a do-not-call number is never dialled');
    t.match(listed.body.error.message, /do-not-call/);
    await api('PUT', '/dialer/caller-ids/%2B15550001111/status', { status: 'paused' });
    await api('PUT', '/dialer/caller-ids/%2B15550002222/status', { status: 'paused' });
    const none = await api('POST', `/dialer/campaigns/${c.id}/test-call`, { number: '+447300000996' });
    t.equal(none.status, 400, 'every caller ID paused: nothing to present');
    const calls = await d.sql<{ n: number }[]>`select count(*)::int as n from calls where source = 'api'`;
    t.equal(calls[0]!.n, 1, 'only the first test call was placed');
  },
);
