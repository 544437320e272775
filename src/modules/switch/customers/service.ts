import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Sql } from '../../../db/connection.js';
import { notFound, validationError, type ErrorDetail } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import type { Mailer } from '../../../platform/mailer.js';
import { toMoney, type SheetRow } from '../../../rating/index.js';
import type { SellRateDecks } from './deck-cache.js';
import { classifyChange, effectiveFrom, type ChangeKind, type SellKind } from './deck.js';
import type { ChangeRow, CustomerRow, CustomersRepo, NoticeRow, SellRateInsert, SellRateRow } from './repo.js';

/** Changes written this long ago still show in GET .../notice/changes and go in a notice. */
const RECENT_DAYS = 30;
const DAY_MS = 86_400_000;

/** The increment a row without one bills in. */
// Inbound as the number's own minutes are billed (sip-trunks/number-calls.ts INBOUND_INCREMENT).
export const DEFAULT_INCREMENT: Record<SellKind, string> = { voice: '60/60', sms: '1/1', inbound: '60/60' };

const money = (s: string | null) => (s === null ? null : toMoney(new Decimal(s)));

export const presentCustomer = (r: CustomerRow) => ({
  id: r.id,
  subAccountId: r.id,
  label: r.label,
  externalRef: r.externalRef,
  status: r.status,
  balance: money(r.balance)!,
  creditLimit: money(r.creditLimit)!,
  dailySpendCap: money(r.dailySpendCap),
  maxConcurrentCalls: r.maxConcurrentCalls,
  markupPct: r.markupPct,
  currency: r.currency,
  sellRates: {
    voicePrefixes: r.voiceRates,
    smsPrefixes: r.smsRates,
    inboundPrefixes: r.inboundRates,
    scheduledChanges: r.scheduledChanges,
    nextChangeAt: r.nextChangeAt?.toISOString() ?? null,
    noticeDays: r.noticeDays,
  },
  createdAt: r.createdAt.toISOString(),
});

export const presentRate = (r: SellRateRow) => ({
  id: r.id,
  kind: r.kind,
  prefix: r.prefix,
  destination: r.destination,
  rate: money(r.rate)!,
  billingIncrement: r.billingIncrement,
  effectiveFrom: r.effectiveFrom.toISOString(),
  change: r.change,
  previousRate: money(r.previousRate),
  createdAt: r.createdAt.toISOString(),
});

export const presentChange = (r: ChangeRow, now: Date) => ({
  ...presentRate(r),
  status: (r.cancelledAt ? 'cancelled' : r.effectiveFrom > now ? 'pending' : 'effective') as
    'cancelled' | 'pending' | 'effective',
  cancelledAt: r.cancelledAt?.toISOString() ?? null,
  notifiedAt: r.notifiedAt?.toISOString() ?? null,
});

const presentNotice = (customerId: string, n: NoticeRow) => ({
  customerId,
  noticeDays: n.noticeDays,
  recipients: n.recipients,
  autoSend: n.autoSend,
  updatedAt: n.updatedAt?.toISOString() ?? null,
});

/** What one write of sell rates did, counted by kind of change. */
export interface WriteSummary {
  written: number;
  new: number;
  increases: number;
  decreases: number;
  unchanged: number;
  /** Pending versions of the written prefixes that this write replaced before they took effect. */
  cancelledScheduled: number;
  /** Increases written now that wait out the notice period. */
  scheduled: ReturnType<typeof presentRate>[];
}

/**
 * Switch customers (the operator's sub-accounts) and their sell-rate decks with notice
 * (docs/switch.md "Customers and sell rates").
 */
