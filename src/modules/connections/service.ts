import { isIP } from 'node:net';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import { notFound, serviceUnavailable, validationError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { TargetRefusedError, type TargetGuard } from '../../platform/outbound-guard.js';
import type { ProbeResult, SipPeer } from '../../telephony/sip/index.js';
import type { SmppCredentialRow } from '../sms/smpp-in.js';
import type { PointPatch, TrunkCredentialRow, TrunkIpRow } from '../sip-trunks/repo.js';

type Transport = 'udp' | 'tcp' | 'tls';

/** What the connections module reads of the modules that own each kind of connection point. */
export interface ConnectionsDeps {
  config: Readonly<Config>;
  sql: Sql;
  clock: Clock;
  trunkIps(accountId: string): Promise<TrunkIpRow[]>;
  trunkCredentials(accountId: string): Promise<TrunkCredentialRow[]>;
  smppAccounts(accountId: string): Promise<SmppCredentialRow[]>;
  /** Limits and state of the SIP points (undefined: not the account's). */
  updateTrunkIp(accountId: string, id: string, patch: PointPatch): Promise<TrunkIpRow | undefined>;
  updateTrunkCredentials(
    accountId: string,
    purchaseId: string,
    patch: PointPatch,
  ): Promise<TrunkCredentialRow | undefined>;
  updateSmpp(
    accountId: string,
    id: string,
    patch: { disabled?: boolean; throughput?: number; maxBinds?: number | null },
  ): Promise<SmppCredentialRow | undefined>;
  /** Live calls through SIP points across daemons, and calls let through in the current second. */
  load(ids: readonly string[]): Promise<ReadonlyMap<string, { calls: number; cps: number }>>;
  /** Customer SMPP binds on this daemon now. */
  binds(): { accountId: string; systemId: string; bindType: string; remoteIp: string }[];
  /** One SIP OPTIONS over the daemon's stack; null when SIP is not listening. */
  probe(target: SipPeer): Promise<ProbeResult> | null;
  /** The outbound guard every customer-aimed target goes through. */
  guard: TargetGuard;
}

type Kind = 'sip_ip' | 'sip_credentials' | 'smpp';

export interface ConnectionPoint {
  id: string;
  kind: Kind;
  identifier: string;
  label: string | null;
  status: string;
  disabled: boolean;
  disabledAt: string | null;
  purchaseId: string | null;
  allowedIps: string[] | null;
  throughput: number | null;
  /** SMPP: binds the credential may hold open at once (its own, else the daemon's default). */
  maxBinds: number | null;
  maxConcurrentCalls: number | null;
  maxCps: number | null;
  currentCalls: number | null;
  currentCps: number | null;
  binds: { bindType: string; remoteIp: string }[] | null;
  createdAt: string;
  updatedAt: string | null;
}

/** What an account may change on one of its connection points (only the fields given). */
export interface ConnectionPatch {
  disabled?: boolean;
  maxConcurrentCalls?: number | null;
  maxCps?: number | null;
  throughput?: number;
  /** SMPP; null: back to the daemon's `[smpp] max_binds_per_credential`. */
  maxBinds?: number | null;
}

/** One reachability test as kept and listed. */
export interface ConnectionTest {
  id: string;
  host: string;
  port: number;
  transport: Transport;
  address: string | null;
  reachable: boolean;
  status: number | null;
  rttMs: number | null;
  createdAt: string;
}

const iso = (d: Date | null) => d?.toISOString() ?? null;

/**
 * Connections (spec group "Connections", designed in docs/interconnections.md): the account's
 * technical connection points gathered from the modules that own them (whitelisted SIP source
 * addresses, purchase SIP credentials, SMPP credentials with their live binds), where to connect,
 * and a reachability test of the customer's own SIP equipment.
 */
export function createConnectionsService(deps: ConnectionsDeps) {
  const { config, sql, clock } = deps;

  /** Keeps a test's result in the account's history; answers it with its id and time. */
  async function record(accountId: string, r: Omit<ConnectionTest, 'id' | 'createdAt'>): Promise<ConnectionTest> {
    const id = newId();
    const at = clock.now();
    await sql`
      insert into connection_tests (id, account_id, host, port, transport, address, reachable, status, rtt_ms, created_at)
      values (${id}, ${accountId}, ${r.host}, ${r.port}, ${r.transport}, ${r.address}, ${r.reachable}, ${r.status},
              ${r.rttMs}, ${at})`;
    return { id, ...r, createdAt: at.toISOString() };
  }

  async function list(accountId: string, kind?: Kind): Promise<ConnectionPoint[]> {
    const want = (k: Kind) => kind === undefined || kind === k;
    const [ips, creds, smpp] = await Promise.all([
      want('sip_ip') ? deps.trunkIps(accountId) : [],
      want('sip_credentials') ? deps.trunkCredentials(accountId) : [],
      want('smpp') ? deps.smppAccounts(accountId) : [],
    ]);
    const bound = deps.binds().filter((b) => b.accountId === accountId);
    const load = await deps.load([...ips.map((r) => r.id), ...creds.map((r) => r.purchaseId)]);
    const none = {
      purchaseId: null,
      allowedIps: null,
      throughput: null,
      maxBinds: null,
      maxConcurrentCalls: null,
      maxCps: null,
      currentCalls: null,
      currentCps: null,
      binds: null,
    };
    const sip = (id: string, r: TrunkIpRow | TrunkCredentialRow) => ({
      maxConcurrentCalls: r.maxConcurrentCalls,
      maxCps: r.maxCps,
      currentCalls: load.get(id)?.calls ?? 0,
      currentCps: load.get(id)?.cps ?? 0,
      disabled: r.disabledAt !== null,
      disabledAt: iso(r.disabledAt),
    });
    return [
      ...ips.map((r): ConnectionPoint => ({
        ...none,
        ...sip(r.id, r),
        id: r.id,
        kind: 'sip_ip',
        identifier: r.ip,
        label: r.label,
        status: r.disabledAt !== null ? 'disabled' : r.status,
        createdAt: r.createdAt.toISOString(),
        updatedAt: iso(r.updatedAt),
      })),
      ...creds.map((r): ConnectionPoint => ({
        ...none,
        ...sip(r.purchaseId, r),
        id: r.purchaseId,
        kind: 'sip_credentials',
        identifier: r.username,
        label: null,
        // Credentials of a purchase that is no longer active authenticate nothing.
        status: r.disabledAt !== null ? 'disabled' : r.purchaseStatus === 'active' ? 'active' : 'inactive',
        purchaseId: r.purchaseId,
        createdAt: r.createdAt.toISOString(),
        updatedAt: iso(r.updatedAt ?? r.rotatedAt),
      })),
      ...smpp.map((r): ConnectionPoint => ({
        ...none,
        id: r.id,
        kind: 'smpp',
        identifier: r.systemId,
        label: null,
        status: r.disabledAt === null ? 'active' : 'disabled',
        disabled: r.disabledAt !== null,
        disabledAt: iso(r.disabledAt),
        allowedIps: r.allowedIps,
        throughput: r.throughput,
        maxBinds: r.maxBinds ?? config.smpp.max_binds_per_credential,
        binds: bound
          .filter((b) => b.systemId === r.systemId)
          .map((b) => ({ bindType: b.bindType, remoteIp: b.remoteIp })),
        createdAt: r.createdAt.toISOString(),
        updatedAt: iso(r.updatedAt ?? r.disabledAt),
      })),
    ];
  }

  /** One connection point of the account, with its live state. */
  async function get(accountId: string, id: string): Promise<ConnectionPoint> {
    const found = (await list(accountId)).find((c) => c.id === id);
    if (!found) throw notFound('Connection');
    return found;
  }

  return {
    list,

    get,

    /**
     * Changes a point's limits or disables it without deleting it: SIP points take
     * `maxConcurrentCalls` and `maxCps` (null lifts one), SMPP credentials `throughput` and `maxBinds`; any takes
     * `disabled`. Calls and binds through a disabled point are refused on every daemon.
     */
    async update(accountId: string, id: string, patch: ConnectionPatch): Promise<ConnectionPoint> {
      const point = await get(accountId, id);
      const sip = { disabled: patch.disabled, maxConcurrentCalls: patch.maxConcurrentCalls, maxCps: patch.maxCps };
      const given = (o: Record<string, unknown>) =>
        Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as PointPatch;
      if (point.kind === 'smpp') {
        for (const f of ['maxConcurrentCalls', 'maxCps'] as const)
          if (patch[f] !== undefined)
            throw validationError([{ path: `/${f}`, message: 'SIP connection points only; SMPP takes throughput' }]);
        await deps.updateSmpp(accountId, id, {
          ...(patch.disabled === undefined ? {} : { disabled: patch.disabled }),
          ...(patch.throughput === undefined ? {} : { throughput: patch.throughput }),
          ...(patch.maxBinds === undefined ? {} : { maxBinds: patch.maxBinds }),
        });
      } else {
        for (const f of ['throughput', 'maxBinds'] as const)
          if (patch[f] !== undefined) throw validationError([{ path: `/${f}`, message: 'SMPP credentials only' }]);
        if (point.kind === 'sip_ip') await deps.updateTrunkIp(accountId, id, given(sip));
        else await deps.updateTrunkCredentials(accountId, id, given(sip));
      }
      return get(accountId, id);
    },

    /** Where customers point their equipment: the exchange's signalling and media addresses. */
    settings() {
      const hosts = [config.sip.primary_host, config.sip.secondary_host].filter((h) => h !== '');
      return {
        sip: {
          hosts,
          realm: config.sip.primary_host,
          udpPort: config.sip.port,
          tcpPort: config.sip.port,
          tlsPort: config.sip.tls_port,
          authentication: ['ip', 'digest'],
          digestAlgorithm: 'MD5',
          maxCallSeconds: config.sip.max_call_seconds,
        },
        smpp: {
          host: config.http.public_hostname,
          port: config.smpp.port,
          tlsPort: config.smpp.tls_port,
          version: '3.4',
          bindTypes: ['transmitter', 'receiver', 'transceiver'],
        },
        media: {
          rtpPortMin: config.rtp.port_min,
          rtpPortMax: config.rtp.port_max,
          codecs: ['PCMU', 'PCMA'],
          dtmf: 'RFC 2833',
        },
      };
    },

    /**
     * One SIP OPTIONS to the customer's equipment, through the outbound guard: a refused target
     * answers 400 before anything is sent; the probe goes to the checked address (TLS keeps the name).
     */
    async test(accountId: string, target: { host: string; port?: number; transport?: Transport }) {
      const transport = target.transport ?? 'udp';
      const port = target.port ?? (transport === 'tls' ? 5061 : 5060);
      let address: string;
      try {
        address = (await deps.guard.resolve(target.host, port)).address;
      } catch (err) {
        if (err instanceof TargetRefusedError) throw validationError([{ path: '/host', message: err.message }]);
        return record(accountId, {
          host: target.host,
          port,
          transport,
          address: null,
          reachable: false,
          status: null,
          rttMs: null,
        });
      }
      const peer: SipPeer = {
        host: address,
        port,
        transport,
        ...(transport === 'tls' && isIP(target.host) === 0 ? { servername: target.host } : {}),
      };
      const pending = deps.probe(peer);
      if (pending === null) throw serviceUnavailable('SIP is not listening on this server');
      const r = await pending;
      return record(accountId, {
        host: target.host,
        port,
        transport,
        address,
        reachable: r.ok,
        status: r.status,
        rttMs: r.rttMs,
      });
    },

    /** The account's reachability tests, newest first. */
    async tests(accountId: string, q: { cursor?: string | undefined; limit: number }): Promise<ConnectionTest[]> {
      const rows = await sql<
        (Omit<ConnectionTest, 'createdAt' | 'rttMs'> & { rttMs: string | null; createdAt: Date })[]
      >`
        select id, host, port, transport, address, reachable, status, rtt_ms::text as rtt_ms, created_at
        from connection_tests where account_id = ${accountId} ${q.cursor ? sql`and id < ${q.cursor}` : sql``}
        order by id desc limit ${q.limit + 1}`;
      return rows.map((r) => ({
        ...r,
        rttMs: r.rttMs === null ? null : Number(r.rttMs),
        createdAt: r.createdAt.toISOString(),
      }));
    },
  };
}

export type ConnectionsService = ReturnType<typeof createConnectionsService>;
