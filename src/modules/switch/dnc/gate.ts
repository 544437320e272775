import type { Logger } from 'pino';
import type { Sql } from '../../../db/connection.js';
import { createNotifiedCache } from '../../../db/cache-listener.js';
import type { Clock } from '../../../platform/clock.js';
import { isE164Digits } from '../../../platform/e164.js';
import { newId } from '../../../platform/ids.js';
import { mask } from '../../../telephony/sip/b2bua/types.js';
import type { DncService } from '../../dnc/index.js';
import { digitsOf } from '../../dnc/service.js';
import { createSwitchDncRepo, type HonorSettings } from './repo.js';

/** NOTIFY channel of migration 276: a Switch account's honor settings changed (payload: its id). */
export const SWITCH_DNC_HONOR_CHANNEL = 'svc_switch_dnc_honor';

export type DncChannel = 'voice' | 'sms';

/** Whether a customer's traffic on `channel` is scrubbed: its override, else the account's setting. */
export const honored = (h: HonorSettings | null, customerId: string, channel: DncChannel): boolean =>
  h !== null && (h.overrides.get(customerId) ?? (channel === 'voice' ? h.calls : h.sms));

/**
 * The check at call admission and SMS send of a Switch customer (a sub-account): its Switch
 * account's honor settings come from a cache NOTIFY keeps correct (an account that never set them
 * costs a map look-up), and only a customer whose traffic is honored pays the one indexed look-up
 * of the dnc module's `match`. A refusal is recorded as a hit with the number masked.
 */
export function createDncGate(deps: {
  sql: Sql;
  log: Logger;
  clock: Clock;
  dnc: Pick<DncService, 'check' | 'blockedAmong'>;
}) {
  const repo = createSwitchDncRepo(deps.sql);
  const settings = createNotifiedCache(deps.sql, SWITCH_DNC_HONOR_CHANNEL, (id) => repo.honor(id));

  async function recordHit(
    q: { operatorId: string; customerId: string; channel: DncChannel },
    digits: string,
    kind: 'number' | 'prefix',
  ) {
    try {
      await repo.insertHit({
        id: newId(),
        accountId: q.operatorId,
        customerId: q.customerId,
        channel: q.channel,
        numberMasked: mask(digits),
        entryKind: kind,
        at: deps.clock.now(),
      });
    } catch (err) {
      // The refusal stands: a hit that could not be written is only logged.
      deps.log.error({ err, customerId: q.customerId, channel: q.channel }, 'switch dnc hit not recorded');
    }
    deps.log.info({ customerId: q.customerId, channel: q.channel, number: mask(digits) }, 'switch dnc refused');
  }

  return {
    settings,

    /**
     * True when `operatorId` honors its list for this customer's `channel` and `number` is listed
     * (the hit is then recorded). A number that is not E.164 is left to routing, which refuses it.
     */
    async refuses(q: {
      operatorId: string;
      customerId: string;
      number: string;
      channel: DncChannel;
    }): Promise<boolean> {
      const h = await settings.get(q.operatorId);
      if (!honored(h, q.customerId, q.channel)) return false;
      const digits = digitsOf(q.number);
      if (!isE164Digits(digits)) return false;
      const r = await deps.dnc.check(q.operatorId, digits);
      if (!r.match) return false;
      await recordHit(q, digits, r.match.kind);
      return true;
    },

    /**
     * The numbers of a customer's dialer campaign batch its operator's list refuses (as given), asked
     * by the dialer at dial time: one batch look-up when the customer is honored, none otherwise. Each
     * refused number is a hit (its match read to tell number from prefix; refused numbers are few and
     * are not asked again, the dialer marks them blocked).
     */
    async refusedAmong(q: {
      operatorId: string;
      customerId: string;
      numbers: readonly string[];
      channel: DncChannel;
    }): Promise<Set<string>> {
      const h = await settings.get(q.operatorId);
      if (!honored(h, q.customerId, q.channel)) return new Set();
      const valid = q.numbers.filter((n) => isE164Digits(digitsOf(n)));
      if (valid.length === 0) return new Set();
      const refused = await deps.dnc.blockedAmong(q.operatorId, valid);
      for (const digits of new Set([...refused].map(digitsOf))) {
        const r = await deps.dnc.check(q.operatorId, digits);
        await recordHit(q, digits, r.match?.kind ?? 'number');
      }
      return refused;
    },
  };
}

export type DncGate = ReturnType<typeof createDncGate>;
