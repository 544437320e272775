/**
 * Test SMS (spec "Route checks", POST /routes/check/sms): one fixed short message over exactly one
 * SMS listing, billed test credit first, refunded when its receipt says failed; the receipt
 * updates the check. Test messages never enter the message ledger, CDRs or quality figures.
 */
import { randomInt } from 'node:crypto';
import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Db, Sql } from '../../db/connection.js';
import { AppError, notFound, ruleError, validationError } from '../../http/errors.js';
import type { Ledger } from '../../ledger/index.js';
import { isDelivered, isFailed, networkFor, type ReceiptStat } from '../../messaging/index.js';
import { supplierIdKeys } from '../../messaging/receipt-text.js';
import type { SupplierReceipt } from '../../messaging/supplier-bind.js';
import type { Clock } from '../../platform/clock.js';
import { isE164 } from '../../platform/e164.js';
import { newId } from '../../platform/ids.js';
import { priceSms } from '../../rating/index.js';
import { platformFeeFrom, type RoutesService } from '../marketplace/listings/service.js';
import type { SmsService } from '../sms/service.js';
import { chargeTestCreditFirst, requireFunded, type CheckPayer } from './billing.js';
import { markupOn } from '../cdrs/index.js';
import { destinationRefusal } from './destinations.js';
import type { RouteChecksRepo } from './repo.js';

/** Spec "Limits", test SMS. */
export const SMS_PER_NUMBER_HOUR = 3;
export const SMS_NUMBERS_PER_DAY = 5;
export const SMS_MESSAGES_PER_DAY = 20;

const REF_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

/** The fixed text: the same words every time, the 4-character reference at the end. */
export const testText = (ref: string) => `Route test message from your exchange. Ref ${ref}`;

const errorCodeOf = (stat: ReceiptStat): 'EXPIRED' | 'REJECTED' | 'UNDELIVERABLE' =>
  stat === 'EXPIRED' ? 'EXPIRED' : stat === 'REJECTD' ? 'REJECTED' : 'UNDELIVERABLE';

