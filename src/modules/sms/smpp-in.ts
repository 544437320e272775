/**
 * Customer SMPP binds: credentials per account, and the bridge from the messaging
 * plane's SMPP server to the same send path as POST /comms/sms (history `smpp_sms`), with final
 * receipts going back as deliver_sm.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Db, Sql } from '../../db/connection.js';
import { AppError, fromSqlState, InsufficientBalanceError, validationError } from '../../http/errors.js';
import {
  createSmppServer,
  SMPP_STATUS,
  type SmppServer,
  type SmppServerOptions,
  type SmppSubmission,
  type SmppSubmitResult,
} from '../../messaging/index.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { createTtlCache } from '../../platform/ttl-cache.js';
import { hashPassword } from '../accounts/passwords.js';
import type { SmsService } from './service.js';
import { createSmppVerifier, unknownIdHash } from './smpp-verifier.js';

/** Vendor-specific status for "insufficient balance" (documented to customers; messaging README). */
export const ESME_X_NO_CREDIT = 0x00000401;

export interface SmppCredentials {
  id: string;
  systemId: string;
  /** Shown once. */
  password: string;
  allowedIps: string[];
  throughput: number;
  /** Binds open at once; null: the daemon's `[smpp] max_binds_per_credential`. */
  maxBinds: number | null;
}

/** How long a password that passed scrypt is accepted again without it (reconnecting binds). */
const VERIFIED_TTL_MS = 10 * 60_000;

/** SMPP credentials as listed (no secret). */
export interface SmppCredentialRow {
  id: string;
  systemId: string;
  allowedIps: string[];
  throughput: number;
  maxBinds: number | null;
  createdAt: Date;
  disabledAt: Date | null;
  updatedAt: Date | null;
}

export function createSmppCredentials(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  defaultMaxBinds: number;
  /** [auth] scrypt_cost: new passwords are hashed at it, and an unknown system_id costs the same. */
  scryptCost: number;
}) {
  const { sql, clock, defaultMaxBinds, scryptCost } = deps;
  const unknownHash = unknownIdHash(scryptCost);
  const verifier = createSmppVerifier({ log: deps.log.child({ plane: 'smpp-in' }) });
  // Passwords that passed, as a keyed hash with the stored hash they passed against (a new
  // password or a re-issue misses): a bind storm of good credentials costs one scrypt each, and
  // the process holds no password in the clear. The key never leaves this process.
  const cacheKey = randomBytes(32);
  const verified = createTtlCache<string, true>(VERIFIED_TTL_MS, clock, 10_000);
  const fingerprint = (systemId: string, password: string, hash: string): string =>
    createHmac('sha256', cacheKey).update(`${systemId}\0${password}\0${hash}`).digest('base64url');
  return {
    /** Issues SMPP credentials for an account (or sub-account); the password is returned only here. */
    async issue(
      accountId: string,
      opts: { systemId?: string; allowedIps?: string[]; throughput?: number; maxBinds?: number } = {},
      db: Db = sql,
    ): Promise<SmppCredentials> {
      const systemId = opts.systemId ?? `s${randomBytes(5).toString('hex')}`;
      if (!/^[A-Za-z0-9_-]{1,16}$/.test(systemId))
        throw validationError([{ path: 'systemId', message: '1 to 16 letters, digits, _ or -' }]);
      // SMPP 3.4 passwords are at most 8 octets.
      const password = randomBytes(6).toString('base64url');
      const id = newId();
      const throughput = opts.throughput ?? 50;
      const maxBinds = opts.maxBinds ?? null;
      await db`
        insert into smpp_accounts (id, account_id, system_id, password_hash, allowed_ips, throughput, max_binds, created_at)
        values (${id}, ${accountId}, ${systemId}, ${await hashPassword(password, scryptCost)}, ${opts.allowedIps ?? []}::inet[],
                ${throughput}, ${maxBinds}, ${clock.now()})`;
      return { id, systemId, password, allowedIps: opts.allowedIps ?? [], throughput, maxBinds };
    },

    async authenticate(
      systemId: string,
      password: string,
      remoteIp: string,
    ): Promise<{ accountId: string; throughputPerSecond: number; maxBinds: number } | null> {
      const [row] = await sql<
        { accountId: string; passwordHash: string; throughput: number; maxBinds: number | null; ipOk: boolean }[]
      >`
        select account_id, password_hash, throughput, max_binds,
               (cardinality(allowed_ips) = 0 or ${remoteIp.replace(/^::ffff:/, '')}::inet = any(allowed_ips)) as ip_ok
        from smpp_accounts where system_id = ${systemId} and disabled_at is null`;
      const fp = row ? fingerprint(systemId, password, row.passwordHash) : null;
      // An unknown id is checked against a hash no password matches: the same scrypt, the same time.
      const good =
        (fp !== null && verified.get(fp) === true) ||
        (await verifier.verify(password, row?.passwordHash ?? unknownHash));
      if (!row || !good) return null;
      verified.set(fp!, true);
      if (!row.ipOk) return null;
      return {
        accountId: row.accountId,
        throughputPerSecond: row.throughput,
        maxBinds: row.maxBinds ?? defaultMaxBinds,
      };
    },

    /** Whether the credential is restricted to a list of addresses and `remoteIp` is on it. */
    async isOwnAddress(systemId: string, remoteIp: string): Promise<boolean> {
      const [row] = await sql<{ own: boolean }[]>`
        select ${remoteIp.replace(/^::ffff:/, '')}::inet = any(allowed_ips) as own
        from smpp_accounts where system_id = ${systemId} and disabled_at is null and cardinality(allowed_ips) > 0`;
      return row?.own === true;
    },

    /** The account's SMPP credentials (no secrets), newest first. */
    list: (accountId: string) =>
      sql<SmppCredentialRow[]>`
        select id, system_id, array(select host(a) from unnest(allowed_ips) a) as allowed_ips, throughput, max_binds,
               created_at, disabled_at, updated_at
        from smpp_accounts where account_id = ${accountId} order by created_at desc`,

    /**
     * Disables or enables a credential, or sets its throughput (only the fields given). Every
     * daemon's binds hear of it (migration 264's trigger). Undefined when the account has no such credential.
     */
    async update(
      accountId: string,
      id: string,
      patch: { disabled?: boolean; throughput?: number; maxBinds?: number | null },
    ): Promise<SmppCredentialRow | undefined> {
      const at = clock.now();
      const set = {
        ...(patch.throughput === undefined ? {} : { throughput: patch.throughput }),
        ...(patch.maxBinds === undefined ? {} : { max_binds: patch.maxBinds }),
        updated_at: at,
      };
      // Disabling twice keeps the first instant; enabling clears it.
      const [row] = await sql<SmppCredentialRow[]>`
        update smpp_accounts set ${sql(set)},
          disabled_at = ${patch.disabled === undefined ? sql`disabled_at` : patch.disabled ? sql`coalesce(disabled_at, ${at})` : null}
        where id = ${id} and account_id = ${accountId}
        returning id, system_id, array(select host(a) from unnest(allowed_ips) a) as allowed_ips, throughput,
                  max_binds, created_at, disabled_at, updated_at`;
      return row;
    },

    /** What live binds of `systemId` may do now: null when disabled or gone. */
    async state(systemId: string): Promise<{ throughputPerSecond: number } | null> {
      const [row] = await sql<{ throughput: number }[]>`
        select throughput from smpp_accounts where system_id = ${systemId} and disabled_at is null`;
      return row ? { throughputPerSecond: row.throughput } : null;
    },

    /** Password checks run on the verifier thread so far. */
    checks: () => verifier.checks(),

    close: () => verifier.close(),
  };
}

