import { isIP } from 'node:net';
import type { Config } from '../../config/schema.js';
import { serviceUnavailable, validationError } from '../../http/errors.js';
import { TargetRefusedError, type TargetGuard } from '../../platform/outbound-guard.js';
import type { ProbeResult, SipPeer } from '../../telephony/sip/index.js';
import type { SmppCredentialRow } from '../sms/smpp-in.js';

type Transport = 'udp' | 'tcp' | 'tls';

/** What the connections module reads of the modules that own each kind of connection point. */
export interface ConnectionsDeps {
  config: Readonly<Config>;
  trunkIps(
    accountId: string,
  ): Promise<{ id: string; ip: string; label: string | null; status: string; createdAt: Date }[]>;
  trunkCredentials(
    accountId: string,
  ): Promise<
    { username: string; purchaseId: string; purchaseStatus: string; createdAt: Date; rotatedAt: Date | null }[]
  >;
  smppAccounts(accountId: string): Promise<SmppCredentialRow[]>;
  /** Customer SMPP binds on this daemon now. */
  binds(): { accountId: string; systemId: string; bindType: string; remoteIp: string }[];
  /** One SIP OPTIONS over the daemon's stack; null when SIP is not listening. */
  probe(target: SipPeer): Promise<ProbeResult> | null;
  /** The outbound guard every customer-aimed target goes through. */
  guard: TargetGuard;
}

export interface ConnectionPoint {
  id: string;
  kind: 'sip_ip' | 'sip_credentials' | 'smpp';
  identifier: string;
  label: string | null;
  status: string;
  purchaseId: string | null;
  allowedIps: string[] | null;
  throughput: number | null;
  binds: { bindType: string; remoteIp: string }[] | null;
  createdAt: string;
  updatedAt: string | null;
}

/**
 * Connections (spec group "Connections", designed in docs/interconnections.md): the account's
 * technical connection points gathered from the modules that own them (whitelisted SIP source
 * addresses, purchase SIP credentials, SMPP credentials with their live binds), where to connect,
 * and a reachability test of the customer's own SIP equipment.
 */
export function createConnectionsService(deps: ConnectionsDeps) {
  const { config } = deps;

  return {
    async list(accountId: string, kind?: ConnectionPoint['kind']): Promise<ConnectionPoint[]> {
      const want = (k: ConnectionPoint['kind']) => kind === undefined || kind === k;
      const [ips, creds, smpp] = await Promise.all([
        want('sip_ip') ? deps.trunkIps(accountId) : [],
        want('sip_credentials') ? deps.trunkCredentials(accountId) : [],
        want('smpp') ? deps.smppAccounts(accountId) : [],
      ]);
      const bound = deps.binds().filter((b) => b.accountId === accountId);
      const none = { purchaseId: null, allowedIps: null, throughput: null, binds: null, updatedAt: null };
      return [
        ...ips.map((r) => ({
          ...none,
          id: r.id,
          kind: 'sip_ip' as const,
          identifier: r.ip,
          label: r.label,
          status: r.status,
          createdAt: r.createdAt.toISOString(),
        })),
        ...creds.map((r) => ({
          ...none,
          id: r.purchaseId,
          kind: 'sip_credentials' as const,
          identifier: r.username,
          label: null,
          // Credentials of a purchase that is no longer active authenticate nothing.
          status: r.purchaseStatus === 'active' ? 'active' : 'inactive',
          purchaseId: r.purchaseId,
          createdAt: r.createdAt.toISOString(),
          updatedAt: r.rotatedAt?.toISOString() ?? null,
        })),
        ...smpp.map((r) => ({
          ...none,
          id: r.id,
          kind: 'smpp' as const,
          identifier: r.systemId,
          label: null,
          status: r.disabledAt === null ? 'active' : 'disabled',
          allowedIps: r.allowedIps,
          throughput: r.throughput,
          binds: bound
            .filter((b) => b.systemId === r.systemId)
            .map((b) => ({ bindType: b.bindType, remoteIp: b.remoteIp })),
          createdAt: r.createdAt.toISOString(),
          updatedAt: r.disabledAt?.toISOString() ?? null,
        })),
      ];
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
    async test(target: { host: string; port?: number; transport?: Transport }) {
      const transport = target.transport ?? 'udp';
      const port = target.port ?? (transport === 'tls' ? 5061 : 5060);
      let address: string;
      try {
        address = (await deps.guard.resolve(target.host, port)).address;
      } catch (err) {
        if (err instanceof TargetRefusedError) throw validationError([{ path: '/host', message: err.message }]);
        return { host: target.host, port, transport, address: null, reachable: false, status: null, rttMs: null };
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
      return { host: target.host, port, transport, address, reachable: r.ok, status: r.status, rttMs: r.rttMs };
    },
  };
}

export type ConnectionsService = ReturnType<typeof createConnectionsService>;