export function createSmsCheck(deps: {
  sql: Sql;
  log: Logger;
  clock: Clock;
  config: Readonly<Config>;
  ledger: Ledger;
  routes: RoutesService;
  repo: RouteChecksRepo;
  sms: Pick<SmsService, 'sendTest' | 'onStoredTestReceipt'>;
  dnc: { isBlocked(accountId: string, e164: string): Promise<boolean> };
  visible(routeId: string, accountId: string): ReturnType<RoutesService['visibleRoute']>;
  payerOf(accountId: string, routeId: string): Promise<CheckPayer>;
  cleanName(name: string): string;
  track(p: Promise<unknown>): void;
}) {
  const { sql, log, clock, ledger, repo } = deps;
  const fee = platformFeeFrom(deps.config);

  async function limits(tx: Db, accountId: string, number: string) {
    const now = clock.now();
    const [row] = await tx<{ perNumber: string; numbersToday: string; messagesToday: string; texted: boolean }[]>`
      select
        (select count(*) from route_checks where mode = 'sms' and number = ${number} and not simulated
           and created_at > ${now}::timestamptz - interval '1 hour') as per_number,
        (select count(distinct number) from route_checks where mode = 'sms' and account_id = ${accountId}
           and not simulated and created_at > ${now}::timestamptz - interval '1 day') as numbers_today,
        (select count(*) from route_checks where mode = 'sms' and account_id = ${accountId}
           and not simulated and created_at > ${now}::timestamptz - interval '1 day') as messages_today,
        exists (select 1 from route_checks where mode = 'sms' and account_id = ${accountId} and number = ${number}
           and not simulated and created_at > ${now}::timestamptz - interval '1 day') as texted`;
    const over = (message: string, limit: string, retry: number) =>
      new AppError('RATE_LIMITED', message, { limit }, { 'retry-after': String(retry) });
    if (Number(row!.perNumber) >= SMS_PER_NUMBER_HOUR) {
      throw over('This number has received 3 test messages in the last hour', 'test_sms_number', 3600);
    }
    if (!row!.texted && Number(row!.numbersToday) >= SMS_NUMBERS_PER_DAY) {
      throw over('Your account has texted 5 different numbers with test messages today', 'test_sms_numbers', 86400);
    }
    if (Number(row!.messagesToday) >= SMS_MESSAGES_PER_DAY) {
      throw over('Your account has sent 20 test messages today', 'test_sms_messages', 86400);
    }
  }

  /** A final receipt said whether the route delivers: counted in its listing health (not on one's own). */
  async function countResult(db: Db, checkId: string, passed: boolean) {
    const [leg] = await db<{ routeId: string; ownRoute: boolean }[]>`
      select route_id, own_route from route_check_legs where check_id = ${checkId} and position = 0`;
    if (leg && !leg.ownRoute) await deps.routes.recordCheckResult(db, { routeId: leg.routeId, kind: 'sms', passed });
  }

  async function onReceipt(checkId: string, r: SupplierReceipt) {
    const at = clock.now();
    const base = { carrierStatus: r.stat, carrierError: r.err, receiptAt: at, routeReturnsReceipts: true };
    if (isDelivered(r.stat)) {
      await repo.updateLeg(sql, checkId, 0, {
        ...base,
        supplierKeys: null,
        result: 'delivered',
        message: 'The route delivered the test message (receipt confirmed).',
      });
      await countResult(sql, checkId, true);
      return;
    }
    if (!isFailed(r.stat)) {
      await repo.updateLeg(sql, checkId, 0, base);
      return;
    }
    await sql.begin(async (tx) => {
      const [leg] = await tx<{ ids: string[] | null }[]>`
        select charge_posting_ids as ids from route_check_legs where check_id = ${checkId} and position = 0 for update`;
      for (const [i, id] of (leg?.ids ?? []).entries()) {
        await ledger.refund(
          {
            postingKey: `routecheck:${checkId}:0:refund:${i}`,
            chargePostingId: id,
            reference: 'Route check SMS refund',
          },
          tx,
        );
      }
      await repo.updateLeg(tx, checkId, 0, {
        ...base,
        supplierKeys: null,
        result: 'refused',
        errorCode: errorCodeOf(r.stat),
        message: `The receipt said the message failed (${r.stat}); it was refunded.`,
        cost: '0.000000',
        paidFrom: null,
      });
      await repo.refreshTotal(tx, checkId);
      await countResult(tx, checkId, false);
    });
  }

  // A receipt the SMS plane could match to nothing in memory: a test message sent before a restart.
  deps.sms.onStoredTestReceipt(async (r, keys) => {
    const checkId = await repo.checkBySupplierKeys(keys, r.routeId ?? null);
    if (checkId === undefined) return false;
    await onReceipt(checkId, r);
    return true;
  });

  async function send(
    who: { accountId: string },
    checkId: string,
    o: {
      routeId: string;
      number: string;
      sender: string;
      ref: string;
      own: boolean;
      sellerId: string;
      total: Decimal;
      seller: Decimal;
    },
  ) {
    const delivery = (await deps.routes.smsDeliveryFor([o.routeId])).get(o.routeId) ?? null;
    // A receipt can come back before the charge below commits: it waits for it.
    let recorded!: () => void;
    const sendRecorded = new Promise<void>((r) => (recorded = r));
    const outcome = await deps.sms
      .sendTest(
        { routeId: o.routeId, delivery },
        { to: o.number, from: o.sender, text: testText(o.ref), reference: checkId },
        (r) =>
          void sendRecorded
            .then(() => onReceipt(checkId, r))
            .catch((err: unknown) => log.error({ err, checkId }, 'test SMS receipt not applied')),
      )
      .catch((err: unknown) => {
        recorded();
        throw err;
      });
    const now = clock.now();
    await sql
      .begin(async (tx) => {
        if (outcome.status === 'accepted') {
          const billed = o.own
            ? { cost: '0.000000', paidFrom: null, postingIds: [] }
            : await chargeTestCreditFirst({ ledger, log }, tx, {
                payer: await deps.payerOf(who.accountId, o.routeId),
                key: `routecheck:${checkId}:0`,
                total: o.total,
                seller: o.seller,
                sellerId: o.sellerId,
                reference: 'Route check SMS',
                checkId,
              });
          await repo.updateLeg(tx, checkId, 0, {
            result: 'accepted',
            message: 'The route took the test message; waiting for its receipt.',
            cost: billed.cost,
            paidFrom: billed.paidFrom,
            acceptedAt: now,
            completedAt: now,
            chargePostingIds: billed.postingIds,
            // Kept so that a receipt arriving after a restart (the in-memory match gone) still finds the check.
            supplierKeys: outcome.supplierMessageIds.flatMap((id) => supplierIdKeys(id)),
          });
        } else {
          const refused = outcome.status === 'refused';
          if (!o.own) await deps.routes.recordCheckResult(tx, { routeId: o.routeId, kind: 'sms', passed: false });
          await repo.updateLeg(tx, checkId, 0, {
            result: 'refused',
            message: refused
              ? 'The route refused the test message; nothing was charged.'
              : 'The route could not be reached; nothing was charged.',
            errorCode: refused ? 'SELLER_REJECTED' : 'NO_ENDPOINT',
            carrierError: refused
              ? `command_status 0x${outcome.commandStatus.toString(16).padStart(8, '0')}`
              : outcome.reason.slice(0, 200),
            completedAt: now,
          });
        }
        await repo.finishIfDone(tx, checkId, now);
      })
      .finally(() => recorded());
  }

  return {
    /** POST /routes/check/sms. */
    async start(
      who: { accountId: string; parentId: string | null; mode: 'live' | 'test' },
      body: { routeId: string; number: string },
    ) {
      const number = body.number
        .replace(/[\s\-().]/g, '')
        .replace(/^\+/, '')
        .replace(/^00/, '');
      if (!isE164(number))
        throw validationError([{ path: 'number', message: 'must be your own mobile number in E.164' }]);
      const refused = destinationRefusal(number);
      if (refused) throw ruleError(refused.replace('checked', 'texted'));
      if (await deps.dnc.isBlocked(who.accountId, number))
        throw ruleError('This number is on your Do-Not-Contact list: no test message is sent to it');
      const route = await deps.visible(body.routeId, who.accountId);
      if (route === undefined || route.status === 'deleted') throw notFound('Route');
      if (route.type !== 'sms')
        throw ruleError('Only an SMS listing takes a test message; check voice routes with POST /routes/check');
      if (route.status !== 'active') throw ruleError('The route is not active');
      await deps.routes.decks.ensureLoaded();
      const index = deps.routes.decks.registry.get(route.id);
      const network = networkFor(number);
      const price = index ? priceSms(index, number, network?.mccMnc ?? null, fee) : undefined;
      if (!price) throw ruleError('The route does not cover this number');
      const test = who.mode === 'test';
      const own = route.sellerId === who.accountId || (who.parentId !== null && route.sellerId === who.parentId);
      if (!test) {
        const markupPct = own ? new Decimal(0) : (await deps.payerOf(who.accountId, route.id)).markupPct;
        const cost = own ? new Decimal(0) : price.buyerRate.plus(markupOn(price.buyerRate, markupPct));
        await requireFunded(ledger, who.accountId, cost, 'the test message');
      }
      const ref = Array.from({ length: 4 }, () => REF_ALPHABET[randomInt(REF_ALPHABET.length)]).join('');
      const numericOnly = /numeric/i.test(route.cliType ?? '');
      const sender = numericOnly ? deps.config.route_checks.sms_numeric_sender : deps.config.route_checks.sms_sender;
      const id = newId();
      const now = clock.now();
      await sql.begin(async (tx) => {
        if (!test) {
          await repo.lockNumber(tx, number);
          await limits(tx, who.accountId, number);
        }
        await repo.insertCheck(
          tx,
          {
            id,
            accountId: who.accountId,
            mode: 'sms',
            status: test ? 'done' : 'running',
            simulated: test,
            number,
            createdAt: now,
          },
          [
            {
              position: 0,
              routeId: route.id,
              routeName: deps.cleanName(route.name),
              country: route.country,
              ownRoute: own,
              result: test ? 'delivered' : 'pending',
              message: test
                ? 'Simulated (test key): no message was sent and nothing was charged.'
                : 'Waiting to be sent.',
              checkType: test ? 'simulated' : 'sms',
              destination: price.network?.destination ?? price.country.destination,
              lineType: 'mobile',
              messageRef: ref,
              sender,
              ...(test ? { completedAt: now } : {}),
            },
          ],
        );
        if (test) await tx`update route_checks set completed_at = ${now} where id = ${id}`;
      });
      if (!test) {
        deps.track(
          send(who, id, {
            routeId: route.id,
            number,
            sender,
            ref,
            own,
            sellerId: route.sellerId,
            total: price.buyerRate,
            seller: price.sellerRate,
          }).catch(async (err: unknown) => {
            log.error({ err, checkId: id }, 'test SMS failed');
            await repo
              .updateLeg(sql, id, 0, {
                result: 'inconclusive',
                message: 'The check was interrupted.',
                completedAt: clock.now(),
              })
              .then(() => repo.finishIfDone(sql, id, clock.now()))
              .catch(() => undefined);
          }),
        );
      }
      return { checkId: id };
    },
  };
}
