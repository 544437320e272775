import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import { conflict, notFound, ruleError } from '../../http/errors.js';
import type { Ledger } from '../../ledger/ledger.js';
import { Money } from '../../ledger/money.js';
import type { Clock } from '../../platform/clock.js';
import { emit } from '../../webhooks/emit.js';
import type { AccountsService } from '../accounts/service.js';
import type { CdrFilter, CdrRow } from '../cdrs/index.js';
import { cdrCsv, type CdrReports } from '../cdrs/index.js';
import type { KeysService } from '../keys/service.js';
import type { ApplicationService } from './service.js';

/**
 * What an operator does with a sub-account after creating it: suspend and resume, close (its
 * balance returned, keys revoked, SIP refused), take money back, its API keys, SIP credentials,
 * usage and records. Status lives on the account (the SIP and API admission read it).
 */
export function createSubAccountLifecycle(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  config: Readonly<Config>;
  ledger: Ledger;
  accounts: AccountsService;
  keys: KeysService;
  application: ApplicationService;
  cdrs: Pick<CdrReports, 'dailyUsage'> & { listCdrs(f: CdrFilter): Promise<CdrRow[]> };
}) {
  const { sql, clock, ledger, accounts, keys, application } = deps;

  /** The operator's own sub-account (never another operator's, never the sub-account itself acting). */
  async function own(operatorId: string, id: string) {
    const sub = await application.get(operatorId, id);
    if (id === operatorId) throw notFound('Sub-account');
    return sub;
  }

  async function setStatus(operatorId: string, id: string, to: 'active' | 'suspended', reason: string | null) {
    const sub = await own(operatorId, id);
    if (sub.status === 'closed') throw conflict('The sub-account is closed');
    const account = await accounts.getAccount(id);
    if (account?.status === to) return application.get(operatorId, id);
    await sql.begin(async (tx) => {
      await accounts.repo.setStatus(id, to, clock.now(), tx);
      await emit(tx, {
        accountId: operatorId,
        event: to === 'suspended' ? 'sub_account.suspended' : 'sub_account.resumed',
        data: { subAccountId: id, reason: reason ?? 'operator' },
        at: clock.now(),
      });
    });
    deps.log.info({ operatorId, subAccountId: id, status: to }, 'sub-account status changed');
    return application.get(operatorId, id);
  }

  return {
    suspend: (operatorId: string, id: string, reason?: string) =>
      setStatus(operatorId, id, 'suspended', reason ?? null),
    resume: (operatorId: string, id: string) => setStatus(operatorId, id, 'active', null),

    /** Money back to the operator: `amount`, or all the sub-account's own balance not held by live calls. */
    async transferBack(operatorId: string, id: string, amount: string | undefined, postingKey: string) {
      const sub = await own(operatorId, id);
      const bal = await ledger.balanceOf(id);
      const free = Money.parse(bal.balance).minus(bal.held);
      const take = amount === undefined ? free : Money.parse(amount);
      if (!take.isPositive()) throw ruleError('Nothing to transfer back: the sub-account has no free balance');
      const r = await ledger.transferBack({
        postingKey: `subback:${operatorId}:${postingKey}`,
        subAccountId: sub.id,
        operatorId,
        amount: take.toString(),
        reference: 'transfer back to operator',
      });
      return {
        transactionId: r.postingId,
        subAccountId: id,
        amount: r.amount ?? take.toString(),
        balance: r.balanceAfter ?? '0.000000',
        operatorBalance: r.toBalanceAfter,
        replayed: r.replayed,
      };
    },

    /**
     * Closes a sub-account for good: its whole balance goes back to the operator, its keys are
     * revoked and its SIP user refused. Refused while live calls hold part of its balance.
     */
    async close(operatorId: string, id: string) {
      const sub = await own(operatorId, id);
      if (sub.status === 'closed') throw conflict('The sub-account is already closed');
      const bal = await ledger.balanceOf(id);
      if (Money.parse(bal.held).isPositive()) throw conflict('The sub-account has live calls; close it after they end');
      const returned = Money.parse(bal.balance);
      if (returned.isNegative())
        throw ruleError('The sub-account owes money (negative balance); fund it before closing');
      const r = await sql.begin(async (tx) => {
        const moved = returned.isPositive()
          ? await ledger.transferBack(
              {
                postingKey: `subclose:${id}`,
                subAccountId: id,
                operatorId,
                amount: returned.toString(),
                reference: 'sub-account closed: balance returned',
              },
              tx,
            )
          : null;
        // No credit limit left on the operator's money for a closed account.
        await ledger.setLimits(id, { creditLimit: '0', dailySpendCap: null }, tx);
        await accounts.repo.setStatus(id, 'closed', clock.now(), tx);
        return moved;
      });
      for (const k of await keys.list(id)) if (!k.revokedAt) await keys.revoke(id, k.id);
      deps.log.info({ operatorId, subAccountId: id, returned: returned.toString() }, 'sub-account closed');
      return {
        id,
        status: 'closed' as const,
        returnedAmount: returned.toString(),
        transactionId: r?.postingId ?? null,
        operatorBalance: r?.toBalanceAfter ?? (await ledger.balanceOf(operatorId)).balance,
      };
    },

    async listKeys(operatorId: string, id: string) {
      await own(operatorId, id);
      return keys.list(id);
    },

    /** Another key for the sub-account, returned once; never broader than the operator's creating credential. */
    async createKey(
      operatorId: string,
      id: string,
      input: { name?: string | undefined; scopes?: string[] | undefined },
    ) {
      const sub = await own(operatorId, id);
      if (sub.status === 'closed') throw conflict('The sub-account is closed');
      const { key, secret } = await keys.create(id, {
        name: input.name ?? 'sub-account',
        mode: 'live',
        ...(input.scopes ? { scopes: input.scopes } : {}),
      });
      return { ...key, secret };
    },

    async revokeKey(operatorId: string, id: string, keyId: string) {
      await own(operatorId, id);
      return keys.revoke(id, keyId);
    },

    /** Where and how the sub-account's calls authenticate; the password is never shown again. */
    async sipCredentials(operatorId: string, id: string) {
      const sub = await own(operatorId, id);
      const sip = deps.config.sip;
      return {
        subAccountId: id,
        sipUsername: sub.sipUsername,
        realm: sip.primary_host,
        hosts: [sip.primary_host, ...(sip.secondary_host ? [sip.secondary_host] : [])],
        port: 5060,
        transports: ['udp', 'tcp'],
        authAlgorithm: 'MD5' as const,
        passwordSet: sub.sipUsername !== '',
        enabled: sub.status === 'active',
      };
    },

    /** The sub-account's records, newest first (cursor page), as the operator sees them. */
    async cdrs(
      operatorId: string,
      id: string,
      q: { cursor?: string | undefined; limit: number; from?: Date; to?: Date },
    ) {
      await own(operatorId, id);
      const rows = await deps.cdrs.listCdrs({
        viewerId: id,
        cursor: q.cursor,
        limit: q.limit + 1,
        from: q.from,
        to: q.to,
      });
      const shape = cdrCsv(id);
      return rows.map((r) => shape.row(r));
    },

    /** Spend, calls, messages and minutes per UTC day over `days`. */
    async usage(operatorId: string, id: string, days: number) {
      await own(operatorId, id);
      return { subAccountId: id, ...(await deps.cdrs.dailyUsage(id, clock.now(), days)) };
    },
  };
}

export type SubAccountLifecycle = ReturnType<typeof createSubAccountLifecycle>;