export function createCustomersService(deps: {
  sql: Sql;
  log: Logger;
  clock: Clock;
  repo: CustomersRepo;
  decks: Pick<SellRateDecks, 'changed'>;
  mailer: Pick<Mailer, 'send'>;
}) {
  const { sql, log, clock, repo, decks, mailer } = deps;

  async function own(operatorId: string, customerId: string): Promise<void> {
    if (!(await repo.owns(operatorId, customerId))) throw notFound('Customer');
  }

  /**
   * Applies the notice rule to `rows` of `kind` in one transaction: an increase on a prefix in
   * force waits `noticeDays`, a decrease or a new prefix applies now; a pending version of a
   * written prefix is cancelled (the newest write wins); a row identical to the one in force is skipped.
   */
  async function write(customerId: string, kind: SellKind, rows: readonly SheetRow[]) {
    const now = clock.now();
    const out = await sql.begin(async (tx) => {
      await repo.lockCustomer(tx, customerId);
      const noticeDays = await repo.noticeDays(tx, customerId);
      const prefixes = rows.map((r) => r.prefix);
      const current = new Map((await repo.current(tx, customerId, kind, prefixes, now)).map((r) => [r.prefix, r]));
      const cancelledScheduled = await repo.cancelScheduled(tx, customerId, kind, prefixes, now);
      const inserts: SellRateInsert[] = [];
      const counts: Record<ChangeKind, number> = { new: 0, increase: 0, decrease: 0, unchanged: 0 };
      for (const r of rows) {
        const was = current.get(r.prefix);
        const change = classifyChange(was?.rate ?? null, r.rate);
        counts[change]++;
        if (
          was &&
          change === 'unchanged' &&
          was.destination === r.destination &&
          was.billingIncrement === r.increment.text
        )
          continue;
        inserts.push({
          id: newId(),
          customer_id: customerId,
          kind,
          prefix: r.prefix,
          destination: r.destination,
          rate: r.rate,
          billing_increment: r.increment.text,
          effective_from: effectiveFrom(change, now, noticeDays),
          change,
          previous_rate: was?.rate ?? null,
          created_at: now,
        });
      }
      await repo.insertRates(tx, inserts);
      return { inserts, counts, cancelledScheduled };
    });
    decks.changed(customerId);
    const summary: WriteSummary = {
      written: out.inserts.length,
      new: out.counts.new,
      increases: out.counts.increase,
      decreases: out.counts.decrease,
      unchanged: out.counts.unchanged,
      cancelledScheduled: out.cancelledScheduled,
      scheduled: out.inserts
        .filter((r) => r.effective_from > now)
        .map((r) =>
          presentRate({
            id: r.id,
            kind: r.kind,
            prefix: r.prefix,
            destination: r.destination,
            rate: r.rate,
            billingIncrement: r.billing_increment,
            effectiveFrom: r.effective_from,
            change: r.change,
            previousRate: r.previous_rate,
            createdAt: r.created_at,
          }),
        ),
    };
    const changed = out.inserts.filter((r) => r.change !== 'unchanged').map((r) => r.id);
    const notice = await repo.notice(customerId);
    let autoSent: { sent: boolean; to: string[] } | null = null;
    if (notice.autoSend && notice.recipients.length > 0 && changed.length > 0) {
      // The rates are saved whatever the mail does: a failed notice is logged and can be sent again.
      autoSent = await sendNotice(customerId, notice, changed, 'auto').then(
        (s) => ({ sent: true, to: s.to }),
        (err: unknown) => {
          log.error({ err, customerId }, 'sell-rate notice auto-send failed');
          return { sent: false, to: notice.recipients };
        },
      );
    }
    return { ...summary, autoSent };
  }

  const currency = (rate: string, kind: SellKind) => `${toMoney(new Decimal(rate))}${kind === 'sms' ? '/msg' : '/min'}`;

  /** The notice e-mail: one line per change with old and new rate and when it applies. */
  function noticeText(changes: ChangeRow[], noticeDays: number): string {
    const lines = changes.map(
      (c) =>
        `${c.kind.toUpperCase()} ${c.prefix} ${c.destination || '-'}: ${c.change} ` +
        `${c.previousRate === null ? 'new' : currency(c.previousRate, c.kind)} -> ${currency(c.rate, c.kind)} ` +
        `(${c.billingIncrement}), effective ${c.effectiveFrom.toISOString()}`,
    );
    return [
      'Your sell rates are changing.',
      '',
      `Increases take effect ${noticeDays} day(s) after they are announced; decreases and new destinations apply at once.`,
      '',
      ...lines,
      '',
    ].join('\n');
  }

  async function sendNotice(customerId: string, notice: NoticeRow, ids: string[] | null, trigger: 'manual' | 'auto') {
    const now = clock.now();
    const since = new Date(now.getTime() - RECENT_DAYS * DAY_MS);
    const all = await repo.changes(customerId, now, since, ids ?? undefined);
    // A manual send lists what no notice listed yet; the auto-send, the write's own changes.
    const changes = all.filter((c) => c.cancelledAt === null && (ids !== null || c.notifiedAt === null));
    if (changes.length === 0)
      throw validationError([{ path: 'changes', message: 'no unsent sell-rate change to send' }]);
    const subject = `Sell-rate changes: ${changes.length} destination(s)`;
    const text = noticeText(changes, notice.noticeDays);
    const messageIds: string[] = [];
    for (const to of notice.recipients) messageIds.push((await mailer.send({ to, subject, text })).messageId);
    const sendId = newId();
    await repo.recordSend({
      id: sendId,
      customerId,
      sentAt: now,
      recipients: notice.recipients,
      changeIds: changes.map((c) => c.id),
      trigger,
      messageIds,
    });
    log.info(
      { customerId, changes: changes.length, recipients: notice.recipients.length, trigger },
      'sell-rate notice sent',
    );
    return {
      id: sendId,
      sent: true as const,
      to: notice.recipients,
      changes: changes.length,
      sentAt: now.toISOString(),
    };
  }

  return {
    async list(operatorId: string, q: { search?: string | undefined; limit: number; offset: number }) {
      const { rows, total } = await repo.list(operatorId, clock.now(), q);
      return { rows: rows.map(presentCustomer), total, limit: q.limit, offset: q.offset };
    },

    async get(operatorId: string, id: string) {
      const row = await repo.get(operatorId, id, clock.now());
      if (!row) throw notFound('Customer');
      return presentCustomer(row);
    },

    async rates(
      operatorId: string,
      id: string,
      q: { kind?: SellKind | undefined; search?: string | undefined; limit: number; offset: number },
    ) {
      await own(operatorId, id);
      const { rows, total } = await repo.activeRates(id, clock.now(), q);
      return { rows: rows.map(presentRate), total, limit: q.limit, offset: q.offset };
    },

    async scheduled(operatorId: string, id: string, kind: SellKind | undefined) {
      await own(operatorId, id);
      return { rows: (await repo.scheduledRates(id, clock.now(), kind)).map(presentRate) };
    },

    async write(operatorId: string, id: string, kind: SellKind, rows: readonly SheetRow[]) {
      await own(operatorId, id);
      return write(id, kind, rows);
    },

    async notice(operatorId: string, id: string) {
      await own(operatorId, id);
      return presentNotice(id, await repo.notice(id));
    },

    async putNotice(
      operatorId: string,
      id: string,
      p: { noticeDays?: number | undefined; recipients?: string[] | undefined; autoSend?: boolean | undefined },
    ) {
      await own(operatorId, id);
      return presentNotice(id, await repo.putNotice(id, p, clock.now()));
    },

    async changes(operatorId: string, id: string, days: number) {
      await own(operatorId, id);
      const now = clock.now();
      const rows = await repo.changes(id, now, new Date(now.getTime() - days * DAY_MS));
      return { customerId: id, at: now.toISOString(), rows: rows.map((r) => presentChange(r, now)) };
    },

    async send(operatorId: string, id: string) {
      await own(operatorId, id);
      const notice = await repo.notice(id);
      if (notice.recipients.length === 0)
        throw validationError([
          { path: 'recipients', message: 'no notice recipients are set (PUT .../sell-rates/notice)' },
        ]);
      return sendNotice(id, notice, null, 'manual');
    },
  };
}

export type CustomersService = ReturnType<typeof createCustomersService>;

/** Single rows given as JSON, checked as a sheet's rows are; every bad field named. */
export function badRows(errors: readonly { line: number; reason: string }[], base: string): ErrorDetail[] {
  return errors.map((e) => ({ path: `${base}${e.line}`, message: e.reason }));
}
