import { isIP } from 'node:net';
import { connectSmpp, createPdu, STATUS, str } from './smpp-lib.js';
import type { PDU, Session } from './smpp-lib.js';
import { bindFieldProblems } from './bind-fields.js';

export interface CheckBindDetails {
  host: string;
  port: number;
  tls: boolean;
  systemId: string;
  /** Used for this one handshake only; never logged or returned. */
  password: string;
  bindType: 'transceiver' | 'transmitter';
  systemType?: string;
  /** Whole check budget. Default 10 s. */
  timeoutMs?: number;
  /**
   * The address to connect to when the caller has already checked and pinned `host` (the
   * outbound guard); `host` is then only shown and used as the TLS name.
   */
  address?: string;
}

export interface BindCheck {
  label: 'connect' | 'bind' | 'unbind';
  value: string;
  ok: boolean;
}

export interface CheckBindResult {
  pass: boolean;
  checks: BindCheck[];
  message: string;
}

const STATUS_NAMES = new Map<number, string>(Object.entries(STATUS).map(([k, v]) => [v, k]));
const statusName = (s: number) => STATUS_NAMES.get(s) ?? `0x${s.toString(16).padStart(8, '0')}`;

/** One real bind and unbind with the given details, sending nothing (spec: Switch supplier test-sms). */
export function checkBind(d: CheckBindDetails): Promise<CheckBindResult> {
  const checks: BindCheck[] = [];
  const timeoutMs = d.timeoutMs ?? 10_000;
  const badFields = bindFieldProblems(d);
  if (badFields.length > 0) {
    return Promise.resolve({
      pass: false,
      checks: [{ label: 'bind', value: `control characters in ${badFields.join(', ')}`, ok: false }],
      message: 'bind details refused',
    });
  }
  return new Promise((resolve) => {
    let session: Session | null = null;
    let done = false;
    const finish = (message: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      session?.socket.destroy();
      resolve({ pass: checks.length === 3 && checks.every((c) => c.ok), checks, message });
    };
    const timer = setTimeout(() => {
      const stage = checks.length === 0 ? 'connect' : checks.length === 1 ? 'bind' : 'unbind';
      checks.push({ label: stage, value: 'timeout', ok: false });
      finish(`no answer at ${stage} within ${timeoutMs} ms`);
    }, timeoutMs);
    const s = connectSmpp({
      host: d.address ?? d.host,
      port: d.port,
      tls: d.tls,
      rejectUnauthorized: true,
      ...(d.tls && d.address !== undefined && isIP(d.host) === 0 ? { servername: d.host } : {}),
    });
    session = s;
    s.on('error', (err: NodeJS.ErrnoException) => {
      if (checks.length === 0) checks.push({ label: 'connect', value: err.code ?? err.message, ok: false });
      finish(checks.length <= 1 ? 'could not connect' : 'connection failed during the check');
    });
    s.on('close', () => finish('connection closed by the SMSC'));
    s.once(d.tls ? 'secureConnect' : 'connect', () => {
      checks.push({ label: 'connect', value: `${d.host}:${d.port}${d.tls ? ' (TLS)' : ''}`, ok: true });
      const bind = createPdu(d.bindType === 'transceiver' ? 'bind_transceiver' : 'bind_transmitter', {
        system_id: d.systemId,
        password: d.password,
        system_type: d.systemType ?? '',
        interface_version: 0x34,
      });
      s.send(bind, (resp: PDU) => {
        if (resp.command_status !== STATUS.ESME_ROK) {
          checks.push({ label: 'bind', value: statusName(resp.command_status), ok: false });
          finish('bind refused');
          return;
        }
        checks.push({ label: 'bind', value: `bound to ${str(resp['system_id']) || 'SMSC'}`, ok: true });
        s.send(createPdu('unbind'), (u: PDU) => {
          checks.push({
            label: 'unbind',
            value: statusName(u.command_status),
            ok: u.command_status === STATUS.ESME_ROK,
          });
          finish(u.command_status === STATUS.ESME_ROK ? 'bind and unbind succeeded' : 'unbind refused');
        });
      });
    });
  });
}
