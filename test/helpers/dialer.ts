/** A daemon on a movable clock with test-key dialer campaigns: routed, priced and recorded, never dialled. */
import { createWorld, eventually, type Tt, type World } from '../modules/sip-trunks/world.js';
import { callee, MANY } from '../modules/api-calls/peers.js';
import { sippMediaPort, sipp } from '../telephony/sip/sipp.js';

/** A campaign as the API answers it. */
type CampaignBody = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface SimulatedDialer extends World {
  /** The account's full-access live key (caller-ID sets, do-not-call, analytics). */
  live: string;
  /** A test key with `dialer:write`: its campaigns are simulated. */
  test: string;
  /** A voice route bought by the operator (nothing listens: a simulated call reaches no peer). */
  routeId: string;
  /** Moves the daemon's clock to `iso`; it keeps running from there. */
  moveTo(iso: string): void;
  cliSet(clis: string[]): Promise<string>;
  /** A test-key voice campaign (concurrency 1, 60 s, one spoken line unless `extra` says) holding `numbers`. */
  campaign(name: string, numbers: string[], extra?: Record<string, unknown>): Promise<string>;
  control(id: string, action: 'start' | 'pause' | 'stop'): ReturnType<World['api']>;
  get(id: string): Promise<CampaignBody>;
  /** The campaign once `pred` holds for it (60 s at most). */
  until(id: string, pred: (c: CampaignBody) => boolean): Promise<CampaignBody>;
}

/**
 * A trading world whose daemon reads `at` (then the time passing) from its injected clock, with
 * 5.000000 of test credit for the operator and a route rated 0.020000 per 60 s block for `prefix`.
 */
export async function simulatedDialer(
  t: Tt,
  at: string,
  o: { overrides?: Record<string, unknown>; prefix?: string; frozen?: boolean } = {},
): Promise<SimulatedDialer> {
  let offset = Date.parse(at) - Date.now();
  const clock = o.frozen ? { now: () => new Date(Date.parse(at)) } : { now: () => new Date(Date.now() + offset) };
  const w = await createWorld(t, { dialer: { tick_ms: 50, call_poll_ms: 100 }, ...o.overrides }, { clock } as never);
  const { keys, ledger } = w.d.modules.services;
  const live = (await keys.create(w.operator.accountId, { mode: 'live', scopes: [] })).secret;
  const test = (await keys.create(w.operator.accountId, { mode: 'test', scopes: ['dialer:write'] })).secret;
  await ledger.grantTestCredit({
    postingKey: `tc-${w.operator.accountId}`,
    accountId: w.operator.accountId,
    amount: '5.000000',
  });
  const { routeId } = await w.route({ port: 9, prefix: o.prefix ?? '4475', rate: '0.020000', increment: '60/60' });
  const get: SimulatedDialer['get'] = async (id) => (await w.api('GET', `/dialer/campaigns/${id}`, test)).body.data;
  return Object.assign(w, {
    live,
    test,
    routeId,
    moveTo(iso: string) {
      offset = Date.parse(iso) - Date.now();
    },
    async cliSet(clis: string[]) {
      const r = await w.api('POST', '/dialer/cli-sets', live, { name: clis[0], clis });
      t.equal(r.status, 201, r.text, {});
      return r.body.data.id as string;
    },
    async campaign(name: string, numbers: string[], extra: Record<string, unknown> = {}) {
      const r = await w.api('POST', '/dialer/campaigns', test, {
        name,
        routeId,
        concurrency: 1,
        maxCallDuration: 60,
        actions: [{ say: 'Hello' }],
        ...extra,
      });
      t.equal(r.status, 201, r.text, {});
      const added = await w.api('POST', `/dialer/campaigns/${r.body.data.id}/numbers`, test, { numbers });
      t.equal(added.status, 200, added.text, {});
      return r.body.data.id as string;
    },
    control: (id: string, action: 'start' | 'pause' | 'stop') =>
      w.api('POST', `/dialer/campaigns/${id}/control`, test, { action }),
    get,
    until: (id: string, pred: (c: CampaignBody) => boolean) =>
      eventually(async () => {
        const c = await get(id);
        return pred(c) ? c : null;
      }, 60_000),
  });
}

/** A live dialer through the call plane: the daemon dialling a sipp that answers every number. */
export interface LiveDialer extends World {
  /** The API with the account's full-access live key. */
  liveApi(method: string, url: string, body?: unknown): ReturnType<World['api']>;
  /** A voice route to the sipp for `4473…`, rated 0.012000 per second. */
  routeId: string;
}

/** A trading world with a live key and a sipp callee behind a `4473` route; `dialer` overrides the dialer settings. */
export async function liveDialer(t: Tt, dialer: Record<string, unknown> = {}): Promise<LiveDialer> {
  const base = 45000 + (process.pid % 300) * 20;
  const w = await createWorld(t, {
    rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' },
    voice: { max_api_calls_per_account: 0 },
    dialer: { tick_ms: 50, call_poll_ms: 150, ...dialer },
  });
  const { secret } = await w.d.modules.services.keys.create(w.operator.accountId, { mode: 'live', scopes: [] });
  const peer = await sipp(t, callee('[0-9]+', '', false), ['-mp', String(await sippMediaPort())], {
    timeout: '60s',
    calls: MANY,
  });
  const { routeId } = await w.route({ port: peer.port, prefix: '4473', rate: '0.012000', increment: '1/1' });
  return Object.assign(w, {
    liveApi: (method: string, url: string, body?: unknown) => w.api(method, url, secret, body),
    routeId,
  });
}