export type SmppCredentialsService = ReturnType<typeof createSmppCredentials>;

/** submit_sm statuses for send refusals (messaging README's suggested table). */
export function statusForError(err: unknown): number {
  const code = (err as { code?: unknown } | null)?.code;
  const fromLedger =
    typeof code === 'string' && !(err instanceof AppError) ? fromSqlState(code, String((err as Error).message)) : null;
  if (err instanceof InsufficientBalanceError || fromLedger instanceof InsufficientBalanceError)
    return ESME_X_NO_CREDIT;
  if (err instanceof AppError && err.code === 'VALIDATION_ERROR') {
    const paths = Array.isArray(err.details) ? err.details.map((d) => d.path) : [];
    if (paths.includes('from')) return SMPP_STATUS.ESME_RINVSRCADR;
    return SMPP_STATUS.ESME_RINVDSTADR;
  }
  return SMPP_STATUS.ESME_RSYSERR;
}

/** The customer SMPP server on the send path; receipts of final states go back to the account's binds. */
export function createCustomerSmpp(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  sms: SmsService;
  credentials: SmppCredentialsService;
  port: number | null;
  tlsPort: number | null;
  host: string;
  tls: { key: string | Buffer; cert: string | Buffer } | null;
  idleTimeoutMs?: number;
  limits?: Pick<SmppServerOptions, 'bindTimeoutMs' | 'maxConnections' | 'maxPerSource' | 'lockout'>;
  bindSlots?: SmppServerOptions['bindSlots'];
}): SmppServer {
  const { sql, log, sms } = deps;
  const server = createSmppServer({
    port: deps.port,
    tlsPort: deps.tls ? deps.tlsPort : null,
    host: deps.host,
    tls: deps.tls,
    log: log.child({ plane: 'smpp-in' }),
    clock: deps.clock,
    idleTimeoutMs: deps.idleTimeoutMs ?? 120_000,
    ...deps.limits,
    ...(deps.bindSlots ? { bindSlots: deps.bindSlots } : {}),
    authenticate: (systemId, password, ip) => deps.credentials.authenticate(systemId, password, ip),
    isOwnAddress: (systemId, ip) => deps.credentials.isOwnAddress(systemId, ip),
    async onSubmit(account, sub: SmppSubmission): Promise<SmppSubmitResult> {
      try {
        const [acc] = await sql<
          { parentId: string | null }[]
        >`select parent_id from accounts where id = ${account.accountId}`;
        const r = await sms.send(
          { accountId: account.accountId, parentId: acc?.parentId ?? null, mode: 'live', source: 'smpp' },
          { to: sub.to, from: sub.from, message: sub.text, customerPartIds: sub.partMessageIds },
        );
        return r.status === 'sent' ? { messageId: r.messageId } : { commandStatus: SMPP_STATUS.ESME_RSUBMITFAIL };
      } catch (err) {
        const status = statusForError(err);
        if (status === SMPP_STATUS.ESME_RSYSERR) log.error({ err }, 'smpp submit failed');
        return { commandStatus: status };
      }
    },
  });
  sms.setReceiptSink((f) => {
    const m = f.message;
    server.deliverReceipt(m.accountId, {
      messageId: m.id,
      partMessageIds: m.customerPartIds,
      stat: f.stat,
      err: f.err,
      submitDate: m.sentAt ?? m.queuedAt,
      doneDate: f.at,
      to: m.toNumber,
      from: m.fromSender,
      sub: 1,
      dlvrd: f.stat === 'DELIVRD' ? 1 : 0,
    });
  });
  return server;
}
