/**
 * The call service over its own SIP stack on 127.0.0.1 and a call engine (native by default, or
 * Asterisk over ARI), against a whole test daemon (ledger, routing, CDRs, outbox): what the live call tests share.
 */
import { Decimal } from 'decimal.js';
import { pino } from 'pino';
import type { Test } from 'tap';
import { createApiCallsService, type ApiCallsService } from '../../../src/modules/api-calls/service.js';
import type { AsteriskSettings } from '../../../src/telephony/asterisk/index.js';
import { createVoicePlane } from '../../../src/telephony/calls/voice-plane.js';
import type { MediaPlaneOptions } from '../../../src/telephony/media/index.js';
import { createLoopMarker, createSipStack, createSipTransport } from '../../../src/telephony/sip/index.js';
import { createWorld, eventually, type World } from '../sip-trunks/world.js';
import { engineOptions, type EngineName } from './engines.js';

export interface ServiceWorld {
  w: World;
  service: ApiCallsService;
  caller: { accountId: string; parentId: null; mode: 'live' };
  balance(): Promise<{ balance: string; held: string }>;
  events(id: string): Promise<{ event: string; data: Record<string, unknown> }[]>;
  /** The record once the call has ended. */
  ended(id: string, ms?: number): Promise<Record<string, unknown>>;
  /** Checks the balance moved by exactly the record's cost and no hold is left. */
  settled(t: Test, before: { balance: string; held: string }, rec: Record<string, unknown>): Promise<void>;
}

/** `rtpBase`: the first of 20 RTP ports this file may use (files run side by side). */
export async function createServiceWorld(
  t: Test,
  rtpBase: number,
  media: Partial<Pick<MediaPlaneOptions, 'downloader'>> = {},
  /** A named engine, or Asterisk settings a test built itself (several hosts, a proxy in front of ARI). */
  engine: EngineName | { asterisk: AsteriskSettings } = 'native',
): Promise<ServiceWorld> {
  const log = pino({ level: process.env['SVC_TEST_LOG'] ?? 'silent' });
  const w = await createWorld(t);
  const services = w.d.modules.services;
  const transport = await createSipTransport({ host: '127.0.0.1', port: 0, log });
  const stack = createSipStack({ transport, log });
  t.teardown(() => stack.close());
  let svc: ApiCallsService | null = null;
  const plane = createVoicePlane({
    stack,
    log,
    loopMarker: createLoopMarker('test secret'),
    media: {
      workers: 1,
      portMin: rtpBase,
      portMax: rtpBase + 19,
      bindAddress: '127.0.0.1',
      ttsCacheDir: null,
      ...media,
    },
    dialer: { setupTimeoutMs: 1500 },
    onLegEnded: (o) => svc?.noteLeg(o),
    ...(typeof engine === 'string' ? await engineOptions(t, engine) : engine),
  });
  t.teardown(() => plane.close());
  svc = createApiCallsService({
    ...w.d.core,
    ledger: services.ledger,
    routing: services.routing,
    accounts: services.accounts,
    application: services.application,
    admission: services.calls,
    callRecords: services.calls.records,
    cdrs: services.cdrs,
    node: 'service-world',
    voice: () => plane,
  });
  const service = svc;
  t.teardown(() => service.stop());
  const caller = { accountId: w.operator.accountId, parentId: null, mode: 'live' as const };
  const balance = () => services.ledger.balanceOf(w.operator.accountId);
  return {
    w,
    service,
    caller,
    balance,
    events: async (id) =>
      (await w.d.sql`select event, data from events where data->>'callId' = ${id} order by id`).map((e) => ({
        event: e['event'] as string,
        data: e['data'] as Record<string, unknown>,
      })),
    ended: (id, ms = 20_000) =>
      eventually(async () => {
        const c = await service.get(caller, id);
        return c['endedAt'] ? c : null;
      }, ms),
    async settled(t, before, rec) {
      const after = await balance();
      t.equal(
        new Decimal(before.balance).minus(after.balance).toFixed(6),
        rec['cost'],
        'the balance moved by the cost',
      );
      t.equal(after.held, before.held, 'no hold left');
    },
  };
}
